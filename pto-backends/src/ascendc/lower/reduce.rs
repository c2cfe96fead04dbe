//! Reductions: along the last axis as pto-isa's row reduction (folds, then one whole
//! reduce per row) or its group-reduce path, along the second last by rows; row sorts:
//! top-k and index reductions through the sort API.

use pto_op::DType;
use pto_op::kernel::ir::{Inst, ReduceOp, TileId};
use pto_op::kernel::row_reduce::{GROUP_PACKED_AT, RowReduce, StepKind};

use super::super::LowerError;
use super::super::plan::{self, Geom, Temp};
use super::cpp_expr::{c_type, scalar};
use super::state::Lowering;

impl Lowering<'_> {
    pub(super) fn reduce(
        &mut self,
        inst: &Inst,
        dst: TileId,
        op: ReduceOp,
        src: TileId,
        axis: usize,
    ) -> Result<(), LowerError> {
        self.declare(dst);
        let src_ty = self.ty(src).clone();
        let dst_ty = self.ty(dst).clone();
        if !matches!(src_ty.dtype, DType::F32 | DType::F16) || src_ty.dtype != dst_ty.dtype {
            return Err(self.unsupported(
                inst,
                format!("{} from {} to {}", op.name(), src_ty.dtype, dst_ty.dtype),
            ));
        }
        let rank = src_ty.shape.len();
        let sg = Geom::of(&src_ty);
        let dg = Geom::of(&dst_ty);
        let d = Lowering::name(dst);
        let s = Lowering::name(src);
        let len = src_ty.shape.get(axis).copied().unwrap_or(1);
        if rank == 0 || axis + 1 == rank {
            self.row_reduce(op, src_ty.dtype, &sg, &dg, &d, &s);
        } else if axis + 2 == rank {
            // Rows of each matrix combined element-wise.
            let api = match op {
                ReduceOp::Sum | ReduceOp::Mean => "Add",
                ReduceOp::Max => "Max",
                ReduceOp::Min => "Min",
            };
            let outer = sg.rows / len.max(1);
            self.code
                .open(format!("for (int64_t o = 0; o < {outer}; ++o)"));
            self.code.line(format!(
                "DataCopy({d}[o * {p}], {s}[o * {len} * {p}], {p});",
                p = sg.pitch
            ));
            self.code
                .open(format!("for (int64_t i = 1; i < {len}; ++i)"));
            self.code.line(format!(
                "{api}({d}[o * {p}], {d}[o * {p}], {s}[(o * {len} + i) * {p}], {p});",
                p = sg.pitch
            ));
            self.code.close();
            self.code.close();
        } else {
            return Err(self.unsupported(
                inst,
                format!("a reduction along axis {axis} of a rank-{rank} tile"),
            ));
        }
        if op == ReduceOp::Mean {
            self.code.line(format!(
                "Muls({d}, {d}, {}, {});",
                scalar(1.0 / len.max(1) as f64, dst_ty.dtype),
                dg.elems()
            ));
        }
        Ok(())
    }

    /// A reduction over the last axis as the instructions of
    /// [`pto_op::kernel::row_reduce::RowReduce`] (pto-isa's A2/A3 row reduction, which the
    /// simulator prices; [`plan::row_reduce`] decides the path as the simulator does): the
    /// rows' repeats folded element-wise (`Add` / `Max` / `Min` in the repeat form, one
    /// call over the rows per fold) into the work buffer, one repeat per row (`DataCopy` of
    /// the first repeat for rows of one to two repeats), then one `WholeReduceSum` /
    /// `WholeReduceMax` / `WholeReduceMin` of one repeat per row. Rows go in batches of at
    /// most 255 (the repeat limit), one row at a time when a row is more than 255 blocks
    /// long (the repeat stride's limit). The group path's shapes go through
    /// [`Lowering::group_reduce`].
    fn row_reduce(&mut self, op: ReduceOp, dtype: DType, sg: &Geom, dg: &Geom, d: &str, s: &str) {
        let ctype = c_type(dtype);
        let size = dtype.size_bytes();
        let e = 256 / size;
        let (rows, cols) = (sg.rows.max(1), sg.cols.max(1));
        let (plan, batch) = plan::row_reduce(&self.profile, op, dtype, rows, cols, sg.pitch);
        if plan.group {
            self.group_reduce(&plan, sg, dg, d, s);
            return;
        }
        let src_stride = sg.pitch * size / 32;
        let rep = |src_rep: usize| if batch == 1 { 8 } else { src_rep };
        let (fold, whole) = match op {
            ReduceOp::Sum | ReduceOp::Mean => ("Add", "WholeReduceSum"),
            ReduceOp::Max => ("Max", "WholeReduceMax"),
            ReduceOp::Min => ("Min", "WholeReduceMin"),
        };
        let order = match op {
            ReduceOp::Max | ReduceOp::Min => ", ReduceOrder::ORDER_ONLY_VALUE",
            _ => "",
        };
        self.code.line(format!(
            "// row {} of {rows} x {cols}: {} instruction(s), folds first (pto-isa TRowReduceOps)",
            op.name(),
            plan.steps.len()
        ));
        let work = format!("work{}", self.position);
        if plan.tmp_bytes > 0 {
            self.code.line(format!(
                "LocalTensor<{ctype}> {work} = reduceWorkBuf.Get<{ctype}>();"
            ));
        }
        let single = rows <= batch;
        let (n, r0) = if single {
            (rows.to_string(), "0".to_owned())
        } else {
            self.code
                .open(format!("for (int64_t r0 = 0; r0 < {rows}; r0 += {batch})"));
            self.code.line(format!(
                "const int32_t n = static_cast<int32_t>({rows} - r0 < {batch} ? {rows} - r0 : {batch});"
            ));
            ("n".to_owned(), "r0".to_owned())
        };
        let at = |pitch: usize, plus: usize| {
            if single {
                if plus == 0 {
                    String::new()
                } else {
                    format!("[{plus}]")
                }
            } else {
                format!("[{r0} * {pitch} + {plus}]")
            }
        };
        let src_at = |plus: usize| format!("{s}{}", at(sg.pitch, plus));
        let dst_at = format!("{d}{}", at(dg.pitch, 0));
        if cols <= e {
            self.code.line(format!(
                "{whole}<{ctype}>({dst_at}, {}, {cols}, {n}, {}, 1, {}{order});",
                src_at(0),
                dg.pitch,
                rep(src_stride)
            ));
        } else {
            let full = cols / e;
            let remain = cols % e;
            if full == 1 {
                self.code.line(format!(
                    "DataCopy({work}, {}, DataCopyParams{{static_cast<uint16_t>({n}), 8, {}, 0}});",
                    src_at(0),
                    src_stride - 8
                ));
            }
            for i in 1..full {
                let first = if i == 1 { src_at(0) } else { work.clone() };
                let first_rep = if i == 1 { rep(src_stride) } else { 8 };
                self.code.line(format!(
                    "{fold}({work}, {first}, {}, {e}, {n}, BinaryRepeatParams{{1, 1, 1, 8, {first_rep}, {}}});",
                    src_at(i * e),
                    rep(src_stride)
                ));
            }
            if remain > 0 {
                self.code.line(format!(
                    "{fold}({work}, {work}, {}, {remain}, {n}, BinaryRepeatParams{{1, 1, 1, 8, 8, {}}});",
                    src_at(full * e),
                    rep(src_stride)
                ));
            }
            self.code.line(format!(
                "{whole}<{ctype}>({dst_at}, {work}, {e}, {n}, {}, 1, 8{order});",
                dg.pitch
            ));
        }
        if !single {
            self.code.close();
        }
    }

    /// pto-isa's group-reduce path for its four f32 shapes (`plan.group`), step by step as
    /// `plan` lists them: `BlockReduceSum` / `BlockReduceMax` / `BlockReduceMin` (one value
    /// per 32-byte block, 8 per repeat, written packed) and element-wise folds of each
    /// row's two halves (block strides 2, repeat strides 16) in the work buffer, the last
    /// group reduce into the work buffer at [`GROUP_PACKED_AT`], then `Brcb` of those
    /// packed values into the result, each into its row's first 32-byte block (the
    /// `[rows, 1]` tile pads each row to whole blocks: that block holds the value
    /// throughout).
    fn group_reduce(&mut self, plan: &RowReduce, sg: &Geom, dg: &Geom, d: &str, s: &str) {
        let (fold, block) = match plan.op {
            ReduceOp::Sum | ReduceOp::Mean => ("Add", "BlockReduceSum"),
            ReduceOp::Max => ("Max", "BlockReduceMax"),
            ReduceOp::Min => ("Min", "BlockReduceMin"),
        };
        debug_assert_eq!(sg.pitch, sg.cols, "the group shapes' rows are whole blocks");
        self.code.line(format!(
            "// row {} of {} x {}: {} instruction(s), pto-isa's group-reduce path (TRowReduceOps), \
             its packed result broadcast to each row's first block",
            plan.op.name(),
            plan.rows,
            plan.cols,
            plan.steps.len()
        ));
        let work = format!("work{}", self.position);
        self.code.line(format!(
            "LocalTensor<float> {work} = reduceWorkBuf.Get<float>();"
        ));
        let packed = format!("{work}[{GROUP_PACKED_AT}]");
        let last_group = plan
            .steps
            .iter()
            .rposition(|st| st.kind == StepKind::GroupReduce);
        // After the first group reduce each row has 1024 / rows values in the work buffer,
        // a fold halves them (each row's two halves), a group reduce divides them by 8.
        for (i, step) in plan.steps.iter().enumerate() {
            let n = step.repeats;
            match step.kind {
                StepKind::GroupReduce => {
                    let (to, from) = if i == 0 {
                        (work.clone(), s.to_owned())
                    } else if Some(i) == last_group {
                        (packed.clone(), work.clone())
                    } else {
                        (work.clone(), work.clone())
                    };
                    self.code
                        .line(format!("{block}<float>({to}, {from}, {n}, 64, 1, 1, 8);"));
                }
                StepKind::Fold => self.code.line(format!(
                    "{fold}({work}, {work}, {work}[8], 64, {n}, BinaryRepeatParams{{1, 2, 2, 8, 16, 16}});"
                )),
                StepKind::Brcb => {
                    let blk = dg.pitch * 4 / 32;
                    self.code.line(format!(
                        "Brcb({d}, {packed}, {n}, BrcbRepeatParams({blk}, {}));",
                        8 * blk
                    ));
                }
                // The mean's scaling follows the reduction (`Lowering::reduce`).
                StepKind::Scale => {}
                StepKind::Reduce | StepKind::Copy => {
                    unreachable!("the group path has no {:?} step", step.kind)
                }
            }
        }
    }
}

impl Lowering<'_> {
    /// `argreduce` along the last axis: the first index of each row's sort
    /// ([`Lowering::sort_rows`] keeping one pair), of the row itself for `max` and of its
    /// negation for `min` (so equal elements still go to the lower index, and a NaN, which
    /// negates to a NaN, first). Along another axis it is refused.
    pub(super) fn arg_reduce(
        &mut self,
        inst: &Inst,
        dst: TileId,
        op: pto_op::kernel::ir::ArgOp,
        src: TileId,
        axis: usize,
    ) -> Result<(), LowerError> {
        if axis + 1 != self.ty(src).shape.len() {
            self.declare(dst);
            return Err(self.unsupported(
                inst,
                format!(
                    "an index reduction along axis {axis} of {}: the sort lowers the last axis",
                    self.ty(src)
                ),
            ));
        }
        let negate = op == pto_op::kernel::ir::ArgOp::Min;
        self.sort_rows(inst, src, 1, negate, None, dst)
    }

    /// `topk`: each row sorted whole with `Sort<T, true>` (asc-devkit
    /// `docs/api/context/Sort.md`: Atlas A2 / A3 and Kirin X90 / 9030), then the first `k`
    /// pairs split with `Extract`, the steps of [`pto_op::kernel::top_k`] the simulator
    /// prices. The row is copied into a buffer of whole blocks of 32 filled with the lowest
    /// value first (its last elements past a 32-byte boundary one at a time), the indices
    /// `0..` made once with `ArithProgression`.
    pub(super) fn top_k(
        &mut self,
        inst: &Inst,
        values: TileId,
        indices: TileId,
        src: TileId,
        k: usize,
    ) -> Result<(), LowerError> {
        self.sort_rows(inst, src, k, false, Some(values), indices)
    }

    /// Each row of `src` (negated when `negate`) sorted whole, descending, with its indices;
    /// the first `k` values into `values` (when given) and indices into `indices`, rows of
    /// `k` (the instruction's UB temporaries are a top-k's, [`Temp::SortScores`] ..).
    fn sort_rows(
        &mut self,
        inst: &Inst,
        src: TileId,
        k: usize,
        negate: bool,
        values: Option<TileId>,
        indices: TileId,
    ) -> Result<(), LowerError> {
        use pto_op::kernel::top_k::{PAIR_BYTES, SORT_BLOCK, padded_row};
        if let Some(values) = values {
            self.declare(values);
        }
        self.declare(indices);
        let ty = self.ty(src).clone();
        if !matches!(ty.dtype, DType::F16 | DType::F32) {
            return Err(self.unsupported(
                inst,
                format!("top-k of {}: the sort API takes half and float", ty.dtype),
            ));
        }
        if self.row_split(src) {
            return Err(self.unsupported(
                inst,
                "a top-k of a tile whose rows split between the vector cores",
            ));
        }
        let (sg, vg) = (Geom::of(&ty), Geom::of(self.ty(indices)));
        let n = sg.cols;
        let padded = padded_row(n);
        let kept = k.next_multiple_of(SORT_BLOCK);
        let size = ty.dtype.size_bytes();
        let per_block = 32 / size;
        let whole = n / per_block * per_block;
        let t = c_type(ty.dtype);
        // The padding sorts last: the lowest value, or the highest before a negation.
        let pad = if negate {
            f64::INFINITY
        } else {
            f64::NEG_INFINITY
        };
        let lowest = if ty.dtype == DType::F16 {
            format!("half({})", scalar(pad, DType::F32))
        } else {
            scalar(pad, ty.dtype)
        };
        let like = |elems: usize| Geom {
            rows: 1,
            cols: elems,
            pitch: elems,
            bytes: 0,
        };
        let pair_elems = padded * PAIR_BYTES / size;
        let scores = self.temp(inst, Temp::SortScores, ty.dtype, &like(padded))?;
        let index = self.temp(inst, Temp::SortIndex, DType::U32, &like(padded))?;
        let pairs = self.temp(inst, Temp::SortPairs, ty.dtype, &like(pair_elems))?;
        let tmp = self.temp(inst, Temp::SortTmp, ty.dtype, &like(pair_elems))?;
        let out_values = self.temp(inst, Temp::SortValues, ty.dtype, &like(kept))?;
        let out_indices = self.temp(inst, Temp::SortIndices, DType::U32, &like(kept))?;
        let at = self.position;
        let (s, i) = (Lowering::name(src), Lowering::name(indices));
        let [sc, ix, pr, tp, ov, oi] = [
            "sortScores",
            "sortIndex",
            "sortPairs",
            "sortTmp",
            "sortValues",
            "sortIndices",
        ]
        .map(|name| format!("{name}{at}"));
        self.code.open("");
        for (name, ctype, expr) in [
            (&sc, t, scores),
            (&ix, "uint32_t", index),
            (&pr, t, pairs),
            (&tp, t, tmp),
            (&ov, t, out_values),
            (&oi, "uint32_t", out_indices),
        ] {
            self.code
                .line(format!("LocalTensor<{ctype}> {name} = {expr};"));
        }
        self.code.line(format!(
            "ArithProgression({ix}.ReinterpretCast<int32_t>(), static_cast<int32_t>(0), \
             static_cast<int32_t>(1), {padded});"
        ));
        if whole < n {
            // The row's tail is copied by the scalar unit: it reads the source, which a
            // copy in (MTE2) or a vector instruction wrote.
            self.code.set_wait("MTE2_S");
        }
        self.code.open_rows(sg.rows);
        self.code
            .line(format!("Duplicate({sc}, {lowest}, {padded});"));
        if whole > 0 {
            self.code
                .line(format!("DataCopy({sc}, {s}[r * {}], {whole});", sg.pitch));
        }
        if whole < n {
            // The scalar writes go after the vector ones above, and the sort below reads
            // them: V_S before, S_V after.
            self.code.set_wait("V_S");
            self.code
                .open(format!("for (int64_t e = {whole}; e < {n}; ++e)"));
            self.code.line(format!(
                "{sc}.SetValue(e, {s}.GetValue(r * {} + e));",
                sg.pitch
            ));
            self.code.close();
            self.code.set_wait("S_V");
        }
        if negate {
            let minus_one = if ty.dtype == DType::F16 {
                format!("half({})", scalar(-1.0, DType::F32))
            } else {
                scalar(-1.0, ty.dtype)
            };
            self.code
                .line(format!("Muls({sc}, {sc}, {minus_one}, {padded});"));
        }
        self.code.line(format!(
            "Sort<{t}, true>({pr}, {sc}, {ix}, {tp}, {});",
            padded / SORT_BLOCK
        ));
        self.code
            .line(format!("Extract({ov}, {oi}, {pr}, {});", kept / SORT_BLOCK));
        if let Some(values) = values {
            let v = Lowering::name(values);
            self.code
                .line(format!("DataCopy({v}[r * {p}], {ov}, {p});", p = vg.pitch));
        }
        self.code.line(format!(
            "DataCopy({i}.ReinterpretCast<uint32_t>()[r * {p}], {oi}, {p});",
            p = vg.pitch
        ));
        self.code.close();
        self.code.close();
        Ok(())
    }
}

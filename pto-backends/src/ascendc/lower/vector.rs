//! Element-wise vector instructions: iota, unary (with the compositions the API lacks),
//! binary (tiles, scalars, broadcast rows and row statistics, the math API's `Power` and
//! `Fmod`), compare, select and cast.

use pto_op::DType;
use pto_op::kernel::ir::{
    BinaryOp, CmpOp, Index, Inst, MemLevel, Operand, TileId, TileType, UnaryOp,
};

use super::super::LowerError;
use super::super::plan::{self, Geom, Storage, Temp};
use super::cpp_expr::{c_type, index, scalar};
use super::movement::copy_elems;
use super::state::Lowering;

/// A tile operand after broadcasting: the C++ expression of a full-shape tile, or a scalar.
enum Arg {
    Tile(String),
    Scalar(f64),
}

impl Lowering<'_> {
    pub(super) fn iota(
        &mut self,
        inst: &Inst,
        dst: TileId,
        axis: usize,
        start: &Index,
    ) -> Result<(), LowerError> {
        self.declare(dst);
        let ty = self.ty(dst).clone();
        if !matches!(ty.dtype, DType::F32 | DType::F16 | DType::I32) {
            return Err(self.unsupported(inst, format!("iota of {}", ty.dtype)));
        }
        let g = Geom::of(&ty);
        let name = Lowering::name(dst);
        let ctype = c_type(ty.dtype);
        let rank = ty.shape.len();
        let start = if self.row_split(dst) && axis + 2 == rank {
            // Counting along the rows: this AIV's rows start at aivRow.
            format!("({} + aivRow)", index(start))
        } else {
            index(start)
        };
        if rank == 0 || axis + 1 == rank {
            self.code.for_rows(
                g.rows,
                format!(
                    "ArithProgression<{ctype}>({name}[r * {}], PTO_INDEX_AS({ctype}, {start}), \
                     static_cast<{ctype}>(1), {});",
                    g.pitch, g.cols
                ),
            );
        } else {
            // Rows are the leading dims flattened: the coordinate along `axis` of row r.
            let inner: usize = ty.shape[axis + 1..rank - 1].iter().product();
            let len = ty.shape[axis];
            let line = format!(
                "Duplicate({name}[r * {}], PTO_INDEX_AS({ctype}, {start} + (r / {inner}) % {len}), {});",
                g.pitch, g.cols
            );
            self.code.for_rows(g.rows, line);
        }
        Ok(())
    }

    pub(super) fn unary(
        &mut self,
        inst: &Inst,
        dst: TileId,
        op: UnaryOp,
        src: TileId,
    ) -> Result<(), LowerError> {
        self.declare(dst);
        let ty = self.ty(dst).clone();
        if !matches!(ty.dtype, DType::F32 | DType::F16 | DType::BF16) {
            return Err(self.unsupported(inst, format!("{} of {}", op.name(), ty.dtype)));
        }
        let n = Geom::of(&ty).elems();
        if plan::unary_takes_tmp(op) && ty.dtype == DType::BF16 {
            return Err(self.math_dtype(inst, op.name(), ty.dtype));
        }
        let d = Lowering::name(dst);
        let x = Lowering::name(src);
        let s = |v: f64| scalar(v, ty.dtype);
        let tmp = plan::unary_takes_tmp(op)
            .then(|| self.tmp_buffer(inst, n))
            .transpose()?;
        let math = |api: &str| {
            let tmp = tmp.as_deref().unwrap_or_default();
            vec![format!("{api}({d}, {x}, {tmp}, {n});")]
        };
        // 1 + exp(-x) into d, the denominator of sigmoid and silu.
        let one_plus_exp_neg = || {
            [
                format!("Muls({d}, {x}, {}, {n});", s(-1.0)),
                format!("Exp({d}, {d}, {n});"),
                format!("Adds({d}, {d}, {}, {n});", s(1.0)),
            ]
        };
        let lines: Vec<String> = match op {
            UnaryOp::Neg => vec![format!("Muls({d}, {x}, {}, {n});", s(-1.0))],
            UnaryOp::Abs => vec![format!("Abs({d}, {x}, {n});")],
            UnaryOp::Exp => vec![format!("Exp({d}, {x}, {n});")],
            UnaryOp::Ln => vec![format!("Ln({d}, {x}, {n});")],
            UnaryOp::Sqrt => vec![format!("Sqrt({d}, {x}, {n});")],
            UnaryOp::Rsqrt => vec![format!("Rsqrt({d}, {x}, {n});")],
            UnaryOp::Recip => vec![format!("Reciprocal({d}, {x}, {n});")],
            UnaryOp::Square => vec![format!("Mul({d}, {x}, {x}, {n});")],
            UnaryOp::Relu => vec![format!("Relu({d}, {x}, {n});")],
            UnaryOp::Tanh => tanh_lines(&d, &x, n, &s),
            UnaryOp::Sigmoid => {
                let mut lines = vec!["// sigmoid(x) = 1 / (1 + exp(-x))".to_owned()];
                lines.extend(one_plus_exp_neg());
                lines.push(format!("Reciprocal({d}, {d}, {n});"));
                lines
            }
            UnaryOp::Silu => {
                let mut lines = vec!["// silu(x) = x / (1 + exp(-x))".to_owned()];
                lines.extend(one_plus_exp_neg());
                lines.push(format!("Div({d}, {x}, {d}, {n});"));
                lines
            }
            UnaryOp::Sin => math("Sin"),
            UnaryOp::Cos => math("Cos"),
            UnaryOp::Floor => math("Floor"),
            UnaryOp::Ceil => math("Ceil"),
            UnaryOp::Erf => math("Erf"),
            UnaryOp::Exp2 => vec![
                "// exp2(x) = exp(x ln 2)".to_owned(),
                format!("Muls({d}, {x}, {}, {n});", s(std::f64::consts::LN_2)),
                format!("Exp({d}, {d}, {n});"),
            ],
            UnaryOp::Log2 => vec![
                "// log2(x) = ln(x) / ln 2".to_owned(),
                format!("Ln({d}, {x}, {n});"),
                format!("Muls({d}, {d}, {}, {n});", s(std::f64::consts::LOG2_E)),
            ],
            UnaryOp::Gelu => {
                let mut lines = vec![
                    "// gelu(x) = 0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3)))".to_owned(),
                    format!("Mul({d}, {x}, {x}, {n});"),
                    format!("Mul({d}, {d}, {x}, {n});"),
                    format!("Muls({d}, {d}, {}, {n});", s(0.044_715)),
                    format!("Add({d}, {d}, {x}, {n});"),
                    format!("Muls({d}, {d}, {}, {n});", s(0.797_884_6)),
                ];
                lines.extend(tanh_lines(&d, &d, n, &s));
                lines.extend([
                    format!("Adds({d}, {d}, {}, {n});", s(1.0)),
                    format!("Mul({d}, {d}, {x}, {n});"),
                    format!("Muls({d}, {d}, {}, {n});", s(0.5)),
                ]);
                lines
            }
        };
        for line in lines {
            self.code.line(line);
        }
        Ok(())
    }

    /// `operand` as a full tile of `dst`'s shape: a broadcast into temporary `temp` when
    /// its shape differs, the instruction's broadcast number `broadcasts` (counted up)
    /// naming its tile; scalars stay scalars.
    fn full_arg(
        &mut self,
        inst: &Inst,
        operand: &Operand,
        dst_shape: &[usize],
        temp: Temp,
        broadcasts: &mut usize,
    ) -> Result<Arg, LowerError> {
        let t = match operand {
            Operand::Scalar(v) => return Ok(Arg::Scalar(*v)),
            Operand::Tile(t) => *t,
        };
        let ty = self.ty(t).clone();
        if plan::same_layout(&ty.shape, dst_shape) {
            return Ok(Arg::Tile(Lowering::name(t)));
        }
        let full_ty = TileType {
            shape: dst_shape.to_vec(),
            dtype: ty.dtype,
            level: MemLevel::Ub,
        };
        let full = Geom::of(&full_ty);
        let src = Geom::of(&ty);
        if ty.dtype == DType::Bool || ty.shape.len() > dst_shape.len() {
            return Err(self.unsupported(inst, format!("broadcast of {ty} to {dst_shape:?}")));
        }
        // Right-aligned: the operand's leading product and last dim against the full tile's.
        let lead: usize = ty.shape.split_last().map_or(1, |(_, l)| l.iter().product());
        let cols = ty.shape.last().copied().unwrap_or(1);
        let expr = self.temp(inst, temp, ty.dtype, &full)?;
        let name = format!("bcast{}_{}", self.position, *broadcasts);
        *broadcasts += 1;
        let ctype = c_type(ty.dtype);
        let src_name = Lowering::name(t);
        self.code
            .line(format!("LocalTensor<{ctype}> {name} = {expr};"));
        if lead == full.rows && cols == 1 {
            // A statistic per row: each row filled with its value.
            self.code.set_wait("V_S");
            self.code.for_rows(
                full.rows,
                format!(
                    "Duplicate({name}[r * {}], {src_name}.GetValue(r * {}), {});",
                    full.pitch, src.pitch, full.cols
                ),
            );
        } else if lead == 1 && cols == full.cols {
            // One row for every row.
            self.code.for_rows(
                full.rows,
                format!(
                    "DataCopy({name}[r * {}], {src_name}, {});",
                    full.pitch, full.pitch
                ),
            );
        } else if lead == 1 && cols == 1 {
            self.code.set_wait("V_S");
            self.code.line(format!(
                "Duplicate({name}, {src_name}.GetValue(0), {});",
                full.elems()
            ));
        } else {
            return Err(self.unsupported(
                inst,
                format!("broadcast of {ty} to {dst_shape:?} (only rows, columns or scalars)"),
            ));
        }
        Ok(Arg::Tile(name))
    }

    /// The first and second operands of an instruction as full tiles of `dst_shape`
    /// ([`Lowering::full_arg`]).
    fn full_args(
        &mut self,
        inst: &Inst,
        first: &Operand,
        second: &Operand,
        dst_shape: &[usize],
    ) -> Result<(Arg, Arg), LowerError> {
        let mut broadcasts = 0;
        let a = self.full_arg(inst, first, dst_shape, Temp::BroadcastLhs, &mut broadcasts)?;
        let b = self.full_arg(inst, second, dst_shape, Temp::BroadcastRhs, &mut broadcasts)?;
        Ok((a, b))
    }

    pub(super) fn binary(
        &mut self,
        inst: &Inst,
        dst: TileId,
        op: BinaryOp,
        lhs: &Operand,
        rhs: &Operand,
    ) -> Result<(), LowerError> {
        self.declare(dst);
        let ty = self.ty(dst).clone();
        let math = plan::binary_is_math(op);
        if math && !matches!(ty.dtype, DType::F32 | DType::F16) {
            // Integers would go through f32, exact only below 2^24: refused rather than
            // rounded.
            return Err(self.math_dtype(inst, op.name(), ty.dtype));
        }
        let g = Geom::of(&ty);
        let n = g.elems();
        let d = Lowering::name(dst);
        if !math
            && let Some((stat_left, stat, full)) = plan::row_statistic(self.program, dst, lhs, rhs)
        {
            return self.row_binary(inst, op, dst, stat_left, stat, full);
        }
        let (a, b) = self.full_args(inst, lhs, rhs, &ty.shape)?;
        if math {
            return self.binary_math(inst, op, &ty, &d, a, b);
        }
        let s = |v: f64| scalar(v, ty.dtype);
        let tensor_op = match op {
            BinaryOp::Add => "Add",
            BinaryOp::Sub => "Sub",
            BinaryOp::Mul => "Mul",
            BinaryOp::Div => "Div",
            BinaryOp::Max => "Max",
            BinaryOp::Min => "Min",
            BinaryOp::Pow | BinaryOp::Rem | BinaryOp::Mod => {
                unreachable!("{} lowers in `binary_math`", op.name())
            }
        };
        let scalar_op = match op {
            BinaryOp::Add => Some("Adds"),
            BinaryOp::Mul => Some("Muls"),
            BinaryOp::Max => Some("Maxs"),
            BinaryOp::Min => Some("Mins"),
            BinaryOp::Sub | BinaryOp::Div | BinaryOp::Pow | BinaryOp::Rem | BinaryOp::Mod => None,
        };
        let scalar_left = matches!(a, Arg::Scalar(_));
        match (a, b) {
            (Arg::Tile(a), Arg::Tile(b)) => {
                self.code.line(format!("{tensor_op}({d}, {a}, {b}, {n});"));
            }
            (Arg::Tile(t), Arg::Scalar(v)) | (Arg::Scalar(v), Arg::Tile(t)) => {
                match (scalar_op, op) {
                    (Some(sop), _) => self.code.line(format!("{sop}({d}, {t}, {}, {n});", s(v))),
                    // Integers: `a - v` and `v - b` exactly (`a + -v` and `-b + v` would
                    // overflow for the lowest v or b); a division by a scalar or of one.
                    (None, BinaryOp::Sub) if ty.dtype.is_float() => {
                        if scalar_left {
                            self.code.line(format!("Muls({d}, {t}, {}, {n});", s(-1.0)));
                            self.code.line(format!("Adds({d}, {d}, {}, {n});", s(v)));
                        } else {
                            self.code.line(format!("Adds({d}, {t}, {}, {n});", s(-v)));
                        }
                    }
                    _ => {
                        let temp = if scalar_left {
                            Temp::ScalarLhs
                        } else {
                            Temp::ScalarRhs
                        };
                        let tmp = self.temp(inst, temp, ty.dtype, &g)?;
                        self.code.line(format!("Duplicate({tmp}, {}, {n});", s(v)));
                        let (x, y) = if scalar_left { (&tmp, &t) } else { (&t, &tmp) };
                        self.code.line(format!("{tensor_op}({d}, {x}, {y}, {n});"));
                    }
                }
            }
            (Arg::Scalar(_), Arg::Scalar(_)) => {
                return Err(self.unsupported(inst, "both operands are scalars"));
            }
        }
        Ok(())
    }

    /// `pow`, `rem` and `mod` through the Ascend C math API (`Power`, `Fmod`), float tiles
    /// only; a scalar operand is duplicated into a tile. `mod` is `Fmod` with the sign of
    /// a nonzero remainder fixed to that of the divisor: where `r` and `b` differ in sign,
    /// `r + b`.
    /// `dst` (`d`, of type `ty`) is declared and its operands `a` and `b` are broadcast.
    fn binary_math(
        &mut self,
        inst: &Inst,
        op: BinaryOp,
        ty: &TileType,
        d: &str,
        a: Arg,
        b: Arg,
    ) -> Result<(), LowerError> {
        let g = Geom::of(ty);
        let n = g.elems();
        if matches!((&a, &b), (Arg::Scalar(_), Arg::Scalar(_))) {
            return Err(self.unsupported(inst, "both operands are scalars"));
        }
        let a = self.tile_arg(inst, a, Temp::ScalarLhs, ty.dtype, &g)?;
        let b = self.tile_arg(inst, b, Temp::ScalarRhs, ty.dtype, &g)?;
        let tmp = self.tmp_buffer(inst, n)?;
        let api = if op == BinaryOp::Pow { "Power" } else { "Fmod" };
        self.code.line(format!("{api}({d}, {a}, {b}, {tmp}, {n});"));
        if op == BinaryOp::Mod {
            let ctype = c_type(ty.dtype);
            let fixed = format!("mod{}", self.position);
            let mask = format!("modMask{}", self.position);
            // The bit mask, addressed by bytes like a declared bool tile.
            let bits = Geom::of(&TileType {
                shape: ty.shape.clone(),
                dtype: DType::Bool,
                level: MemLevel::Ub,
            })
            .bytes as usize;
            let bytes = Geom {
                rows: 1,
                cols: bits,
                pitch: bits,
                bytes: bits as u64,
            };
            let fixed_expr = self.temp(inst, Temp::ModFixed, ty.dtype, &g)?;
            let mask_expr = self.temp(inst, Temp::ModMask, DType::Bool, &bytes)?;
            let zero = scalar(0.0, ty.dtype);
            for line in [
                "// mod: the remainder with the sign of the divisor, r + b where they differ"
                    .to_owned(),
                format!("LocalTensor<{ctype}> {fixed} = {fixed_expr};"),
                format!("LocalTensor<uint8_t> {mask} = {mask_expr};"),
                format!("CompareScalar({mask}, {b}, {zero}, CMPMODE::LT, {n});"),
                format!("Muls({fixed}, {d}, {}, {n});", scalar(-1.0, ty.dtype)),
                format!(
                    "Select({fixed}, {mask}, {fixed}, {d}, SELMODE::VSEL_TENSOR_TENSOR_MODE, {n});"
                ),
                format!("CompareScalar({mask}, {fixed}, {zero}, CMPMODE::LT, {n});"),
                format!("Add({fixed}, {d}, {b}, {n});"),
                format!(
                    "Select({d}, {mask}, {fixed}, {d}, SELMODE::VSEL_TENSOR_TENSOR_MODE, {n});"
                ),
            ] {
                self.code.line(line);
            }
        }
        Ok(())
    }

    /// The error of a math-library function `name` of `dtype`, which it does not take.
    fn math_dtype(&self, inst: &Inst, name: &str, dtype: DType) -> LowerError {
        self.unsupported(
            inst,
            format!("{name} of {dtype} (the Ascend C math API takes half and float)"),
        )
    }

    /// `arg` as a tile: a scalar duplicated into temporary `temp`, a tile of `dtype` and
    /// layout `g`.
    fn tile_arg(
        &mut self,
        inst: &Inst,
        arg: Arg,
        temp: Temp,
        dtype: DType,
        g: &Geom,
    ) -> Result<String, LowerError> {
        match arg {
            Arg::Tile(t) => Ok(t),
            Arg::Scalar(v) => {
                let t = self.temp(inst, temp, dtype, g)?;
                self.code.line(format!(
                    "Duplicate({t}, {}, {});",
                    scalar(v, dtype),
                    g.elems()
                ));
                Ok(t)
            }
        }
    }

    /// The instruction's `sharedTmpBuffer` of a math function over `elems` elements
    /// ([`plan::math_tmp_bytes`]).
    fn tmp_buffer(&self, inst: &Inst, elems: usize) -> Result<String, LowerError> {
        let bytes = plan::math_tmp_bytes(elems) as usize;
        let like = Geom {
            rows: 1,
            cols: bytes,
            pitch: bytes,
            bytes: bytes as u64,
        };
        self.temp(inst, Temp::MathScratch, DType::U8, &like)
    }

    /// `dst = full op stat` (or `stat op full`) row by row, the statistic of each row read
    /// as a scalar.
    fn row_binary(
        &mut self,
        inst: &Inst,
        op: BinaryOp,
        dst: TileId,
        stat_left: bool,
        stat: TileId,
        full: TileId,
    ) -> Result<(), LowerError> {
        let ty = self.ty(dst).clone();
        let g = Geom::of(&ty);
        let sg = Geom::of(self.ty(stat));
        let ctype = c_type(ty.dtype);
        let (d, a, st) = (
            Lowering::name(dst),
            Lowering::name(full),
            Lowering::name(stat),
        );
        let (p, cols) = (g.pitch, g.cols);
        // Integers subtract exactly as tiles (`a + -s` goes through float, or overflows).
        let integer_sub = op == BinaryOp::Sub && !ty.dtype.is_float();
        let one_row = Geom {
            rows: 1,
            cols: g.pitch,
            pitch: g.pitch,
            bytes: 0,
        };
        let row = (op == BinaryOp::Div || integer_sub)
            .then(|| self.temp(inst, Temp::StatRow, ty.dtype, &one_row))
            .transpose()?;
        self.code.set_wait("V_S");
        if let Some(row) = &row {
            self.code
                .line(format!("LocalTensor<{ctype}> statRow = {row};"));
        }
        self.code.open_rows(g.rows);
        self.code.line(format!(
            "const {ctype} s = {st}.GetValue(r * {});",
            sg.pitch
        ));
        let lines: Vec<String> = match (op, stat_left) {
            (BinaryOp::Add, _) => vec![format!("Adds({d}[r * {p}], {a}[r * {p}], s, {cols});")],
            (BinaryOp::Mul, _) => vec![format!("Muls({d}[r * {p}], {a}[r * {p}], s, {cols});")],
            (BinaryOp::Max, _) => vec![format!("Maxs({d}[r * {p}], {a}[r * {p}], s, {cols});")],
            (BinaryOp::Min, _) => vec![format!("Mins({d}[r * {p}], {a}[r * {p}], s, {cols});")],
            (BinaryOp::Sub, false) if integer_sub => vec![
                format!("Duplicate(statRow, s, {cols});"),
                format!("Sub({d}[r * {p}], {a}[r * {p}], statRow, {cols});"),
            ],
            (BinaryOp::Sub, true) if integer_sub => vec![
                format!("Duplicate(statRow, s, {cols});"),
                format!("Sub({d}[r * {p}], statRow, {a}[r * {p}], {cols});"),
            ],
            (BinaryOp::Sub, false) => vec![format!(
                "Adds({d}[r * {p}], {a}[r * {p}], static_cast<{ctype}>(-static_cast<float>(s)), {cols});"
            )],
            (BinaryOp::Sub, true) => vec![
                format!(
                    "Muls({d}[r * {p}], {a}[r * {p}], {}, {cols});",
                    scalar(-1.0, ty.dtype)
                ),
                format!("Adds({d}[r * {p}], {d}[r * {p}], s, {cols});"),
            ],
            (BinaryOp::Div, false) => vec![
                format!("Duplicate(statRow, s, {cols});"),
                format!("Div({d}[r * {p}], {a}[r * {p}], statRow, {cols});"),
            ],
            (BinaryOp::Div, true) => vec![
                format!("Duplicate(statRow, s, {cols});"),
                format!("Div({d}[r * {p}], statRow, {a}[r * {p}], {cols});"),
            ],
            (BinaryOp::Pow | BinaryOp::Rem | BinaryOp::Mod, _) => {
                unreachable!("`binary` lowers {} in `binary_math`", op.name())
            }
        };
        for line in lines {
            self.code.line(line);
        }
        self.code.close();
        Ok(())
    }

    pub(super) fn compare(
        &mut self,
        inst: &Inst,
        dst: TileId,
        op: CmpOp,
        lhs: &Operand,
        rhs: &Operand,
    ) -> Result<(), LowerError> {
        self.declare(dst);
        let shape = self.ty(dst).shape.clone();
        let dtype = [lhs, rhs]
            .into_iter()
            .find_map(|o| match o {
                Operand::Tile(t) => Some(self.ty(*t).dtype),
                Operand::Scalar(_) => None,
            })
            .ok_or_else(|| self.unsupported(inst, "both operands are scalars"))?;
        let n = Geom::of(&TileType {
            shape: shape.clone(),
            dtype,
            level: MemLevel::Ub,
        })
        .elems();
        let (a, b) = self.full_args(inst, lhs, rhs, &shape)?;
        let d = Lowering::name(dst);
        let mode = |op: CmpOp| match op {
            CmpOp::Eq => "CMPMODE::EQ",
            CmpOp::Ne => "CMPMODE::NE",
            CmpOp::Lt => "CMPMODE::LT",
            CmpOp::Le => "CMPMODE::LE",
            CmpOp::Gt => "CMPMODE::GT",
            CmpOp::Ge => "CMPMODE::GE",
        };
        let flipped = |op: CmpOp| match op {
            CmpOp::Lt => CmpOp::Gt,
            CmpOp::Le => CmpOp::Ge,
            CmpOp::Gt => CmpOp::Lt,
            CmpOp::Ge => CmpOp::Le,
            other => other,
        };
        match (a, b) {
            (Arg::Tile(a), Arg::Tile(b)) => self
                .code
                .line(format!("Compare({d}, {a}, {b}, {}, {n});", mode(op))),
            (Arg::Tile(a), Arg::Scalar(v)) => self.code.line(format!(
                "CompareScalar({d}, {a}, {}, {}, {n});",
                scalar(v, dtype),
                mode(op)
            )),
            (Arg::Scalar(v), Arg::Tile(b)) => self.code.line(format!(
                "CompareScalar({d}, {b}, {}, {}, {n});",
                scalar(v, dtype),
                mode(flipped(op))
            )),
            (Arg::Scalar(_), Arg::Scalar(_)) => {
                return Err(self.unsupported(inst, "both operands are scalars"));
            }
        }
        Ok(())
    }

    pub(super) fn select(
        &mut self,
        inst: &Inst,
        dst: TileId,
        cond: TileId,
        on_true: &Operand,
        on_false: &Operand,
    ) -> Result<(), LowerError> {
        self.declare(dst);
        let ty = self.ty(dst).clone();
        if !plan::same_layout(&self.ty(cond).shape, &ty.shape) {
            return Err(self.unsupported(
                inst,
                format!(
                    "a condition of shape {:?} broadcast to {:?}",
                    self.ty(cond).shape,
                    ty.shape
                ),
            ));
        }
        let g = Geom::of(&ty);
        let n = g.elems();
        let d = Lowering::name(dst);
        let c = Lowering::name(cond);
        let (t, f) = self.full_args(inst, on_true, on_false, &ty.shape)?;
        let t = self.tile_arg(inst, t, Temp::ScalarLhs, ty.dtype, &g)?;
        match f {
            Arg::Tile(f) => self.code.line(format!(
                "Select({d}, {c}, {t}, {f}, SELMODE::VSEL_TENSOR_TENSOR_MODE, {n});"
            )),
            Arg::Scalar(v) => self.code.line(format!(
                "Select({d}, {c}, {t}, {}, SELMODE::VSEL_TENSOR_SCALAR_MODE, {n});",
                scalar(v, ty.dtype)
            )),
        }
        Ok(())
    }

    pub(super) fn cast(&mut self, inst: &Inst, dst: TileId, src: TileId) -> Result<(), LowerError> {
        self.declare(dst);
        let to = self.ty(dst).clone();
        let from = self.ty(src).dtype;
        let n = Geom::of(&to).elems();
        let d = Lowering::name(dst);
        let s = Lowering::name(src);
        if from == to.dtype {
            if self.plan.storage[dst] != Storage::Alias(src) {
                self.code.line(format!(
                    "DataCopy({d}, {s}, {});",
                    copy_elems(&to, &Geom::of(&to))
                ));
            }
            return Ok(());
        }
        let round = match (from, to.dtype) {
            (DType::Bool, t) if t.is_float() => {
                self.code
                    .line(format!("Duplicate({d}, {}, {n});", scalar(1.0, t)));
                self.code.line(format!(
                    "Select({d}, {s}, {d}, {}, SELMODE::VSEL_TENSOR_SCALAR_MODE, {n});",
                    scalar(0.0, t)
                ));
                return Ok(());
            }
            (f, DType::Bool) if f.is_float() => {
                self.code.line(format!(
                    "CompareScalar({d}, {s}, {}, CMPMODE::NE, {n});",
                    scalar(0.0, f)
                ));
                return Ok(());
            }
            // Widening is exact.
            (DType::F16 | DType::BF16, DType::F32) | (DType::I32, DType::F32) => "CAST_NONE",
            // Narrowing floats round to nearest, ties to even.
            (DType::F32, DType::F16 | DType::BF16)
            | (DType::F16, DType::BF16)
            | (DType::BF16, DType::F16) => "CAST_RINT",
            // Floats to integers truncate toward zero.
            (DType::F32 | DType::F16, DType::I32) => "CAST_TRUNC",
            (DType::I32, DType::F16) => "CAST_RINT",
            (f, t) => {
                return Err(self.unsupported(inst, format!("a cast from {f} to {t}")));
            }
        };
        self.code
            .line(format!("Cast({d}, {s}, RoundMode::{round}, {n});"));
        Ok(())
    }
}

/// The `tanh(x)` of `x` into `d` (which may be `x`): `1 - 2 / (exp(2x) + 1)`.
fn tanh_lines(d: &str, x: &str, n: usize, s: &dyn Fn(f64) -> String) -> Vec<String> {
    vec![
        "// tanh(x) = 1 - 2 / (exp(2x) + 1)".to_owned(),
        format!("Muls({d}, {x}, {}, {n});", s(2.0)),
        format!("Exp({d}, {d}, {n});"),
        format!("Adds({d}, {d}, {}, {n});", s(1.0)),
        format!("Reciprocal({d}, {d}, {n});"),
        format!("Muls({d}, {d}, {}, {n});", s(-2.0)),
        format!("Adds({d}, {d}, {}, {n});", s(1.0)),
    ]
}

impl Lowering<'_> {
    /// `reshape`: a copy when both shapes have the same bytes (the same padded rows, or
    /// rows without padding on both sides), `Brcb` for a row (or
    /// a `[n]` vector) to a column `[n, 1]` (each element into its row's 32-byte block,
    /// which pads it); any other reshape moves elements between padded rows and is refused.
    pub(super) fn reshape(
        &mut self,
        inst: &Inst,
        dst: TileId,
        src: TileId,
    ) -> Result<(), LowerError> {
        self.declare(dst);
        let (s, d) = (self.ty(src).clone(), self.ty(dst).clone());
        if self.row_split(src) || self.row_split(dst) {
            return Err(self.unsupported(
                inst,
                format!("a reshape of {s} to {d} whose rows split between the vector cores"),
            ));
        }
        let (sg, dg) = (Geom::of(&s), Geom::of(&d));
        let (sn, dn) = (Lowering::name(src), Lowering::name(dst));
        // The same bytes: the same padded rows, or rows without padding on both sides.
        let unpadded = sg.pitch == sg.cols && dg.pitch == dg.cols;
        if (sg.rows, sg.pitch) == (dg.rows, dg.pitch) || unpadded {
            self.code
                .line(format!("DataCopy({dn}, {sn}, {});", copy_elems(&d, &dg)));
            return Ok(());
        }
        let column = sg.rows == 1 && dg.cols == 1 && dg.rows == sg.cols;
        if !column || !matches!(d.dtype.size_bytes(), 2 | 4) || d.dtype == DType::Bool {
            return Err(self.unsupported(
                inst,
                format!(
                    "a reshape of {s} to {d}: the lowering copies reshapes that keep the padded \
                     rows and turns a row into a column; this one moves elements between rows"
                ),
            ));
        }
        // Brcb fills one 32-byte block with each element, 8 elements a repeat and at most
        // 255 repeats a call: the first block of each padded row, `blocks` blocks apart.
        let blocks = dg.pitch * d.dtype.size_bytes() / 32;
        let repeats = dg.rows.div_ceil(8);
        let mut done = 0;
        while done < repeats {
            let now = (repeats - done).min(255);
            self.code.line(format!(
                "Brcb({dn}[{}], {sn}[{}], {now}, BrcbRepeatParams({blocks}, {}));",
                done * 8 * dg.pitch,
                done * 8,
                8 * blocks
            ));
            done += now;
        }
        Ok(())
    }

    /// `logic and` / `or` of two bool tiles of one shape: `And` / `Or` over their bit
    /// masks as 16-bit words (bits past the elements are padding either way).
    pub(super) fn logic(
        &mut self,
        inst: &Inst,
        dst: TileId,
        op: pto_op::kernel::ir::LogicOp,
        lhs: TileId,
        rhs: TileId,
    ) -> Result<(), LowerError> {
        self.declare(dst);
        let (l, r, d) = (
            self.ty(lhs).clone(),
            self.ty(rhs).clone(),
            self.ty(dst).clone(),
        );
        if l.shape != d.shape || r.shape != d.shape {
            return Err(self.unsupported(
                inst,
                format!("{} of bool tiles that broadcast ({l} and {r})", op.name()),
            ));
        }
        let api = match op {
            pto_op::kernel::ir::LogicOp::And => "And",
            pto_op::kernel::ir::LogicOp::Or => "Or",
        };
        let words = Geom::of(&d).bytes / 2;
        let word = |t: TileId| format!("{}.ReinterpretCast<uint16_t>()", Lowering::name(t));
        self.code.line(format!(
            "{api}({}, {}, {}, {words});",
            word(dst),
            word(lhs),
            word(rhs)
        ));
        Ok(())
    }

    /// `not` of a bool tile: `Not` over its bit mask as 16-bit words.
    pub(super) fn not(&mut self, dst: TileId, src: TileId) -> Result<(), LowerError> {
        self.declare(dst);
        let words = Geom::of(self.ty(dst)).bytes / 2;
        let word = |t: TileId| format!("{}.ReinterpretCast<uint16_t>()", Lowering::name(t));
        self.code
            .line(format!("Not({}, {}, {words});", word(dst), word(src)));
        Ok(())
    }
}

//! Data movement: GM -> UB through the input queues and GM -> L1 in the cube's Nz layout,
//! UB -> GM through the output queues, L1 -> L0A / L0B, L0C -> UB (`Fixpipe`) and
//! UB -> L1 (ND -> NZ) on a coupled core.

use pto_op::DType;
use pto_op::kernel::ir::{GlobalId, Index, Inst, MemLevel, TileId, TileType};

use super::super::LowerError;
use super::super::capability::Cap;
use super::super::plan::{self, Geom, Queue, Storage};
use super::cpp_expr::{c_identifier, c_type, index, offsets_list, scalar, shape_list};
use super::state::Lowering;

/// The two tiles of a move: their types, C++ names and layouts.
pub(super) struct MoveEnds {
    pub(super) from: TileType,
    pub(super) to: TileType,
    /// The destination's name.
    pub(super) d: String,
    /// The source's name.
    pub(super) s: String,
    pub(super) sg: Geom,
    pub(super) dg: Geom,
}

impl Lowering<'_> {
    fn global_name(&self, g: GlobalId) -> String {
        c_identifier(&self.program.globals[g].name)
    }

    /// The tiles of a move from `src` to `dst`.
    pub(super) fn move_ends(&self, dst: TileId, src: TileId) -> MoveEnds {
        let from = self.ty(src).clone();
        let to = self.ty(dst).clone();
        MoveEnds {
            sg: Geom::of(&from),
            dg: Geom::of(&to),
            from,
            to,
            d: Lowering::name(dst),
            s: Lowering::name(src),
        }
    }

    /// Declares `offsets` and `shape`, the part of a global at `offsets` that tile `t` (of
    /// type `ty`) covers, for the masked tile copies; returns the global's rank. A tile of
    /// lower rank than the global covers one element of its leading dims.
    fn tile_window(&mut self, t: TileId, ty: &TileType, offsets: &[Index]) -> usize {
        let rank = offsets.len();
        let shape = tile_in_global(&ty.shape, rank);
        self.code.line(format!(
            "const int64_t offsets[{}] = {{{}}};",
            rank.max(1),
            self.tile_offsets(t, offsets)
        ));
        self.code.line(format!(
            "const int64_t shape[{}] = {{{}}};",
            rank.max(1),
            shape_list(&shape)
        ));
        rank
    }

    pub(super) fn load(
        &mut self,
        dst: TileId,
        global: GlobalId,
        offsets: &[Index],
        pad: f64,
    ) -> Result<(), LowerError> {
        let ty = self.ty(dst).clone();
        let gname = self.global_name(global);
        if ty.level != MemLevel::Ub {
            return self.load_l1(dst, &ty, &gname, offsets, pad);
        }
        let g = Geom::of(&ty);
        let name = Lowering::name(dst);
        let ctype = c_type(ty.dtype);
        let queue = format!("inQueue_{name}");
        let depth = if self.double_buffer && self.scopes.len() > 1 {
            2
        } else {
            1
        };
        self.queues.push(Queue {
            name: queue.clone(),
            position: "VECIN",
            depth,
            bytes: g.bytes,
        });
        if let Some(scope) = self.scopes.last_mut() {
            scope.push(dst);
        }
        self.code.line(format!(
            "LocalTensor<{ctype}> {name} = {queue}.AllocTensor<{ctype}>();"
        ));
        self.code.open("");
        let rank = self.tile_window(dst, &ty, offsets);
        self.code.line(format!(
            "CopyInTile<{ctype}>({name}, {gname}Gm, {gname}Dims, offsets, shape, {rank}, {}, {});",
            g.pitch,
            scalar(pad, ty.dtype)
        ));
        self.code.close();
        self.code.line(format!("{queue}.EnQue({name});"));
        self.code
            .line(format!("{name} = {queue}.DeQue<{ctype}>();"));
        Ok(())
    }

    /// GM -> L1 in the Nz fractal layout of the cube (`DataCopy` with `Nd2NzParams`): tile
    /// `dst` of type `ty` from the global named `gname`.
    fn load_l1(
        &mut self,
        dst: TileId,
        ty: &TileType,
        gname: &str,
        offsets: &[Index],
        pad: f64,
    ) -> Result<(), LowerError> {
        self.uses_cube = true;
        self.declare(dst);
        let g = Geom::of(ty);
        let name = Lowering::name(dst);
        self.code.open("");
        // A matrix of a batch (a global of rank > 2): its leading offsets pick the matrix,
        // whose dims are the global's last two; one outside the batch loads only `pad`.
        let lead = offsets.len().saturating_sub(2);
        let (batch, matrix) = offsets.split_at(lead);
        let (base, dims) = if lead == 0 {
            self.code.line(format!(
                "const int64_t offsets[2] = {{{}}};",
                offsets_list(offsets)
            ));
            (format!("{gname}Gm"), format!("{gname}Dims"))
        } else {
            let [row, col] = [&matrix[0], &matrix[1]].map(index);
            self.code.line(format!(
                "const int64_t batch[{lead}] = {{{}}};",
                offsets_list(batch)
            ));
            self.code.line("int64_t matrix = 0;");
            self.code.line("bool inBatch = true;");
            self.code.line(format!(
                "for (int32_t a = 0; a < {lead}; ++a) {{ inBatch = inBatch && batch[a] >= 0 && \
                 batch[a] < {gname}Dims[a]; matrix = matrix * {gname}Dims[a] + batch[a]; }}"
            ));
            self.code.line(format!(
                "const int64_t offsets[2] = {{inBatch ? static_cast<int64_t>({row}) : \
                 {gname}Dims[{lead}], {col}}};"
            ));
            (
                format!(
                    "{gname}Gm[inBatch ? matrix * {gname}Dims[{lead}] * {gname}Dims[{}] : 0]",
                    lead + 1
                ),
                format!("{gname}Dims + {lead}"),
            )
        };
        // A 32-bit [K, N] right operand is laid out as rows of fractals (Zz), so that
        // LoadDataWithTranspose finds each 16 x 16 square in two adjacent fractals.
        let helper = if self.zz_32bit(dst) {
            "CopyInTileZz"
        } else {
            "CopyInTileNz"
        };
        self.code.line(format!(
            "{helper}<{}>({name}, {base}, {dims}, offsets, {}, {}, {});",
            c_type(ty.dtype),
            g.rows,
            g.pitch,
            scalar(pad, ty.dtype)
        ));
        self.code.close();
        self.code.set_wait("MTE2_MTE1");
        Ok(())
    }

    pub(super) fn store(
        &mut self,
        inst: &Inst,
        global: GlobalId,
        offsets: &[Index],
        src: TileId,
    ) -> Result<(), LowerError> {
        let ty = self.ty(src).clone();
        if ty.level != MemLevel::Ub {
            return Err(self.unsupported(inst, "stores from the cube's L0C are not lowered"));
        }
        let g = Geom::of(&ty);
        let ctype = c_type(ty.dtype);
        let name = Lowering::name(src);
        let gname = self.global_name(global);
        let root = plan::root(&self.plan.storage, src);
        let (queue, out) = if self.plan.storage[root] == Storage::OutQueue {
            (format!("outQueue_{}", Lowering::name(root)), name.clone())
        } else {
            let queue = format!("outQueue_store{}", self.position);
            self.queues.push(Queue {
                name: queue.clone(),
                position: "VECOUT",
                depth: 1,
                bytes: g.bytes,
            });
            let out = format!("out{}", self.position);
            self.code.line(format!(
                "LocalTensor<{ctype}> {out} = {queue}.AllocTensor<{ctype}>();"
            ));
            self.code
                .line(format!("DataCopy({out}, {name}, {});", g.elems()));
            (queue, out)
        };
        self.code.line(format!("{queue}.EnQue({out});"));
        self.code.open("");
        self.code.line(format!(
            "LocalTensor<{ctype}> staged = {queue}.DeQue<{ctype}>();"
        ));
        let rank = self.tile_window(src, &ty, offsets);
        self.code.line(format!(
            "CopyOutTile<{ctype}>({gname}Gm, {gname}Dims, staged, offsets, shape, {rank}, {});",
            g.pitch
        ));
        self.code.line(format!("{queue}.FreeTensor(staged);"));
        self.code.close();
        Ok(())
    }

    /// An L1 sub-tile to L0A / L0B: the fractal rows of the sub-tile, from its column
    /// block on (the L1 tile is Nz: column blocks of 16-row fractals).
    pub(super) fn extract(
        &mut self,
        inst: &Inst,
        dst: TileId,
        src: TileId,
        offsets: &[usize],
    ) -> Result<(), LowerError> {
        let to = self.ty(dst).clone();
        let (row, col) = match offsets {
            [row, col] => (*row, *col),
            [col] => (0, *col),
            _ => (0, 0),
        };
        self.declare(dst);
        let line = self.load_l0(inst, dst, src, &to, (row, col))?;
        self.code.line(line);
        self.l0_loaded();
        Ok(())
    }

    /// The synchronisation after a load into L0A / L0B (MTE1): the Mmad (M) waits for it,
    /// and the next copy into L1 (MTE2) waits until it has read L1 (data_copy_l0c2gm.asc:
    /// MTE1_M and MTE1_MTE2 after SplitA / SplitB).
    fn l0_loaded(&mut self) {
        self.code.set_wait("MTE1_M");
        self.code.set_wait("MTE1_MTE2");
    }

    /// The helper call that loads the `dst` sub-tile at (`row`, `col`) of L1 tile `src` into
    /// L0A (Zz) or L0B (Zn), in the layouts of Mmad.md, table 2:
    /// - L0A: rows of Nz fractals (`LoadSubTileL0`, no transposition);
    /// - L0B of a [K, N] operand in 16-bit types: each Nz fractal transposed
    ///   (`LoadSubTileL0BZn`, as matmul_basic_api.asc loads B);
    /// - L0B of a [K, N] operand in 32-bit types: 16 x 16 squares of a Zz L1 tile
    ///   transposed (`LoadSubTileL0BZz32`, LoadDataWithTranspose);
    /// - L0B read transposed (the operand is [N, K] in L1): its Nz fractals are already Zn,
    ///   copied as they are (`LoadSubTileL0BNk`, as load_data_l12l0.asc's SplitB).
    fn load_l0(
        &self,
        inst: &Inst,
        dst: TileId,
        src: TileId,
        to: &TileType,
        (row, col): (usize, usize),
    ) -> Result<String, LowerError> {
        let (d, s) = (Lowering::name(dst), Lowering::name(src));
        let (dg, sg) = (Geom::of(to), Geom::of(self.ty(src)));
        let ctype = c_type(to.dtype);
        if to.level == MemLevel::L0A {
            return Ok(format!(
                "LoadSubTileL0<{ctype}>({d}, {s}, {}, {}, {}, {row}, {col});",
                dg.rows, dg.pitch, sg.rows
            ));
        }
        let bytes = to.dtype.size_bytes();
        if self.transposed(dst) {
            // dst is the [n, k] operand as stored; Mmad reads its transpose.
            return Ok(format!(
                "LoadSubTileL0BNk<{ctype}>({d}, {s}, {}, {}, {}, {row}, {col});",
                dg.rows, dg.pitch, sg.rows
            ));
        }
        match bytes {
            2 => Ok(format!(
                "LoadSubTileL0BZn<{ctype}>({d}, {s}, {}, {}, {}, {row}, {col});",
                dg.rows, dg.pitch, sg.rows
            )),
            4 => {
                self.require_cap(inst, Cap::LoadDataWithTransposeB32)?;
                Ok(format!(
                    "LoadSubTileL0BZz32<{ctype}>({d}, {s}, {}, {}, {}, {row}, {col});",
                    dg.rows, dg.pitch, sg.pitch
                ))
            }
            _ => Err(self.unsupported(
                inst,
                format!("a {} right operand of the cube read as it is", to.dtype),
            )),
        }
    }

    /// The Fixpipe quantisation mode that writes an f32 L0C tile out as `dtype`.
    pub(super) fn fixpipe_quant(
        &self,
        inst: &Inst,
        dtype: DType,
    ) -> Result<&'static str, LowerError> {
        match dtype {
            DType::F32 => Ok("NoQuant"),
            DType::F16 => Ok("F322F16"),
            DType::BF16 => Ok("F322BF16"),
            other => Err(self.unsupported(inst, format!("L0C out to {other}"))),
        }
    }

    /// `Fixpipe` of the L0C tile `src` (layout `sg`, elements `acc`) into `dst` (layout `dg`,
    /// elements `ctype`): to UB on a coupled core, to a workspace slot on a split one.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn fixpipe(
        &mut self,
        dst: &str,
        src: &str,
        sg: Geom,
        dg: Geom,
        quant: &str,
        ctype: &str,
        acc: DType,
    ) {
        self.code.open("");
        self.code.line("FixpipeParamsV220 params;");
        self.code.line(format!("params.mSize = {};", sg.rows));
        self.code.line(format!("params.nSize = {};", sg.cols));
        self.code.line(format!("params.srcStride = {};", sg.rows));
        self.code.line(format!("params.dstStride = {};", dg.pitch));
        self.code
            .line(format!("params.quantPre = QuantMode_t::{quant};"));
        self.code.line(format!(
            "Fixpipe<{ctype}, {}>({dst}, {src}, params);",
            c_type(acc)
        ));
        self.code.close();
    }

    /// The ND -> NZ `DataCopy` of the row-major tile `src` (layout `sg`, in UB on a coupled
    /// core, in a workspace slot on a split one) into the L1 tile `dst` (layout `dg`): Nz,
    /// or with `zz` rows of fractals (one Nd2Nz matrix per 16 rows, `ndNum` of them), the
    /// layout a 32-bit [K, N] right operand of the cube needs ([`Lowering::zz_32bit`]).
    pub(super) fn nd2nz(&mut self, dst: &str, src: &str, sg: Geom, dg: Geom, zz: bool) {
        self.code.open("");
        self.code.line("Nd2NzParams params;");
        if zz {
            self.code
                .line(format!("params.ndNum = {};", sg.rows.div_ceil(16)));
            self.code.line("params.nValue = 16;");
            self.code
                .line(format!("params.srcNdMatrixStride = {};", 16 * sg.pitch));
            self.code.line("params.dstNzC0Stride = 16;");
            self.code
                .line(format!("params.dstNzMatrixStride = {};", 16 * dg.pitch));
        } else {
            self.code.line("params.ndNum = 1;");
            self.code.line(format!("params.nValue = {};", sg.rows));
            self.code.line("params.srcNdMatrixStride = 0;");
            self.code
                .line(format!("params.dstNzC0Stride = {};", dg.rows));
            self.code.line("params.dstNzMatrixStride = 0;");
        }
        self.code.line(format!("params.dValue = {};", sg.cols));
        self.code.line(format!("params.srcDValue = {};", sg.pitch));
        self.code.line("params.dstNzNStride = 1;");
        self.code.line(format!("DataCopy({dst}, {src}, params);"));
        self.code.close();
    }

    pub(super) fn move_tile(
        &mut self,
        inst: &Inst,
        dst: TileId,
        src: TileId,
    ) -> Result<(), LowerError> {
        let MoveEnds {
            from,
            to,
            d,
            s,
            sg,
            dg,
        } = self.move_ends(dst, src);
        let ctype = c_type(to.dtype);
        if self.split
            && matches!(
                (from.level, to.level),
                (MemLevel::L0C, MemLevel::Ub) | (MemLevel::Ub, MemLevel::L1)
            )
        {
            return self.hand_over(inst, dst, src);
        }
        self.side(Lowering::side_of(to.level));
        self.declare(dst);
        match (from.level, to.level) {
            (MemLevel::Ub, MemLevel::Ub) => {
                self.code
                    .line(format!("DataCopy({d}, {s}, {});", copy_elems(&to, &dg)));
            }
            (MemLevel::L1, MemLevel::L0A) | (MemLevel::L1, MemLevel::L0B) => {
                let line = self.load_l0(inst, dst, src, &to, (0, 0))?;
                self.code.line(line);
                self.l0_loaded();
            }
            (MemLevel::L0C, MemLevel::Ub) => {
                self.require_cap(inst, Cap::FixpipeL0cToUb)?;
                let quant = self.fixpipe_quant(inst, to.dtype)?;
                self.fixpipe(&d, &s, sg, dg, quant, ctype, from.dtype);
                self.code.set_wait("FIX_V");
            }
            (MemLevel::Ub, MemLevel::L1) => {
                if self.zz_32bit(dst) && sg.rows % 16 != 0 {
                    return Err(self.unsupported(
                        inst,
                        "a 32-bit right operand of the cube whose rows are not a multiple of 16",
                    ));
                }
                let zz = self.zz_32bit(dst);
                // The copy to L1 (MTE3) reads what the vector unit wrote.
                self.code.set_wait("V_MTE3");
                self.nd2nz(&d, &s, sg, dg, zz);
                self.code.set_wait("MTE3_MTE1");
            }
            (a, b) => {
                return Err(self.unsupported(inst, format!("a move from {a} to {b}")));
            }
        }
        Ok(())
    }
}

/// Elements a whole-tile `DataCopy` moves (bool masks: bytes).
pub(super) fn copy_elems(ty: &TileType, g: &Geom) -> usize {
    if ty.dtype == DType::Bool {
        g.bytes as usize
    } else {
        g.elems()
    }
}

/// `tile` with the leading dims of size 1 it drops of a global of rank `rank`.
fn tile_in_global(tile: &[usize], rank: usize) -> Vec<usize> {
    let mut dims = vec![1; rank.saturating_sub(tile.len())];
    dims.extend_from_slice(tile);
    dims
}

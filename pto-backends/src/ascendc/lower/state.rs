//! The lowering state (the hand-offs of a split kernel among it), and what every
//! instruction's code needs from it: tile types and C++ names, declarations bound to the
//! plan's storage, temporaries by name, queue frees, sides.

use pto_op::device::PerBuffer;
use pto_op::kernel::ir::{IdVec, Index, Inst, MemLevel, Program, TileId, TileType};
use pto_op::{DType, DeviceProfile};

use super::super::capability::Cap;
use super::super::plan::{self, Geom, Plan, Queue, Storage, Temp, UbReservation};
use super::super::{LowerError, Soc, UNSUPPORTED_CALL, UNSUPPORTED_DTYPE};
use super::cpp_expr::{c_type, index, offsets_list};
use super::writer::{ALL, CUBE, Code, Sides, VEC};

/// The `TBuf` of each level's pool ([`plan::level_index`]) and its position.
pub(super) const POOLS: [(&str, &str); 5] = [
    ("calcBuf", "VECCALC"),
    ("l1Buf", "A1"),
    ("l0aBuf", "A2"),
    ("l0bBuf", "B2"),
    ("l0cBuf", "CO1"),
];

pub(super) struct Lowering<'p> {
    /// The program lowered: the traced one, or for a mix kernel whose vector work the two
    /// AIVs share by rows, the traced one with half the rows in each such UB tile (one
    /// AIV's part; the cube's tiles are whole).
    pub(super) program: &'p Program,
    /// The traced program (tile types in comments, hand-off slots).
    pub(super) full: &'p Program,
    /// Rows of each row-split UB tile on one AIV ([`AivWork::Rows`]), if the AIVs share the
    /// vector work by rows.
    pub(super) aiv_rows: Option<usize>,
    /// Why the AIVs of a mix kernel take turns instead ([`AivWork::TakeTurns`]).
    pub(super) take_turns: Option<&'p str>,
    pub(super) soc: Soc,
    pub(super) plan: Plan,
    pub(super) code: Code,
    pub(super) queues: Vec<Queue>,
    /// The UB the kernel reserves ([`plan::reserved_ub`]'s accounting), set once the
    /// block is lowered.
    pub(super) reservation: UbReservation,
    /// The position of the instruction being lowered in the plan's numbering (a loop takes
    /// two: its start and the end of its iteration).
    pub(super) position: usize,
    /// Queue tiles already freed.
    pub(super) freed: IdVec<TileId, bool>,
    /// The queue tiles defined in each open scope, innermost last.
    pub(super) scopes: Vec<Vec<TileId>>,
    /// Whether the kernel uses the cube (and needs its copy helpers).
    pub(super) uses_cube: bool,
    /// Whether the kernel runs on split cube and vector cores (a mix kernel on the 910B):
    /// its cube instructions on the AIC, its vector instructions on the AIV, tiles handed
    /// over through the workspace.
    pub(super) split: bool,
    /// The hand-offs of a split kernel, in program order.
    pub(super) handoffs: Vec<Handoff>,
    /// Whether loads inside loops get two queue buffers.
    pub(super) double_buffer: bool,
    /// The number of the instruction being lowered in messages (depth first, a loop before
    /// its body: [`Inst::count`]'s order).
    pub(super) number: usize,
    /// The number of the next instruction.
    pub(super) next_number: usize,
    /// The device profile the kernel is planned for (its pipe model decides a row
    /// reduction's group path, as in the simulator).
    pub(super) profile: DeviceProfile,
}

/// One tile handed between the cube core and the vector cores of a split kernel: a slot
/// of the block's part of the workspace, and two cross-core flags (mode 2, AIC <-> both
/// AIVs of the block): `ready` (the hand-off's even id), set by the writer when the slot
/// holds the tile, and `free`.
pub(super) struct Handoff {
    /// The cube writes the slot (an L0C -> UB move); else the vector side does (UB -> L1).
    pub(super) to_vector: bool,
    /// Set by the reader when it has read the slot, waited for by the writer before it
    /// writes the slot again (one credit is given at the start and taken back at the end).
    pub(super) free: u16,
    /// Byte offset of the slot in the block's part of the workspace.
    pub(super) offset: u64,
    /// Bytes of the slot.
    pub(super) bytes: u64,
    /// The element type of the slot.
    pub(super) ctype: &'static str,
    /// Elements of the slot.
    pub(super) elems: usize,
}

/// How the two vector cores (AIVs) of a mix kernel share a block program's vector work.
pub(super) enum AivWork {
    /// Each AIV takes half the rows of every tile of `rows` rows (`GetSubBlockIdx()` 0 the
    /// first half): `program` is the traced one with those tiles halved.
    Rows {
        /// The program of one AIV.
        program: Program,
        /// The rows of the block program's row-split tiles (even).
        rows: usize,
    },
    /// The AIVs take turns, block program by block program, for this reason.
    TakeTurns(String),
}

impl Lowering<'_> {
    pub(super) fn unsupported(&self, inst: &Inst, message: impl Into<String>) -> LowerError {
        LowerError::Unsupported {
            op: self.program.op.clone(),
            inst: self.number,
            mnemonic: inst.mnemonic().to_owned(),
            soc: self.soc,
            arch: self.soc.arch(),
            message: message.into(),
        }
    }

    /// Refuses `inst` unless the SoC has the call path `cap` (the capability table,
    /// [`crate::ascendc::capability`]): the error names the SoC, the call and the source.
    pub(super) fn require_cap(&self, inst: &Inst, cap: Cap) -> Result<(), LowerError> {
        if self.soc.has(cap) {
            return Ok(());
        }
        Err(self.unsupported(
            inst,
            format!(
                "{UNSUPPORTED_CALL} {} does not exist on {} ({})",
                cap.row().call,
                self.soc,
                cap.source()
            ),
        ))
    }

    /// [`Lowering::unsupported`] with `message()` unless `ok`.
    pub(super) fn require(
        &self,
        inst: &Inst,
        ok: bool,
        message: impl FnOnce() -> String,
    ) -> Result<(), LowerError> {
        if ok {
            Ok(())
        } else {
            Err(self.unsupported(inst, message()))
        }
    }

    pub(super) fn ty(&self, t: TileId) -> &TileType {
        // A validated program's tiles all have types.
        &self.program.tiles[t]
    }

    /// Whether each AIV holds half the rows of tile `t` (starting at row `aivRow`).
    pub(super) fn row_split(&self, t: TileId) -> bool {
        self.aiv_rows.is_some() && self.program.tiles[t].shape != self.full.tiles[t].shape
    }

    /// The C++ offsets of tile `t` at `offsets` of a tensor: this AIV's rows of a row-split
    /// tile start `aivRow` rows further (the row axis is the tensor's second last).
    pub(super) fn tile_offsets(&self, t: TileId, offsets: &[Index]) -> String {
        if !self.row_split(t) || offsets.len() < 2 {
            return offsets_list(offsets);
        }
        let row = offsets.len() - 2;
        offsets
            .iter()
            .enumerate()
            .map(|(d, o)| {
                if d == row {
                    format!("{} + aivRow", index(o))
                } else {
                    index(o)
                }
            })
            .collect::<Vec<_>>()
            .join(", ")
    }

    pub(super) fn check_dtypes(&mut self) -> Result<(), LowerError> {
        for g in &self.program.globals {
            if !self.soc.supports(g.dtype) || g.dtype == DType::Bool {
                return Err(LowerError::Unsupported {
                    op: self.program.op.clone(),
                    inst: 0,
                    mnemonic: "global".to_owned(),
                    soc: self.soc,
                    arch: self.soc.arch(),
                    message: format!(
                        "{UNSUPPORTED_DTYPE} {} of `{}` is not supported",
                        g.dtype, g.name
                    ),
                });
            }
        }
        let mut first = None;
        Inst::visit(&self.program.body, &mut 0, &mut |at, inst| {
            if first.is_some() {
                return;
            }
            for d in inst.defs() {
                let dtype = self.program.tiles[d].dtype;
                if first.is_none() && !self.soc.supports(dtype) {
                    first = Some((at, inst.mnemonic(), dtype, d));
                }
            }
        });
        if let Some((at, mnemonic, dtype, d)) = first {
            return Err(LowerError::Unsupported {
                op: self.program.op.clone(),
                inst: at,
                mnemonic: mnemonic.to_owned(),
                soc: self.soc,
                arch: self.soc.arch(),
                message: format!("{UNSUPPORTED_DTYPE} {dtype} of tile {d} is not supported"),
            });
        }
        Ok(())
    }

    pub(super) fn buffer_bytes(&self) -> PerBuffer {
        let pools = &self.plan.pool_bytes;
        PerBuffer {
            ub: self.reservation.total(),
            l1: pools[1],
            l0a: pools[2],
            l0b: pools[3],
            l0c: pools[4],
        }
    }

    pub(super) fn ub_detail(&self) -> String {
        self.reservation.detail()
    }

    /// The C++ name of a tile.
    pub(super) fn name(t: TileId) -> String {
        format!("t{}", t.as_u32())
    }

    /// The C++ expression of temporary `temp` of the current instruction `inst`, as `dtype`
    /// with the layout of `like`; an internal error where the plan has none.
    pub(super) fn temp(
        &self,
        inst: &Inst,
        temp: Temp,
        dtype: DType,
        like: &Geom,
    ) -> Result<String, LowerError> {
        let offset = self.plan.temp(self.position, temp).ok_or_else(|| {
            self.unsupported(
                inst,
                format!(
                    "internal error: the UB plan has no temporary {temp:?} for the instruction \
                     at position {}",
                    self.position
                ),
            )
        })?;
        Ok(format!(
            "calcBuf.GetWithOffset<{}>({}, {offset})",
            c_type(dtype),
            like.elems()
        ))
    }

    /// Declares tile `t` (defined here) as a `LocalTensor` bound to its storage.
    pub(super) fn declare(&mut self, t: TileId) {
        let ty = self.ty(t).clone();
        let g = Geom::of(&ty);
        let name = Lowering::name(t);
        let ctype = c_type(ty.dtype);
        let storage = self.plan.storage[t].clone();
        match storage {
            Storage::Pool(offset) => {
                let count = if ty.dtype == DType::Bool {
                    g.bytes as usize
                } else if ty.level == MemLevel::Ub {
                    g.elems()
                } else {
                    g.bytes as usize / ty.dtype.size_bytes()
                };
                let buf = POOLS[plan::level_index(ty.level)].0;
                self.code.line(format!(
                    "LocalTensor<{ctype}> {name} = {buf}.GetWithOffset<{ctype}>({count}, {offset});"
                ));
            }
            Storage::OutQueue => {
                let queue = format!("outQueue_{name}");
                self.queues.push(Queue {
                    name: queue.clone(),
                    position: "VECOUT",
                    depth: 1,
                    bytes: g.bytes,
                });
                self.code.line(format!(
                    "LocalTensor<{ctype}> {name} = {queue}.AllocTensor<{ctype}>();"
                ));
            }
            Storage::Alias(of) => {
                self.code.line(format!(
                    "LocalTensor<{ctype}> {name} = {};",
                    Lowering::name(of)
                ));
            }
            Storage::InQueue | Storage::None => {}
        }
    }

    /// Frees the queue tiles of the current scope whose last use is at or before `last`.
    pub(super) fn free_dead(&mut self, last: usize) {
        let scope = self.scopes.last().cloned().unwrap_or_default();
        for t in scope {
            if !self.freed[t] && self.plan.end[t] <= last {
                self.free(t);
            }
        }
    }

    pub(super) fn free_scope(&mut self) {
        let scope = self.scopes.pop().unwrap_or_default();
        for t in scope {
            if !self.freed[t] {
                self.free(t);
            }
        }
    }

    fn free(&mut self, t: TileId) {
        self.freed[t] = true;
        let name = Lowering::name(t);
        self.code
            .line(format!("inQueue_{name}.FreeTensor({name});"));
    }

    /// Routes the next lines to `sides` of a split kernel (a coupled kernel has one side).
    pub(super) fn side(&mut self, sides: Sides) {
        self.code.sides = if self.split { sides } else { VEC };
    }

    /// The side of a tile of `level`.
    pub(super) fn side_of(level: MemLevel) -> Sides {
        if level == MemLevel::Ub { VEC } else { CUBE }
    }

    /// Which sides of a split kernel run `inst` (its comment goes to all of them).
    pub(super) fn sides_of(&self, inst: &Inst) -> Sides {
        match inst {
            Inst::Loop { .. } => ALL,
            Inst::Load { dst, .. } => Lowering::side_of(self.ty(*dst).level),
            Inst::Move { dst, src } => match (self.ty(*src).level, self.ty(*dst).level) {
                (MemLevel::L0C, MemLevel::Ub) | (MemLevel::Ub, MemLevel::L1) => ALL,
                (_, to) => Lowering::side_of(to),
            },
            Inst::Extract { .. } | Inst::Matmul { .. } => CUBE,
            _ => VEC,
        }
    }
}

#[cfg(test)]
mod tests {
    use pto_op::DType;
    use pto_op::kernel::ir::{MemLevel, TileType};

    use super::super::super::plan::{Geom, Temp};
    use super::super::{lower_block, test_kernel};

    /// A temporary the UB plan did not give the instruction is an internal error naming
    /// the instruction's position and the temporary, not offset 0 of the pool.
    #[test]
    fn a_temporary_the_plan_lacks_is_an_internal_error() {
        let lines = [
            "kernel t.temps grid 1",
            "global @0 x: f32[8, 64] input",
            "global @1 y: f32[8, 64] output",
            "%0: f32[8, 64]@ub = load @0[0, 0] pad 0.0",
            "%1: f32[8, 64]@ub = unary sin %0",
            "%2: f32[8, 64]@ub = unary exp %1",
            "store @1[0, 0], %2",
        ];
        let (program, soc, profile) = test_kernel(&(lines.join("\n") + "\n"));
        let program = program.program();
        let mut lowering = lower_block(program, None, soc, &profile, false).expect("lowered");
        let like = Geom::of(&TileType {
            shape: vec![8, 64],
            dtype: DType::F32,
            level: MemLevel::Ub,
        });
        // The sine's sharedTmpBuffer is planned; the exponential has none.
        lowering.position = 1;
        let sin = lowering.temp(&program.body[1], Temp::MathScratch, DType::U8, &like);
        assert!(sin.is_ok_and(|e| e.starts_with("calcBuf.GetWithOffset<uint8_t>(")));
        lowering.position = 2;
        let message = lowering
            .temp(&program.body[2], Temp::MathScratch, DType::U8, &like)
            .expect_err("no temporary at the exponential")
            .to_string();
        assert!(
            message.contains("no temporary MathScratch for the instruction at position 2"),
            "{message}"
        );
    }
}

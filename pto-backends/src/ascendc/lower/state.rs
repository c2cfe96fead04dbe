//! The lowering state, and what every instruction's code needs from it: tile types and
//! C++ names, declarations bound to the plan's storage, temporaries, queue frees, sides.

use pto_op::device::PerBuffer;
use pto_op::kernel::ir::{Index, Inst, MemLevel, Program, TileId, TileType};
use pto_op::{DType, DeviceProfile};

use super::super::plan::{self, Geom, Plan, Queue, Storage, UbReservation};
use super::super::{LowerError, Soc, UNSUPPORTED_DTYPE};
use super::cpp_expr::{c_type, index, offsets_list};
use super::handoff::Handoff;
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
    pub(super) freed: Vec<bool>,
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

    /// The C++ expression of temporary `k` of the current instruction, as `dtype` with
    /// the layout of `like`.
    pub(super) fn temp(&self, k: usize, dtype: DType, like: &Geom) -> String {
        let offset = self
            .plan
            .temps
            .get(&self.position)
            .and_then(|t| t.get(k))
            .copied()
            .unwrap_or(0);
        format!(
            "calcBuf.GetWithOffset<{}>({}, {offset})",
            c_type(dtype),
            like.elems()
        )
    }

    /// Declares tile `t` (defined here) as a `LocalTensor` bound to its storage.
    pub(super) fn declare(&mut self, t: TileId) {
        let ty = self.ty(t).clone();
        let g = Geom::of(&ty);
        let name = Lowering::name(t);
        let ctype = c_type(ty.dtype);
        let storage = self.plan.storage[t.index()].clone();
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
            if !self.freed[t.index()] && self.plan.end[t.index()] <= last {
                self.free(t);
            }
        }
    }

    pub(super) fn free_scope(&mut self) {
        let scope = self.scopes.pop().unwrap_or_default();
        for t in scope {
            if !self.freed[t.index()] {
                self.free(t);
            }
        }
    }

    fn free(&mut self, t: TileId) {
        self.freed[t.index()] = true;
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

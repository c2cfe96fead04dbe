//! Tiles handed between the cube core and the vector cores of a split (mix) kernel: a
//! slot of the workspace each, and cross-core flags for the handshakes.

use pto_op::kernel::ir::{Inst, MemLevel, TileId};

use super::super::LowerError;
use super::super::plan::Geom;
use super::cpp_expr::c_type;
use super::state::{Handoff, Lowering};
use super::writer::{CUBE, SYNC, VEC};

/// The cross-core flag ids of the 910B (`CrossCoreSetFlag`: 0..=10): two per hand-off.
pub(super) const CROSS_CORE_FLAGS: u16 = 11;

/// Bytes of alignment of each workspace slot.
pub(super) const SLOT_ALIGN: u64 = 512;

impl Lowering<'_> {
    /// A move between the cube core and the vector cores of a split kernel (L0C -> UB or
    /// UB -> L1): the writer waits until the slot is free, writes the tile to its slot of
    /// the workspace and sets the slot's ready flag; the reader waits for it, reads the
    /// slot and sets its free flag. The other AIV takes part in every handshake (a mode-2
    /// flag of the AIC reaches both AIVs; the AIC's wait for the AIVs passes when both have
    /// set) but moves no data.
    pub(super) fn hand_over(
        &mut self,
        inst: &Inst,
        dst: TileId,
        src: TileId,
    ) -> Result<(), LowerError> {
        let m = self.move_ends(dst, src);
        let (d, s) = (&m.d, &m.s);
        let to_vector = m.from.level == MemLevel::L0C;
        // The whole tiles (each AIV of a row-split kernel holds half the UB tile's rows).
        let whole = |t: TileId| Geom::of(&self.full.tiles[t]);
        let (wsg, wdg) = (whole(src), whole(dst));
        // The slot holds the whole tile as rows of the UB tile's pitch.
        let (ub_ty, elems) = if to_vector {
            (&m.to, wsg.rows.max(wdg.rows) * wdg.pitch)
        } else {
            (&m.from, wsg.elems())
        };
        let ub_tile = if to_vector { dst } else { src };
        let split = self.row_split(ub_tile);
        let ctype = c_type(ub_ty.dtype);
        let n = self.handoffs.len() as u16;
        if 2 * n + 1 >= CROSS_CORE_FLAGS {
            return Err(self.unsupported(
                inst,
                format!(
                    "more than {} tiles handed between the cube core and the vector cores (two cross-core flags each, ids 0..={})",
                    CROSS_CORE_FLAGS / 2,
                    CROSS_CORE_FLAGS - 1
                ),
            ));
        }
        let offset = self.workspace_per_block();
        let (ready, free) = (2 * n, 2 * n + 1);
        self.handoffs.push(Handoff {
            to_vector,
            free,
            offset,
            bytes: (elems * ub_ty.dtype.size_bytes()) as u64,
            ctype,
            elems,
        });
        let slot = format!("ws{n}");
        // This AIV's rows of the slot.
        let (part, pitch) = if to_vector {
            (m.dg.rows, m.dg.pitch)
        } else {
            (m.sg.rows, m.sg.pitch)
        };
        let aiv_slot = if split {
            format!("{slot}[aivRow * {pitch}]")
        } else {
            slot.clone()
        };
        // The vector side's copy between its UB tile and the slot on `pipe` (MTE2 in,
        // MTE3 out), after the vector work before it and before the vector work after it.
        let vector_copy = |this: &mut Self, pipe: &str, copy: String| {
            this.code.set_wait(&format!("V_{pipe}"));
            if split {
                this.code.line(format!(
                    "// Rows aivRow .. aivRow + {part} of {slot}: this vector core's half."
                ));
            }
            this.code.line(copy);
            this.code.set_wait(&format!("{pipe}_V"));
            this.side(VEC | SYNC);
        };
        if to_vector {
            let quant = self.fixpipe_quant(inst, m.to.dtype)?;
            self.side(CUBE);
            self.code.line(format!(
                "CrossCoreWaitFlag({free});  // the vector cores have read {slot}"
            ));
            self.fixpipe(&slot, s, m.sg, wdg, quant, ctype, m.from.dtype);
            self.code.line(format!(
                "CrossCoreSetFlag<2, PIPE_FIX>({ready});  // {slot} holds {d}"
            ));
            // The next Mmad into L0C (M) waits until the Fixpipe has read it.
            self.code.set_wait("FIX_M");
            self.side(VEC | SYNC);
            self.code.line(format!("CrossCoreWaitFlag({ready});"));
            self.side(VEC);
            self.declare(dst);
            let copy = format!("DataCopy({d}, {aiv_slot}, {});", m.dg.elems());
            vector_copy(self, "MTE2", copy);
            self.code.line(format!(
                "CrossCoreSetFlag<2, PIPE_MTE2>({free});  // {slot} read"
            ));
        } else {
            self.side(VEC | SYNC);
            self.code.line(format!(
                "CrossCoreWaitFlag({free});  // the cube core has read {slot}"
            ));
            self.side(VEC);
            let copy = format!("DataCopy({aiv_slot}, {s}, {});", m.sg.elems());
            vector_copy(self, "MTE3", copy);
            self.code.line(format!(
                "CrossCoreSetFlag<2, PIPE_MTE3>({ready});  // {slot} holds {s}"
            ));
            self.side(CUBE);
            self.declare(dst);
            self.code.line(format!("CrossCoreWaitFlag({ready});"));
            if self.zz_32bit(dst) && wsg.rows % 16 != 0 {
                return Err(self.unsupported(
                    inst,
                    "a 32-bit right operand of the cube whose rows are not a multiple of 16",
                ));
            }
            let zz = self.zz_32bit(dst);
            self.nd2nz(d, &slot, wsg, m.dg, zz);
            self.code.set_wait("MTE2_MTE1");
            self.code.line(format!(
                "CrossCoreSetFlag<2, PIPE_MTE2>({free});  // {slot} read"
            ));
        }
        Ok(())
    }

    /// Bytes of the workspace slots of one block of a split kernel.
    pub(super) fn workspace_per_block(&self) -> u64 {
        self.handoffs
            .iter()
            .map(|h| h.bytes.next_multiple_of(SLOT_ALIGN))
            .sum()
    }
}

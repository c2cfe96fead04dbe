//! The cube: `Mmad` into L0C, and which operands it reads transposed.

use pto_op::kernel::ir::{Inst, MemLevel, TileId};

use super::super::LowerError;
use super::super::plan::Geom;
use super::state::Lowering;

impl Lowering<'_> {
    /// How many instructions (and loop yields) read tile `t`.
    fn readers(&self, t: TileId) -> usize {
        let mut count = 0;
        Inst::visit(&self.program.body, &mut 0, &mut |_, inst| {
            count += inst.uses().filter(|u| *u == t).count();
        });
        count
    }

    /// Whether L1 tile `t` is moved to L0B for a matmul that reads it transposed, in a
    /// 32-bit dtype.
    pub(super) fn transposed_32bit(&self, t: TileId) -> bool {
        if self.ty(t).dtype.size_bytes() != 4 {
            return false;
        }
        let mut moved = Vec::new();
        Inst::visit(&self.program.body, &mut 0, &mut |_, inst| {
            if let Inst::Move { dst, src } = inst
                && *src == t
                && self.program.tiles[*dst].level == MemLevel::L0B
            {
                moved.push(*dst);
            }
        });
        moved.into_iter().any(|b| self.transposed(b))
    }

    /// Whether the matmul reading L0B tile `b` wants it transposed.
    pub(super) fn transposed(&self, b: TileId) -> bool {
        let mut found = false;
        Inst::visit(&self.program.body, &mut 0, &mut |_, inst| {
            if let Inst::Matmul {
                b: used,
                transpose_b: true,
                ..
            } = inst
                && *used == b
            {
                found = true;
            }
        });
        found
    }

    pub(super) fn matmul(
        &mut self,
        inst: &Inst,
        dst: TileId,
        a: TileId,
        b: TileId,
        acc: Option<TileId>,
    ) -> Result<(), LowerError> {
        if let Some(acc) = acc
            && self.readers(acc) != 1
        {
            return Err(self.unsupported(
                inst,
                format!("the accumulator {acc} is used after Mmad accumulates into it"),
            ));
        }
        self.declare(dst);
        let ga = Geom::of(self.ty(a));
        let gd = Geom::of(self.ty(dst));
        let k = ga.pitch;
        self.code.open("");
        self.code.line("MmadParams params;");
        self.code.line(format!("params.m = {};", gd.rows));
        self.code.line(format!("params.n = {};", gd.pitch));
        self.code.line(format!("params.k = {k};"));
        self.code.line(format!(
            "params.cmatrixInitVal = {};",
            if acc.is_none() { "true" } else { "false" }
        ));
        self.code.line(format!(
            "Mmad({}, {}, {}, params);",
            Lowering::name(dst),
            Lowering::name(a),
            Lowering::name(b)
        ));
        self.code.close();
        self.code.set_wait("M_FIX");
        Ok(())
    }
}

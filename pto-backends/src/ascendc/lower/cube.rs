//! The cube: `Mmad` into L0C, and which operands it reads transposed.

use pto_op::kernel::ir::{Inst, MemLevel, Program, TileId};

use super::super::plan::Geom;
use super::super::{LowerError, Soc, UNSUPPORTED_CALL};
use super::state::Lowering;

/// Refuses a program with a matmul the SoC's cube cannot do, before anything is lowered, so
/// that the error names the `Mmad` (the reason) rather than whichever load of its operands
/// comes first. Kirin's cube has no float accumulator (Mmad.md, tables 11 and 12): an f32,
/// f16 or bf16 matmul accumulating in f32 is refused there ([`LowerError::is_unsupported_on_soc`]).
pub(super) fn check_mmads(program: &Program, soc: Soc) -> Result<(), LowerError> {
    let mut refused = None;
    Inst::visit(&program.body, &mut 0, &mut |number, inst| {
        let Inst::Matmul { dst, a, .. } = inst else {
            return;
        };
        let (Some(a), Some(dst)) = (program.tile(*a), program.tile(*dst)) else {
            return;
        };
        let (operand, acc) = (a.dtype, dst.dtype);
        if !soc.supports(operand) || !soc.supports(acc) {
            // The dtype error of the lowering says more (the SoC cannot hold the type).
            return;
        }
        let message = match Soc::mmad_cap(operand, acc) {
            Some(cap) if soc.has(cap) => return,
            Some(cap) => format!(
                "{UNSUPPORTED_CALL} {} does not exist on {soc} ({}); a matmul of {operand} \
                 accumulating in {acc} has no cube path here (docs/deploying.md, \"What each \
                 SoC lowers\")",
                cap.row().call,
                cap.source(),
            ),
            None => format!(
                "{UNSUPPORTED_CALL} no Mmad of {operand} operands into {acc} on any SoC \
                 (Mmad.md, tables 7, 11, 12)"
            ),
        };
        refused.get_or_insert(LowerError::Unsupported {
            op: program.op.clone(),
            inst: number,
            mnemonic: inst.mnemonic().to_owned(),
            soc,
            arch: soc.arch(),
            message,
        });
    });
    refused.map_or(Ok(()), Err)
}

impl Lowering<'_> {
    /// How many instructions (and loop yields) read tile `t`.
    fn readers(&self, t: TileId) -> usize {
        let mut count = 0;
        Inst::visit(&self.program.body, &mut 0, &mut |_, inst| {
            count += inst.uses().filter(|u| *u == t).count();
        });
        count
    }

    /// Whether L1 tile `t` is laid out as rows of fractals (Zz) rather than Nz: a 32-bit
    /// right operand the cube reads as it is ([K, N]). The device's L0B is Zn (Mmad.md,
    /// table 2); a 32-bit [K, N] reaches it only through LoadDataWithTranspose, which
    /// transposes 16 x 16 squares of two adjacent 16 x 8 fractals, so the L1 tile must hold
    /// each square's two fractals side by side (LoadDataWithTranspose.md: "L1 Buffer上的矩阵
    /// 满足ZZ或ZN排布"; load_data_l12l0.asc, isL1Nz = false).
    pub(super) fn zz_32bit(&self, t: TileId) -> bool {
        if self.ty(t).dtype.size_bytes() != 4 {
            return false;
        }
        let mut read = Vec::new();
        Inst::visit(&self.program.body, &mut 0, &mut |_, inst| match inst {
            Inst::Move { dst, src } | Inst::Extract { dst, src, .. }
                if *src == t && self.program.tiles[*dst].level == MemLevel::L0B =>
            {
                read.push(*dst);
            }
            _ => {}
        });
        read.into_iter().any(|b| !self.transposed(b))
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
        let (operand, acc_dtype) = (self.ty(a).dtype, self.ty(dst).dtype);
        match Soc::mmad_cap(operand, acc_dtype) {
            Some(cap) => self.require_cap(inst, cap)?,
            None => {
                return Err(self.unsupported(
                    inst,
                    format!(
                        "no Mmad of {operand} operands into {acc_dtype} (Mmad.md, tables 7, 11, 12)"
                    ),
                ));
            }
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
        // L0C goes out (FIX) after the Mmad, and the next loads into L0A / L0B (MTE1) wait
        // until it has read them (data_copy_l0c2gm.asc: M_MTE1 after each Mmad).
        self.code.set_wait("M_FIX");
        self.code.set_wait("M_MTE1");
        Ok(())
    }
}

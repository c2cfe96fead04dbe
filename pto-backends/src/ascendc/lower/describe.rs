//! The comment on each lowered instruction: one line in the IR's terms.

use pto_op::kernel::ir::{Index, Inst, Operand, Program, TileId, TileType};

use super::cpp_expr::index;

/// One line on an instruction, in the IR's terms.
pub(super) fn describe(program: &Program, inst: &Inst) -> String {
    let ty = |t: &TileId| {
        program
            .tile(*t)
            .map_or_else(|| "?".to_owned(), TileType::to_string)
    };
    let opd = |o: &Operand| match o {
        Operand::Tile(t) => t.to_string(),
        Operand::Scalar(v) => format!("{v}"),
    };
    let global = |g: usize| program.globals.get(g).map_or("?", |g| g.name.as_str());
    let offs = |o: &[Index]| o.iter().map(index).collect::<Vec<_>>().join(", ");
    match inst {
        Inst::Load {
            dst,
            src,
            offsets,
            pad,
        } => format!(
            "{dst} = load {}[{}] pad {pad}: {}",
            global(src.0 as usize),
            offs(offsets),
            ty(dst)
        ),
        Inst::Store { dst, offsets, src } => format!(
            "store {}[{}] = {src}",
            global(dst.0 as usize),
            offs(offsets)
        ),
        Inst::Full { dst, value } => format!("{dst} = full {value}: {}", ty(dst)),
        Inst::Iota { dst, axis, start } => {
            format!(
                "{dst} = iota axis {axis} from {}: {}",
                index(start),
                ty(dst)
            )
        }
        Inst::Unary { dst, op, src } => format!("{dst} = {} {src}: {}", op.name(), ty(dst)),
        Inst::Binary { dst, op, lhs, rhs } => {
            format!(
                "{dst} = {} {}, {}: {}",
                op.name(),
                opd(lhs),
                opd(rhs),
                ty(dst)
            )
        }
        Inst::Compare { dst, op, lhs, rhs } => {
            format!(
                "{dst} = cmp.{} {}, {}: {}",
                op.name(),
                opd(lhs),
                opd(rhs),
                ty(dst)
            )
        }
        Inst::Select {
            dst,
            cond,
            on_true,
            on_false,
        } => format!(
            "{dst} = select {cond}, {}, {}: {}",
            opd(on_true),
            opd(on_false),
            ty(dst)
        ),
        Inst::Cast { dst, src } => format!("{dst} = cast {src}: {}", ty(dst)),
        Inst::Reduce { dst, op, src, axis } => {
            format!(
                "{dst} = reduce.{} {src} axis {axis}: {}",
                op.name(),
                ty(dst)
            )
        }
        Inst::Move { dst, src } => format!("{dst} = move {src}: {}", ty(dst)),
        Inst::Extract { dst, src, offsets } => {
            format!("{dst} = extract {src} {offsets:?}: {}", ty(dst))
        }
        Inst::Matmul {
            dst,
            a,
            b,
            acc,
            transpose_b,
        } => format!(
            "{dst} = matmul {a}, {b}{}{}: {}",
            if *transpose_b { "^T" } else { "" },
            acc.map(|t| format!(" + {t}")).unwrap_or_default(),
            ty(dst)
        ),
        Inst::Loop {
            var,
            count,
            params,
            init,
            ..
        } => format!(
            "loop {var} in 0..{count} carrying ({}) from ({})",
            params
                .iter()
                .map(|t| t.to_string())
                .collect::<Vec<_>>()
                .join(", "),
            init.iter()
                .map(|t| t.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

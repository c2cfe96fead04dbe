//! How the vector cores of a split AI core share a block program, and so what a kernel
//! traced for a device sees of its buffers.
//!
//! On a split core (the Ascend 910B: one cube core and `vector_cores` vector cores per AI
//! core, each vector core with its own UB) a block program that uses both the cube and the
//! vector unit (a *mix* program) runs its vector work on the vector cores together: each
//! takes an equal share of the rows of its UB tiles ([`row_split`]). Then the block holds
//! `vector_cores` x UB, and a kernel may size its UB tiles for that
//! (`Kernel::vector_cores`). A program whose rows do not split (the vector cores take turns,
//! block program by block program, each with whole tiles) and a program with vector work
//! only hold one vector core's UB. [`vector_cores_sharing`] is that rule, for the simulator's
//! buffer check and for `OpDef::trace_kernel_for`, which traces a kernel again for one vector
//! core when the program it traced for several does not split: the simulator, the
//! estimator and the Ascend C lowering all trace through it, so they see one program.

use super::ir::{Inst, MemLevel, Program, TileId};
use crate::device::{CubeVector, DeviceProfile};
use crate::dtype::DType;

pub use super::row_reduce::UB_ROW_ALIGN_ELEMS;

/// The vector cores that share a block program's vector work on `profile`, each holding its
/// share of the program's UB tiles: the profile's `vector_cores` on a split core for a mix
/// program whose rows split ([`row_split`]), else 1 (a coupled core, a program with vector
/// work only, or one whose vector cores take turns with whole tiles).
///
/// ```
/// use pto_kernel::{Kernel, vector_split::vector_cores_sharing};
/// use pto_kernel::{DType, DeviceProfile, Shape};
///
/// let mut k = Kernel::new("doc.split");
/// let x = k.input("x", Shape::from([64, 64]), DType::F32);
/// let y = k.output("y", Shape::from([64, 64]), DType::F32);
/// let t = k.load(&x, (0, 0), [64, 64]).unwrap();
/// k.store(&y, (0, 0), &(t * 2.0)).unwrap();
/// let program = k.finish().unwrap();
/// // Vector work only: one vector core holds the block program's tiles, whole.
/// let ascend = DeviceProfile::builtin("ascend910b").unwrap();
/// assert_eq!(vector_cores_sharing(&ascend, &program), 1);
///
/// // A matmul whose 64 output rows go to UB, are scaled and stored: each of the two vector
/// // cores takes 32 of them (not on a coupled Kirin core).
/// let mut k = Kernel::new("doc.mix");
/// let a = k.input("a", Shape::from([64, 64]), DType::F16);
/// let b = k.input("b", Shape::from([64, 64]), DType::F16);
/// let y = k.output("y", Shape::from([64, 64]), DType::F32);
/// let at = k.load_l1(&a, (0, 0), [64, 64]).unwrap();
/// let bt = k.load_l1(&b, (0, 0), [64, 64]).unwrap();
/// let c = k.matmul(&at, &bt, None, false).unwrap().to_ub(DType::F32);
/// k.store(&y, (0, 0), &(c * 2.0)).unwrap();
/// let program = k.finish().unwrap();
/// assert_eq!(vector_cores_sharing(&ascend, &program), 2);
/// let kirin = DeviceProfile::builtin("kirin9030").unwrap();
/// assert_eq!(vector_cores_sharing(&kirin, &program), 1);
/// ```
pub fn vector_cores_sharing(profile: &DeviceProfile, program: &Program) -> usize {
    let cores = split_vector_cores(profile);
    if cores > 1 && mixes_cube_and_vector(program) && row_split(program).is_ok() {
        cores
    } else {
        1
    }
}

/// The vector cores of one AI core of `profile` that may share a block program:
/// `vector_cores` on a split core, 1 on a coupled one (what `Kernel::vector_cores` returns
/// to a kernel traced for the profile before its program is known).
pub fn split_vector_cores(profile: &DeviceProfile) -> usize {
    match profile.cube_vector {
        CubeVector::Split => (profile.vector_cores as usize).max(1),
        CubeVector::Coupled => 1,
    }
}

/// The bytes of `level` one block program of `program` may use on `profile`: the
/// profile's capacity, times [`vector_cores_sharing`] for UB.
pub fn block_capacity(profile: &DeviceProfile, program: &Program, level: MemLevel) -> Option<u64> {
    let bytes = profile.capacity(level)?;
    Some(match level {
        MemLevel::Ub => bytes.saturating_mul(vector_cores_sharing(profile, program) as u64),
        _ => bytes,
    })
}

/// Whether `program` has tiles both in a cube buffer (L1, L0A/B/C) and in UB.
pub fn mixes_cube_and_vector(program: &Program) -> bool {
    let cube = program
        .tiles
        .iter()
        .any(|t| !matches!(t.level, MemLevel::Ub | MemLevel::Gm));
    let vector = program.tiles.iter().any(|t| t.level == MemLevel::Ub);
    cube && vector
}

/// The row count `R` by which the two AIVs of a mix kernel can share `program`'s vector
/// work (each takes `R / 2` rows), or why they cannot.
///
/// The row axis of a UB tile is its second last. Every UB tile of rank 2 or more has `R`
/// rows (split: each AIV holds its half; leading axes of size 1) or one row (a row
/// broadcast along the rows: each AIV holds it whole); `R` is the rows of the tiles handed
/// between the cube and the vector cores, and must be even, each half a whole number of
/// 32-byte blocks. No vector instruction may mix rows: a reduction along the row axis (a
/// column reduction) keeps the take-turns form, as does a store of a tile held whole.
pub fn row_split(program: &Program) -> Result<usize, String> {
    let tile = |t: TileId| &program.tiles[t];
    let mut handed = Vec::new();
    Inst::visit(&program.body, &mut 0, &mut |_, inst| {
        if let Inst::Move { dst, src } = inst {
            match (tile(*src).level, tile(*dst).level) {
                (MemLevel::L0C, MemLevel::Ub) => handed.push(*dst),
                (MemLevel::Ub, MemLevel::L1) => handed.push(*src),
                _ => {}
            }
        }
    });
    let Some(&first) = handed.first() else {
        return Err("no tile is handed between the cube and the vector cores".to_owned());
    };
    let rows_of = |t: TileId| {
        let shape = &tile(t).shape;
        (shape.len() >= 2).then(|| shape[shape.len() - 2])
    };
    let Some(rows) = rows_of(first) else {
        return Err(format!("the handed-over tile {first} has no row axis"));
    };
    if !rows.is_multiple_of(2) {
        return Err(format!(
            "the handed-over tile {first} has {rows} rows, an odd count"
        ));
    }
    if let Some(other) = handed.iter().find(|t| rows_of(**t) != Some(rows)) {
        return Err(format!(
            "the handed-over tiles {first} and {other} have different row counts"
        ));
    }
    let half = rows / 2;
    for (i, ty) in program.tiles.iter().enumerate() {
        let t = TileId::from_index(i);
        if ty.level != MemLevel::Ub || ty.shape.len() < 2 {
            continue;
        }
        let rank = ty.shape.len();
        match ty.shape[rank - 2] {
            1 => {}
            r if r == rows => {
                if ty.shape[..rank - 2].iter().any(|&d| d != 1) {
                    return Err(format!(
                        "tile {t} ({ty}) has a leading axis over 1: its halves are not whole rows"
                    ));
                }
                let pitch = ty.shape[rank - 1].next_multiple_of(UB_ROW_ALIGN_ELEMS);
                if ty.dtype != DType::Bool
                    && !(half * pitch * ty.dtype.size_bytes()).is_multiple_of(32)
                {
                    return Err(format!(
                        "half the rows of tile {t} ({ty}) are not a whole number of 32-byte blocks"
                    ));
                }
            }
            r => {
                return Err(format!(
                    "tile {t} ({ty}) has {r} rows, neither the {rows} of the handed-over tiles nor 1"
                ));
            }
        }
    }
    let split = |t: TileId| {
        let ty = tile(t);
        ty.level == MemLevel::Ub && ty.shape.len() >= 2 && ty.shape[ty.shape.len() - 2] == rows
    };
    let mut problem = None;
    Inst::visit(&program.body, &mut 0, &mut |at, inst| {
        if problem.is_some() {
            return;
        }
        match inst {
            Inst::Reduce { src, axis, .. }
                if split(*src) && *axis + 2 == tile(*src).shape.len() =>
            {
                problem = Some(format!(
                    "instruction {at} (`{}`) reduces {src} along its rows (a column reduction)",
                    inst.mnemonic()
                ));
            }
            Inst::Store { src, .. } if tile(*src).level == MemLevel::Ub && !split(*src) => {
                problem = Some(format!(
                    "instruction {at} (`{}`) stores {src}, which each vector core would hold whole",
                    inst.mnemonic()
                ));
            }
            Inst::Load { dst, offsets, .. }
            | Inst::Store {
                src: dst, offsets, ..
            } if split(*dst) && offsets.len() < 2 => {
                problem = Some(format!(
                    "instruction {at} (`{}`) moves {dst} to or from a tensor without a row axis",
                    inst.mnemonic()
                ));
            }
            _ => {}
        }
    });
    match problem {
        Some(problem) => Err(problem),
        None => Ok(rows),
    }
}

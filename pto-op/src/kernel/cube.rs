//! Building blocks for kernels on the cube unit.

use crate::error::OpError;

use super::{Global, Kernel};

/// Output rows of one block program. A 128 x 64 f32 accumulator is 32 KiB of L0C, so the
/// running sum and the next partial product (64 KiB) fit the 64 KiB of L0C of kirin9030,
/// the smallest of the built-in profiles; 128 rows per A tile is the `baseM` of the public
/// Ascend GEMM kernels (pto-isa `kernels/manual/a2a3/gemm_performance`), which halves the
/// B traffic per multiply-accumulate against 64 rows.
pub const TILE_M: usize = 128;

/// Output columns of one block program (see [`TILE_M`]).
pub const TILE_N: usize = 64;


/// Bytes of one row of an A tile (and one column of a B tile) per K step: 128 f16 or bf16
/// elements, 64 f32 ones. An A tile is then 32 KiB (double-buffered within the 64 KiB of
/// L0A of ascend910b and kirinx90, single within the 32 KiB of kirin9030) and a B tile
/// 16 KiB.
pub const TILE_K_BYTES: usize = 256;

/// The cube works on 16 x 16 fractals: tile dims are multiples of this.
pub const FRACTAL: usize = 16;

/// A tile dim: `tile`, or `dim` rounded up to a fractal when the tensor is smaller, so
/// that small operands do not pay for a full tile of padding.
pub fn tile_dim(tile: usize, dim: usize) -> usize {
    tile.min(dim.max(1).next_multiple_of(FRACTAL))
}

/// Traces `y = a @ b` for rank-2 globals as a tiled cube kernel: one block program per
/// [`TILE_M`] x [`TILE_N`] output tile, a K-loop (`fold`) carrying the f32 accumulator in
/// L0C, masked loads to L1 so shapes need not divide the tiles, and the result converted to
/// `y`'s dtype on its way out.
///
/// ```
/// use pto_op::kernel::{Kernel, cube::tiled_matmul};
/// use pto_op::{DType, Shape};
/// let mut k = Kernel::new("doc.matmul");
/// let a = k.input("a", Shape::from([100, 70]), DType::F16);
/// let b = k.input("b", Shape::from([70, 50]), DType::F16);
/// let y = k.output("y", Shape::from([100, 50]), DType::F16);
/// tiled_matmul(&mut k, &a, &b, &y).unwrap();
/// let program = k.finish().unwrap();
/// assert_eq!(program.grid, 1); // one 128 x 64 tile covers the 100 x 50 output
/// ```
pub fn tiled_matmul(k: &mut Kernel, a: &Global, b: &Global, y: &Global) -> Result<(), OpError> {
    let (m, depth) = a.dims2()?;
    let (_, n) = b.dims2()?;
    let (tm, tn) = (tile_dim(TILE_M, m), tile_dim(TILE_N, n));
    let tk = tile_dim(TILE_K_BYTES / a.dtype().size_bytes(), depth);
    let col_tiles = n.div_ceil(tn);
    k.grid(m.div_ceil(tm) * col_tiles)?;
    let pid = k.program_id();
    let r0 = (pid / col_tiles) * tm;
    let c0 = (pid % col_tiles) * tn;

    // The first K step starts the L0C accumulator (there is no zero-filled L0C tile); the
    // fold carries it through the rest.
    let a0 = k.load_l1(a, (r0, 0), [tm, tk])?;
    let b0 = k.load_l1(b, (0, c0), [tk, tn])?;
    let first = k.matmul(&a0, &b0, None, false)?;
    let k_steps = depth.div_ceil(tk).max(1);
    let acc = k.fold(k_steps - 1, &[first], |k, step, carried| {
        let k0 = (step + 1) * tk;
        let at = k.load_l1(a, (r0, k0), [tm, tk])?;
        let bt = k.load_l1(b, (k0, c0), [tk, tn])?;
        Ok(vec![k.matmul(&at, &bt, Some(&carried[0]), false)?])
    })?;
    k.store(y, (r0, c0), &acc[0].to_ub(y.dtype()))
}

//! Building blocks for kernels on the cube unit.

use crate::error::OpError;

use super::{Global, Kernel};

/// The base tiles of a GEMM on the cube: output `[m, n]` per block program, `k` elements
/// per K-step in L0A / L0B, and `steps` K-steps staged in L1 per load.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GemmTiles {
    /// Output rows per block program (`baseM`).
    pub m: usize,
    /// Output columns per block program (`baseN`).
    pub n: usize,
    /// Elements of K per cube step (`baseK`).
    pub k: usize,
    /// K-steps staged in L1 by one load (`stepKa = stepKb`).
    pub steps: usize,
}

/// Bytes of K per cube step: 64 f16 / bf16 elements or 32 f32 ones, the `baseK = 64` of
/// the public Ascend GEMM kernel for fp16 (pto-isa `kernels/manual/a2a3/gemm_performance`).
pub const K_STEP_BYTES: usize = 128;

/// K-steps staged in L1 per load: that kernel's `stepKa = stepKb = 4`.
pub const STAGED_STEPS: usize = 4;

/// Output tile shapes tried, largest first: the public kernel's 128 x 256 `baseM x baseN`,
/// then smaller ones for smaller L0C.
const OUTPUT_TILES: [(usize, usize); 3] = [(128, 256), (128, 128), (64, 64)];

/// The L0A / L0B / L0C / L1 / UB capacities tiles are sized for when the kernel is traced
/// without a device: kirin9030's, the smallest built-in profile's, so the kernel fits
/// every built-in device.
const PORTABLE: [u64; 5] = [32 * 1024, 32 * 1024, 64 * 1024, 512 * 1024, 118 * 1024];

impl GemmTiles {
    /// The largest base tiles that fit buffers of `[l0a, l0b, l0c, l1, ub]` bytes for
    /// inputs of `in_bytes` per element and an output of `out_bytes`: the f32 accumulator
    /// once in L0C (the cube accumulates in place), the A and B K-steps twice in L0A and
    /// L0B (double-buffered), the staged A and B tiles twice in L1, the output tile once in
    /// UB. Falls back to the smallest candidate with one staged step.
    pub fn fitting(caps: [u64; 5], in_bytes: usize, out_bytes: usize) -> GemmTiles {
        let k = K_STEP_BYTES / in_bytes;
        for (m, n) in OUTPUT_TILES {
            for steps in (1..=STAGED_STEPS).rev() {
                let tiles = GemmTiles { m, n, k, steps };
                if tiles.fits(caps, in_bytes, out_bytes) {
                    return tiles;
                }
            }
        }
        let (m, n) = OUTPUT_TILES[OUTPUT_TILES.len() - 1];
        GemmTiles { m, n, k, steps: 1 }
    }

    /// Every base tiling a tuner may try for buffers of `[l0a, l0b, l0c, l1, ub]` bytes:
    /// each output tile of [`TUNING_TILES`] with 1, 2 or 4 staged K-steps, where it fits as
    /// [`GemmTiles::fitting`] requires; [`GemmTiles::fitting`]'s own choice first.
    ///
    /// ```
    /// use pto_kernel::cube::GemmTiles;
    /// // ascend910b's L0A, L0B, L0C, L1 and UB, fp16 in and out.
    /// let caps = [65536, 65536, 131072, 524160, 188416];
    /// let all = GemmTiles::candidates(caps, 2, 2);
    /// assert_eq!(all[0], GemmTiles::fitting(caps, 2, 2));
    /// assert!(all.iter().any(|t| (t.m, t.n) == (256, 128)));
    /// ```
    pub fn candidates(caps: [u64; 5], in_bytes: usize, out_bytes: usize) -> Vec<GemmTiles> {
        let first = GemmTiles::fitting(caps, in_bytes, out_bytes);
        let mut all = vec![first];
        let k = K_STEP_BYTES / in_bytes;
        for (m, n) in TUNING_TILES {
            for steps in [4, 2, 1] {
                let tiles = GemmTiles { m, n, k, steps };
                if tiles.fits(caps, in_bytes, out_bytes) && !all.contains(&tiles) {
                    all.push(tiles);
                }
            }
        }
        all
    }

    /// Whether these tiles fit buffers of `[l0a, l0b, l0c, l1, ub]` bytes (see
    /// [`GemmTiles::fitting`]).
    pub fn fits(&self, caps: [u64; 5], in_bytes: usize, out_bytes: usize) -> bool {
        let [l0a, l0b, l0c, l1, ub] = caps;
        let b = |x: usize| x as u64;
        let (m, n, k, steps) = (self.m, self.n, self.k, self.steps);
        b(m * n * 4) <= l0c
            && b(2 * m * k * in_bytes) <= l0a
            && b(2 * k * n * in_bytes) <= l0b
            && b(2 * (m + n) * k * steps * in_bytes) <= l1
            && b(m * n * out_bytes.max(4)) <= ub
    }

    /// The tiles for the device `k` is traced for ([`Kernel::buffer_capacity`]), or for
    /// every built-in profile when it is traced without one.
    pub fn for_kernel(k: &Kernel, in_bytes: usize, out_bytes: usize) -> GemmTiles {
        GemmTiles::fitting(GemmTiles::capacities(k), in_bytes, out_bytes)
    }

    /// The `[l0a, l0b, l0c, l1, ub]` bytes tiles are sized for in `k`: the device's
    /// ([`Kernel::buffer_capacity`]), or every built-in profile's without one.
    pub fn capacities(k: &Kernel) -> [u64; 5] {
        use super::ir::MemLevel::{L0A, L0B, L0C, L1, Ub};
        let mut caps = PORTABLE;
        for (cap, level) in caps.iter_mut().zip([L0A, L0B, L0C, L1, Ub]) {
            if let Some(bytes) = k.buffer_capacity(level) {
                *cap = bytes;
            }
        }
        caps
    }
}

/// Output tile shapes a tuner tries ([`GemmTiles::candidates`]): the public kernels' 128 x
/// 256 and 256 x 128 bases (catlass and pto-isa choose between them per shape), then
/// smaller ones, which put more tiles on the cores when the output is small.
pub const TUNING_TILES: [(usize, usize); 6] = [
    (128, 256),
    (256, 128),
    (128, 128),
    (64, 128),
    (128, 64),
    (64, 64),
];

/// The cube works on 16 x 16 fractals: tile dims are multiples of this.
pub const FRACTAL: usize = 16;

/// A tile dim: `tile`, or `dim` rounded up to a fractal when the tensor is smaller, so
/// that small operands do not pay for a full tile of padding.
pub fn tile_dim(tile: usize, dim: usize) -> usize {
    tile.min(dim.max(1).next_multiple_of(FRACTAL))
}

/// Traces `y = a @ b` for rank-2 globals as a tiled cube kernel, the way the public Ascend
/// GEMM kernels are tiled ([`GemmTiles`]): one block program per `m x n` output tile; a
/// loop over K in stages of `steps` K-steps, each stage one masked load of an A and a B
/// tile to L1; each K-step extracted from the staged tiles to L0A and L0B
/// ([`Tile::extract`](super::Tile::extract)) and multiplied into the f32 accumulator, which
/// stays in L0C across the whole K loop; the result converted to `y`'s dtype on its way
/// out. Tiles are sized for the device the kernel is traced for
/// ([`Kernel::buffer_capacity`]): 128 x 256 output tiles with 4 staged K-steps of 64 fp16
/// elements on ascend910b, 128 x 128 on kirin9030. Edge tiles are loaded masked (zero
/// padding), so shapes need not divide the tiles.
///
/// ```
/// use pto_kernel::{Kernel, cube::tiled_matmul};
/// use pto_kernel::{DType, DeviceProfile, Shape};
/// let mut k = Kernel::new("doc.matmul")
///     .with_buffers(DeviceProfile::builtin("ascend910b").unwrap().buffers);
/// let a = k.input("a", Shape::from([300, 1000]), DType::F16);
/// let b = k.input("b", Shape::from([1000, 500]), DType::F16);
/// let y = k.output("y", Shape::from([300, 500]), DType::F16);
/// tiled_matmul(&mut k, &a, &b, &y).unwrap();
/// let program = k.finish().unwrap();
/// assert_eq!(program.grid, 3 * 2); // 128 x 256 output tiles
/// ```
pub fn tiled_matmul(k: &mut Kernel, a: &Global, b: &Global, y: &Global) -> Result<(), OpError> {
    let tiles = GemmTiles::for_kernel(k, a.dtype().size_bytes(), y.dtype().size_bytes());
    tiled_matmul_with(k, a, b, y, tiles)
}

/// [`tiled_matmul`] with the base tiles given (a tuner's candidate) rather than the largest
/// that fit.
pub fn tiled_matmul_with(
    k: &mut Kernel,
    a: &Global,
    b: &Global,
    y: &Global,
    tiles: GemmTiles,
) -> Result<(), OpError> {
    use super::ir::MemLevel::{L0A, L0B};
    let (m, depth) = a.dims2()?;
    let (_, n) = b.dims2()?;
    let (tm, tn) = (tile_dim(tiles.m, m), tile_dim(tiles.n, n));
    let tk = tile_dim(tiles.k, depth);
    let k_steps = depth.div_ceil(tk).max(1);
    let steps = tiles.steps.min(k_steps);
    let stages = k_steps.div_ceil(steps);
    let staged = tk * steps;
    let col_tiles = n.div_ceil(tn);
    k.grid(m.div_ceil(tm) * col_tiles)?;
    let pid = k.program_id();
    let r0 = (pid / col_tiles) * tm;
    let c0 = (pid % col_tiles) * tn;

    // One stage: the staged A [tm, staged] and B [staged, tn] in L1, then a K-step at a
    // time into L0A / L0B and the cube.
    let stage = |k: &mut Kernel,
                 k0: super::Idx,
                 acc: Option<super::Tile>|
     -> Result<super::Tile, OpError> {
        let a1 = k.load_l1(a, (r0, k0), [tm, staged])?;
        let b1 = k.load_l1(b, (k0, c0), [staged, tn])?;
        let mut acc = acc;
        for step in 0..steps {
            let a0 = a1.extract(L0A, &[0, step * tk], &[tm, tk]);
            let b0 = b1.extract(L0B, &[step * tk, 0], &[tk, tn]);
            acc = Some(k.matmul(&a0, &b0, acc.as_ref(), false)?);
        }
        acc.ok_or_else(|| OpError::invalid("a stage has at least one K-step"))
    };
    let first = stage(k, super::Idx::from(0), None)?;
    let acc = k.fold(stages - 1, &[first], |k, i, carried| {
        Ok(vec![stage(k, (i + 1) * staged, Some(carried[0].clone()))?])
    })?;
    k.store(y, (r0, c0), &acc[0].to_ub(y.dtype()))
}

/// Traces `y = a @ b` for globals `a [.., m, k]`, `b [.., k, n]` and `y [.., m, n]` whose
/// batch dims (all but the last two) broadcast numpy-style to `y`'s, as the tiled cube
/// kernel of [`tiled_matmul`] for each matrix of the batch: one block program per matrix
/// and `m x n` output tile (the matrix is `pid / tiles per matrix`), its batch index taken
/// apart into the index along each batch dim of `y`, and read as 0 along a dim `a` or `b`
/// broadcasts (of size 1, or absent). The tiles are loaded and stored as rank-2 tiles of one
/// matrix of the batch (a tile that drops the leading dims of its global), so the edges of
/// each matrix are masked: rows and columns outside it read as 0 and are not stored.
///
/// ```
/// use pto_kernel::{Kernel, cube::batched_matmul};
/// use pto_kernel::{DType, DeviceProfile, Shape};
/// let mut k = Kernel::new("doc.batch_matmul")
///     .with_buffers(DeviceProfile::builtin("ascend910b").unwrap().buffers);
/// // 2 x 3 heads of [40, 64] @ [64, 40]; b is shared by the 2 batches.
/// let a = k.input("a", Shape::from([2, 3, 40, 64]), DType::F16);
/// let b = k.input("b", Shape::from([3, 64, 40]), DType::F16);
/// let y = k.output("y", Shape::from([2, 3, 40, 40]), DType::F16);
/// batched_matmul(&mut k, &a, &b, &y).unwrap();
/// let program = k.finish().unwrap();
/// assert_eq!(program.grid, 2 * 3); // one 48 x 48 output tile per matrix
/// ```
pub fn batched_matmul(k: &mut Kernel, a: &Global, b: &Global, y: &Global) -> Result<(), OpError> {
    use super::Idx;
    use super::ir::MemLevel::{L0A, L0B};
    let (ad, bd, yd) = (a.shape().dims(), b.shape().dims(), y.shape().dims());
    let (Some(&[m, depth]), Some(&[_, n]), Some(batch_dims)) = (
        ad.last_chunk::<2>().map(|c| c.as_slice()),
        bd.last_chunk::<2>().map(|c| c.as_slice()),
        yd.len().checked_sub(2).map(|lead| &yd[..lead]),
    ) else {
        return Err(OpError::invalid(format!(
            "a batched matmul takes globals of rank >= 2, got a {}, b {}, y {}",
            a.shape(),
            b.shape(),
            y.shape()
        )));
    };
    if ad.len() > yd.len() || bd.len() > yd.len() {
        return Err(OpError::invalid(format!(
            "the batch of y {} is the broadcast of those of a {} and b {}",
            y.shape(),
            a.shape(),
            b.shape()
        )));
    }
    let tiles = GemmTiles::for_kernel(k, a.dtype().size_bytes(), y.dtype().size_bytes());
    let (tm, tn) = (tile_dim(tiles.m, m), tile_dim(tiles.n, n));
    let tk = tile_dim(tiles.k, depth);
    let k_steps = depth.div_ceil(tk).max(1);
    let steps = tiles.steps.min(k_steps);
    let stages = k_steps.div_ceil(steps);
    let staged = tk * steps;
    let col_tiles = n.div_ceil(tn);
    let per_matrix = m.div_ceil(tm) * col_tiles;
    let matrices: usize = batch_dims.iter().product();
    k.grid(matrices * per_matrix)?;
    let pid = k.program_id();
    let matrix = pid / per_matrix;
    let tile = pid % per_matrix;
    let r0 = (tile / col_tiles) * tm;
    let c0 = (tile % col_tiles) * tn;
    // The index of the matrix along each batch dim of y, row-major.
    let mut y_batch: Vec<Idx> = vec![Idx::from(0usize); batch_dims.len()];
    let mut stride = 1usize;
    for (d, &size) in batch_dims.iter().enumerate().rev() {
        y_batch[d] = (matrix / stride) % size;
        stride *= size;
    }
    // The batch offsets of an operand of dims `dims`: its batch dims are the last ones of
    // y's, and one of size 1 is broadcast (index 0).
    let batch_of = |dims: &[usize]| -> Vec<Idx> {
        let lead = dims.len() - 2;
        let skip = batch_dims.len() - lead;
        (0..lead)
            .map(|i| match dims[i] {
                1 => Idx::from(0usize),
                _ => y_batch[skip + i],
            })
            .collect()
    };
    let (a_batch, b_batch) = (batch_of(ad), batch_of(bd));
    let at = |rest: [Idx; 2], batch: &[Idx]| -> Vec<Idx> {
        let mut offsets = batch.to_vec();
        offsets.extend(rest);
        offsets
    };

    // One stage, as in `tiled_matmul`: the staged A [tm, staged] and B [staged, tn] of this
    // matrix in L1, then a K-step at a time into L0A / L0B and the cube.
    let stage =
        |k: &mut Kernel, k0: Idx, acc: Option<super::Tile>| -> Result<super::Tile, OpError> {
            let a1 = k.load_l1(a, at([r0, k0], &a_batch), [tm, staged])?;
            let b1 = k.load_l1(b, at([k0, c0], &b_batch), [staged, tn])?;
            let mut acc = acc;
            for step in 0..steps {
                let a0 = a1.extract(L0A, &[0, step * tk], &[tm, tk]);
                let b0 = b1.extract(L0B, &[step * tk, 0], &[tk, tn]);
                acc = Some(k.matmul(&a0, &b0, acc.as_ref(), false)?);
            }
            acc.ok_or_else(|| OpError::invalid("a stage has at least one K-step"))
        };
    let first = stage(k, Idx::from(0usize), None)?;
    let acc = k.fold(stages - 1, &[first], |k, i, carried| {
        Ok(vec![stage(k, (i + 1) * staged, Some(carried[0].clone()))?])
    })?;
    k.store(y, at([r0, c0], &y_batch), &acc[0].to_ub(y.dtype()))
}

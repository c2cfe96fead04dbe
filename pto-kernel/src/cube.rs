//! Building blocks for kernels on the cube unit.

use crate::device::PerBuffer;
use crate::dtype::DType;
use crate::error::OpError;
use crate::ir::{MemLevel, TileType};
use crate::ub_plan::Geom;

use super::{Global, Idx, Kernel, Tile};

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
                if fits(tiles.reserved_bytes(in_bytes, out_bytes), caps) {
                    return tiles;
                }
            }
        }
        let (m, n) = OUTPUT_TILES[OUTPUT_TILES.len() - 1];
        GemmTiles { m, n, k, steps: 1 }
    }

    /// What these tiles reserve in each buffer, before any tracing, as [`GemmTiles::fitting`]
    /// counts it: the f32 `[m, n]` accumulator once in L0C, the A and B K-steps twice in
    /// L0A and L0B (double-buffered), the staged A and B tiles twice in L1, the output tile
    /// once in UB (at 4 bytes an element at least, the L0C -> UB conversion's). What is
    /// left of a device's buffers is what a prologue or an epilogue may take
    /// ([`ExtraTiles`], [`GemmPlan::new`]).
    ///
    /// ```
    /// use pto_kernel::cube::GemmTiles;
    /// let tiles = GemmTiles { m: 128, n: 256, k: 64, steps: 4 };
    /// let reserved = tiles.reserved_bytes(2, 2);
    /// assert_eq!(reserved.l0c, 128 * 256 * 4);
    /// assert_eq!(reserved.l1, 2 * (128 + 256) * 64 * 4 * 2);
    /// assert_eq!(reserved.ub, 128 * 256 * 4);
    /// ```
    pub fn reserved_bytes(&self, in_bytes: usize, out_bytes: usize) -> PerBuffer {
        let (m, n, k, steps) = (
            self.m as u64,
            self.n as u64,
            self.k as u64,
            self.steps as u64,
        );
        let in_bytes = in_bytes as u64;
        PerBuffer {
            ub: m * n * (out_bytes as u64).max(4),
            l1: 2 * (m + n) * k * steps * in_bytes,
            l0a: 2 * m * k * in_bytes,
            l0b: 2 * k * n * in_bytes,
            l0c: m * n * 4,
        }
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

    /// Whether these tiles fit buffers of `[l0a, l0b, l0c, l1, ub]` bytes, as
    /// [`GemmTiles::fitting`] counts them ([`GemmTiles::reserved_bytes`]).
    pub fn fits(&self, caps: [u64; 5], in_bytes: usize, out_bytes: usize) -> bool {
        fits(self.reserved_bytes(in_bytes, out_bytes), caps)
    }

    /// The `[l0a, l0b, l0c, l1, ub]` bytes tiles are sized for in `k`: the device's
    /// ([`Kernel::buffer_capacity`]), or every built-in profile's without one.
    pub fn capacities(k: &Kernel) -> [u64; 5] {
        capacities(k)
    }

    /// The tiles for the device `k` is traced for ([`Kernel::buffer_capacity`]), or for
    /// every built-in profile when it is traced without one.
    pub fn for_kernel(k: &Kernel, in_bytes: usize, out_bytes: usize) -> GemmTiles {
        GemmTiles::fitting(capacities(k), in_bytes, out_bytes)
    }
}

/// Whether `reserved` fits buffers of `[l0a, l0b, l0c, l1, ub]` bytes.
fn fits(reserved: PerBuffer, caps: [u64; 5]) -> bool {
    let [l0a, l0b, l0c, l1, ub] = caps;
    reserved.l0a <= l0a
        && reserved.l0b <= l0b
        && reserved.l0c <= l0c
        && reserved.l1 <= l1
        && reserved.ub <= ub
}

/// The buffers of the device `k` is traced for, `[l0a, l0b, l0c, l1, ub]`, or those of
/// the smallest built-in profile traced without one.
fn capacities(k: &Kernel) -> [u64; 5] {
    use MemLevel::{L0A, L0B, L0C, L1, Ub};
    let mut caps = PORTABLE;
    for (cap, level) in caps.iter_mut().zip([L0A, L0B, L0C, L1, Ub]) {
        *cap = k.buffer_capacity(level).unwrap_or(*cap);
    }
    caps
}

/// The shape of an extra UB tile of a GEMM's prologue or epilogue, relative to the output
/// tile `[m, n]` of a block program.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExtraShape {
    /// `[m, n]`, the output tile's shape (a dequantised or activated copy of it).
    Output,
    /// `[1, n]`, a row along the output's columns (a per-channel scale, a bias).
    Row,
    /// `[m, 1]`, a column along its rows (a per-row statistic).
    Column,
}

/// The tiles a cube kernel keeps beside the GEMM's own: UB tiles sized by the output tile
/// (each counted as the Ascend C lowering reserves it, rows padded to 32 bytes:
/// [`Geom`]), and fixed UB and L1 bytes. [`GemmPlan::new`] sizes the GEMM's tiles so that
/// both fit.
///
/// ```
/// use pto_kernel::DType;
/// use pto_kernel::cube::{ExtraShape, ExtraTiles};
/// // An f32 copy of the output tile, an f32 scale row and an f32 bias row.
/// let extra = ExtraTiles::new()
///     .ub_tile(ExtraShape::Output, DType::F32)
///     .ub_tile(ExtraShape::Row, DType::F32)
///     .ub_tile(ExtraShape::Row, DType::F32);
/// assert_eq!(extra.ub_bytes_for(128, 256), 128 * 256 * 4 + 2 * 256 * 4);
/// // A [m, 1] f16 column pads each row to 16 elements (32 bytes).
/// let column = ExtraTiles::new().ub_tile(ExtraShape::Column, DType::F16);
/// assert_eq!(column.ub_bytes_for(128, 256), 128 * 32);
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ExtraTiles {
    ub_tiles: Vec<(ExtraShape, DType)>,
    ub: u64,
    l1: u64,
}

impl ExtraTiles {
    /// No extra tiles: a plain GEMM.
    pub fn new() -> ExtraTiles {
        ExtraTiles::default()
    }

    /// One more UB tile of `shape` and `dtype` at the epilogue's peak.
    pub fn ub_tile(mut self, shape: ExtraShape, dtype: DType) -> ExtraTiles {
        self.ub_tiles.push((shape, dtype));
        self
    }

    /// `bytes` more of UB whatever the output tile (a loaded vector of fixed length).
    pub fn ub_bytes(mut self, bytes: u64) -> ExtraTiles {
        self.ub += bytes;
        self
    }

    /// `bytes` more of L1 (a prologue tile staged there).
    pub fn l1_bytes(mut self, bytes: u64) -> ExtraTiles {
        self.l1 += bytes;
        self
    }

    /// The UB bytes of the extra tiles for an output tile of `[m, n]`.
    pub fn ub_bytes_for(&self, m: usize, n: usize) -> u64 {
        let tile_bytes = |(shape, dtype): &(ExtraShape, DType)| {
            let shape = match shape {
                ExtraShape::Output => vec![m, n],
                ExtraShape::Row => vec![1, n],
                ExtraShape::Column => vec![m, 1],
            };
            Geom::of(&TileType {
                shape,
                dtype: *dtype,
                level: MemLevel::Ub,
            })
            .bytes
        };
        self.ub + self.ub_tiles.iter().map(tile_bytes).sum::<u64>()
    }

    /// The L1 bytes of the extra tiles.
    pub fn l1_bytes_for(&self) -> u64 {
        self.l1
    }
}

/// Output tiles a [`GemmPlan`] chooses from, largest first.
const PLAN_OUTPUT_TILES: [(usize, usize); 5] =
    [(128, 256), (128, 128), (64, 128), (64, 64), (32, 64)];

/// The tiling of a cube kernel `y = a @ b` (then the author's epilogue) for one device:
/// the GEMM's tiles sized so that they and the author's [`ExtraTiles`] fit its buffers,
/// and the output tile chosen to spread the block programs over its AI cores.
///
/// Two steps, as for row tiles: among the output tiles (128 x 256, 128 x 128, 64 x 128,
/// 64 x 64, 32 x 64, each clipped to the matrix rounded up to the 16 x 16 fractal) that
/// fit with the extra tiles, the **fewest waves** of block programs over the cores
/// (`ceil(programs / cores)`), then the **smallest** tile that keeps that many waves, so
/// that no core idles while another holds two tiles' work: a `[256, 512]` output on
/// ascend910b (24 cores) is 16 programs of 64 x 128 rather than 4 of 128 x 256 (which
/// kept 20 cores idle; 32 of 64 x 64 would take two waves). On a device of one core (the Kirin profiles) every tile has as many
/// waves as programs, and the largest that fits is chosen. `std.matmul` keeps
/// [`GemmTiles::for_kernel`]'s tiles (the largest that fit), which its measured
/// fidelity is stated for.
///
/// ```
/// use pto_kernel::{DType, DeviceProfile, Kernel, Shape};
/// use pto_kernel::cube::{ExtraTiles, GemmPlan};
/// let p = DeviceProfile::builtin("ascend910b").unwrap();
/// let mut k = Kernel::new("doc.plan").with_buffers(p.buffers).with_core_count(24);
/// let a = k.input("a", Shape::from([256, 1024]), DType::F16);
/// let b = k.input("b", Shape::from([1024, 512]), DType::F16);
/// let plan = GemmPlan::new(&k, &a, &b, DType::F16, &ExtraTiles::new()).unwrap();
/// assert_eq!((plan.tm, plan.tn, plan.grid), (64, 128, 16));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GemmPlan {
    /// The base tiles (output tile before clipping, K-step, staged steps).
    pub tiles: GemmTiles,
    /// Output rows per block program.
    pub tm: usize,
    /// Output columns per block program.
    pub tn: usize,
    /// Elements of K per cube step.
    pub tk: usize,
    /// K-steps per staged load.
    pub steps: usize,
    /// Staged loads along K.
    pub stages: usize,
    /// Output tiles along the columns.
    pub col_tiles: usize,
    /// Block programs.
    pub grid: usize,
    /// What the GEMM's tiles reserve per buffer (the extra tiles not included).
    pub reserved: PerBuffer,
}

impl GemmPlan {
    /// The plan for `a [m, k] @ b [k, n]` into an output of `out_dtype` on the device `k`
    /// is traced for (its buffers and cores), leaving room for `extra`.
    ///
    /// # Errors
    ///
    /// `a` or `b` not rank 2, or no output tile that fits with `extra` (the message gives
    /// the smallest one's bytes per buffer and the capacities).
    pub fn new(
        k: &Kernel,
        a: &Global,
        b: &Global,
        out_dtype: DType,
        extra: &ExtraTiles,
    ) -> Result<GemmPlan, OpError> {
        let (m, depth) = a.dims2()?;
        let (_, n) = b.dims2()?;
        let caps = capacities(k);
        let in_bytes = a.dtype().size_bytes();
        let out_bytes = out_dtype.size_bytes();
        let cores = k.core_count().max(1);
        let kstep = K_STEP_BYTES / in_bytes;
        let tk = tile_dim(kstep, depth);
        let with_extra = |tiles: &GemmTiles| {
            let mut r = tiles.reserved_bytes(in_bytes, out_bytes);
            r.ub += extra.ub_bytes_for(tiles.m, tiles.n);
            r.l1 += extra.l1_bytes_for();
            r
        };
        let mut candidates = Vec::new();
        for (bm, bn) in PLAN_OUTPUT_TILES {
            let (tm, tn) = (tile_dim(bm, m), tile_dim(bn, n));
            let staged = (1..=STAGED_STEPS).rev().find_map(|steps| {
                let tiles = GemmTiles {
                    m: tm,
                    n: tn,
                    k: kstep,
                    steps,
                };
                fits(with_extra(&tiles), caps).then_some(tiles)
            });
            if let Some(tiles) = staged {
                let programs = m.div_ceil(tm) * n.div_ceil(tn);
                candidates.push((programs.div_ceil(cores), tm * tn, tiles));
            }
        }
        // Fewest waves, then the smallest tile with them.
        let Some((_, _, tiles)) = candidates
            .into_iter()
            .min_by_key(|(waves, area, _)| (*waves, *area))
        else {
            let smallest = GemmTiles {
                m: 32,
                n: 64,
                k: kstep,
                steps: 1,
            };
            let r = with_extra(&smallest);
            return Err(OpError::invalid(format!(
                "no GEMM tiling fits with the extra tiles: the smallest (32 x 64, one K-step \
                 staged) needs ub {} l1 {} l0a {} l0b {} l0c {} bytes, the device has ub {} \
                 l1 {} l0a {} l0b {} l0c {}",
                r.ub, r.l1, r.l0a, r.l0b, r.l0c, caps[4], caps[3], caps[0], caps[1], caps[2]
            )));
        };
        let k_steps = depth.div_ceil(tk).max(1);
        let steps = tiles.steps.min(k_steps);
        let col_tiles = n.div_ceil(tiles.n);
        Ok(GemmPlan {
            tm: tiles.m,
            tn: tiles.n,
            tk,
            steps,
            stages: k_steps.div_ceil(steps),
            col_tiles,
            grid: m.div_ceil(tiles.m) * col_tiles,
            reserved: tiles.reserved_bytes(in_bytes, out_bytes),
            tiles,
        })
    }

    /// Sets `k`'s grid to the plan's and traces this block program's K loop: staged loads
    /// of `a` and `b` into L1, each K-step extracted to L0A / L0B and accumulated in L0C.
    /// Returns the f32 `[tm, tn]` accumulator in L0C and the offsets `(r0, c0)` of the
    /// block program's output tile, for the author's epilogue and store.
    ///
    /// # Errors
    ///
    /// A tracing error of the loads or the cube.
    pub fn accumulate(
        &self,
        k: &mut Kernel,
        a: &Global,
        b: &Global,
    ) -> Result<(Tile, Idx, Idx), OpError> {
        use MemLevel::{L0A, L0B};
        k.grid(self.grid)?;
        let pid = k.program_id();
        let (r0, c0) = (
            (pid / self.col_tiles) * self.tm,
            (pid % self.col_tiles) * self.tn,
        );
        let (tm, tn, tk, steps) = (self.tm, self.tn, self.tk, self.steps);
        let staged = tk * steps;
        let stage = |k: &mut Kernel, k0: Idx, acc: Option<Tile>| -> Result<Tile, OpError> {
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
        let first = stage(k, Idx::from(0usize), None)?;
        let acc = k.fold(self.stages - 1, &[first], |k, i, carried| {
            Ok(vec![stage(k, (i + 1) * staged, Some(carried[0].clone()))?])
        })?;
        Ok((acc[0].clone(), r0, c0))
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

//! Row tiling for kernels that work on whole rows (the last axis): normalizations,
//! softmax, element-wise ops. Element-wise ops, which do not need a whole row at once, split
//! rows longer than a tile into column chunks ([`elementwise_tiles`]).
//!
//! ```
//! use pto_kernel::{Kernel, rows::{RowLive, row_tiles}};
//! use pto_kernel::{DType, Shape};
//!
//! let mut k = Kernel::new("doc.rows");
//! let x = k.input("x", Shape::from([3, 100, 64]), DType::F16);
//! // Two tiles of the rows live at once, no per-column param.
//! let tiles = row_tiles(&mut k, &x, RowLive { tiles: 2, params: 0 }).unwrap();
//! // Without a device: 118 KiB of UB holds 2 x 100 rows of 64 f32 and their reductions'
//! // tmp, so one tile per matrix, three matrices.
//! assert_eq!((tiles.grid, tiles.shape.as_slice()), (3, &[1, 100, 64][..]));
//! ```

use super::ir::MemLevel;
use super::{Global, Idx, Kernel};
use crate::dtype::DType;
use crate::error::OpError;

/// Bytes of f32 working data one row tile of an element-wise kernel aims for when its rows
/// fit the unified buffer whole ([`elementwise_tiles`]).
const ROW_TILE_F32_BYTES: usize = 16 * 1024;

/// The tiles of whole rows of a tensor: block program `pid` handles `rows` consecutive rows
/// of one matrix (the last two axes); leading axes are spread over the grid.
pub struct RowTiles {
    /// Number of block programs.
    pub grid: usize,
    /// The tile shape: `[1, .., 1, rows, cols]` (`[cols]` for a rank-1 tensor).
    pub shape: Vec<usize>,
    /// The tile's offsets for the current block program.
    pub offsets: Vec<Idx>,
}

/// What a row kernel keeps in UB at its peak, stated next to the kernel (e.g.
/// `pto_op::ops::rms_norm::LIVE`): [`row_tiles`] sizes its tiles so that this fits.
///
/// Both counts are in tiles of 4 bytes an element (f32, what float kernels compute in; a
/// narrower input's load or output's cast counts as a whole tile), and cover the most that
/// the simulator's buffer plan or the Ascend C lowering (its input and output queues, its
/// computed tiles and its temporaries) holds at one point. A test traces every kernel that
/// states one on each built-in device and checks both against it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RowLive {
    /// Tiles of the block program's rows (`[rows, cols]`) live at once.
    pub tiles: usize,
    /// Tiles of one row (`[cols]`, a per-column param such as `gamma`) live with them.
    pub params: usize,
}

/// UB bytes per row besides the row tiles: the row reduction's tmp tile (one 256-byte
/// repeat per row, [`crate::row_reduce`]) and four per-row values (`[rows, 1]`
/// tiles: a max, a sum, a mean, its reciprocal square root), one 32-byte UB block each as
/// the Ascend C lowering lays them out.
const ROW_EXTRA_BYTES: usize = 256 + 4 * 32;

impl RowLive {
    /// The UB bytes [`row_tiles`] assumes a tile of `rows` rows of `cols` elements needs:
    /// `tiles` tiles of it and `params` tiles of one row at 4 bytes an element (each
    /// rounded up to a 32-byte UB block), and per row the row reduction's tmp tile (one
    /// 256-byte repeat) and four per-row values of one 32-byte block each.
    ///
    /// ```
    /// use pto_kernel::rows::RowLive;
    /// let live = RowLive { tiles: 4, params: 1 };
    /// assert_eq!(live.bytes(2, 4096), 4 * 32768 + 16384 + 2 * 384);
    /// ```
    pub fn bytes(&self, rows: usize, cols: usize) -> usize {
        let f32_bytes = |elems: usize| (elems * DType::F32.size_bytes()).next_multiple_of(UB_BLOCK);
        self.tiles * f32_bytes(rows * cols) + self.params * f32_bytes(cols) + rows * ROW_EXTRA_BYTES
    }
}

/// UB alignment every tile is rounded up to.
const UB_BLOCK: usize = 32;

/// Row tiles of `x` for a kernel that reduces along its rows and keeps `live` in UB; sets
/// the kernel's grid.
///
/// A tile holds at least one whole row, however long: kernels that reduce along the row
/// (normalizations, softmax) need that. Rows per tile are chosen in two steps:
///
/// 1. **What fits**: the most rows whose working set (`live.tiles` tiles of them, at 4
///    bytes an element, `live.params` tiles of one row, and per row the row reduction's
///    tmp tile and a few per-row values) fits the unified buffer of one vector core of the
///    device the kernel is traced for ([`Kernel::buffer_capacity`]; a block program's
///    vector-only work runs on one vector core of a split core), or 118 KiB (the smallest
///    built-in UB) when traced without a device. More rows per tile mean fewer row
///    reductions: each of a long row's folds is one instruction over all rows of the tile.
/// 2. **Parallelism**: the fewest waves of block programs over the device's AI cores
///    ([`Kernel::core_count`]) that step 1 allows, `ceil(blocks / cores)`, and then the
///    fewest rows per tile that keep that many waves. Rows are not gathered on one core
///    while other cores idle: 8 rows of 4,096 on 24 cores are 8 block programs of one row,
///    not one of 8.
///
/// ```
/// use pto_kernel::{Kernel, rows::{RowLive, row_tiles}};
/// use pto_kernel::{DType, DeviceProfile, Shape};
///
/// // std.rms_norm's working set (`pto_op::ops::rms_norm::LIVE`): five tiles of the rows
/// // and `gamma`.
/// let live = RowLive { tiles: 5, params: 1 };
/// let a910 = DeviceProfile::builtin("ascend910b").unwrap();
/// let tiled = |dims: [usize; 2]| {
///     let mut k = Kernel::new("doc.rows")
///         .with_buffers(a910.buffers)
///         .with_core_count(a910.ai_cores as usize);
///     let x = k.input("x", Shape::from(dims), DType::F16);
///     let t = row_tiles(&mut k, &x, live).unwrap();
///     (t.grid, t.shape[0])
/// };
/// // 184 KiB holds 5 x 2 rows of 4,096 f32, gamma and the reductions' tmp tiles.
/// assert_eq!(tiled([2048, 4096]), (1024, 2));
/// // 128 rows: 64 tiles of 2 rows, 3 waves on 24 cores; 3 waves need 2 rows a tile.
/// assert_eq!(tiled([128, 4096]), (64, 2));
/// // 8 rows: one each on 8 cores, not 4 tiles of 2.
/// assert_eq!(tiled([8, 4096]), (8, 1));
/// ```
pub fn row_tiles(k: &mut Kernel, x: &Global, live: RowLive) -> Result<RowTiles, OpError> {
    let ub = k
        .buffer_capacity(MemLevel::Ub)
        .map_or(PORTABLE_UB, |ub| ub as usize);
    tiles(k, x, Tiling::Rows { ub, live })
}

/// Columns per chunk, a multiple of this many elements (256 bytes of f32), when
/// [`elementwise_tiles`] splits a row.
const COLUMN_CHUNK_ALIGN: usize = 64;

/// The unified buffer assumed when a kernel is traced without a device: the smallest of
/// the built-in profiles (Kirin's 118 KiB).
const PORTABLE_UB: usize = 118 * 1024;

/// Tiles of `x` for an element-wise kernel that keeps `live_tiles` row tiles at once, each
/// counted at 4 bytes an element (f32, what float kernels compute in) or the dtype's width
/// if wider (an i64 kernel computes in i64): [`row_tiles`], except that a row whose working
/// set (`live_tiles` such tiles of it) exceeds the unified buffer (the device's, when the
/// kernel is traced for one, else 118 KiB) is split into equal column chunks that fit, one
/// row per tile (a multiple of 64 columns; the last chunk's columns past the row's end are
/// masked). Sets the kernel's grid.
///
/// `live_tiles` is the kernel's own count, stated next to it (e.g.
/// `pto_op::ops::mul::LIVE_TILES`): the most UB that the simulator's buffer plan or the
/// Ascend C lowering (its input and output queues, its computed tiles and its
/// temporaries) holds at one point, in such tiles of the chunk. A test traces every
/// standard element-wise op in chunks on each built-in device and checks both against it.
///
/// A row of 11,008 f32 (43 KiB) in one tile needs 129 KiB for `a * b` (three live tiles:
/// both operands and the product), more than the 118 KiB unified buffer of the Kirin
/// profiles; in two chunks it fits. ascend910b's 184 KiB holds the whole row:
///
/// ```
/// use pto_kernel::{Kernel, rows::elementwise_tiles};
/// use pto_kernel::{DType, DeviceProfile, Shape};
///
/// let mut k = Kernel::new("doc.chunks");
/// let x = k.input("x", Shape::from([4, 11008]), DType::F32);
/// let tiles = elementwise_tiles(&mut k, &x, 3).unwrap();
/// // ceil(3 x 43 KiB / 118 KiB) = 2 chunks of 5504 columns, per row.
/// assert_eq!((tiles.grid, tiles.shape.as_slice()), (8, &[1, 5504][..]));
///
/// let big = DeviceProfile::builtin("ascend910b").unwrap();
/// let mut k = Kernel::new("doc.chunks").with_buffers(big.buffers);
/// let x = k.input("x", Shape::from([4, 11008]), DType::F32);
/// let tiles = elementwise_tiles(&mut k, &x, 3).unwrap();
/// assert_eq!((tiles.grid, tiles.shape.as_slice()), (4, &[1, 11008][..]));
///
/// // An i64 tile is twice as wide: three of a 11,008 row need 258 KiB, two chunks.
/// let mut k = Kernel::new("doc.chunks").with_buffers(big.buffers);
/// let x = k.input("x", Shape::from([4, 11008]), DType::I64);
/// let tiles = elementwise_tiles(&mut k, &x, 3).unwrap();
/// assert_eq!((tiles.grid, tiles.shape.as_slice()), (8, &[1, 5504][..]));
/// ```
pub fn elementwise_tiles(
    k: &mut Kernel,
    x: &Global,
    live_tiles: usize,
) -> Result<RowTiles, OpError> {
    let ub = k
        .buffer_capacity(MemLevel::Ub)
        .map_or(PORTABLE_UB, |ub| ub as usize);
    let element = DType::F32.size_bytes().max(x.dtype().size_bytes());
    tiles(
        k,
        x,
        Tiling::Chunks {
            ub,
            bytes_per_column: live_tiles.max(1) * element,
        },
    )
}

/// How [`tiles`] sizes a tile.
#[derive(Clone, Copy)]
enum Tiling {
    /// Whole rows, as many as `live` of them fit `ub` ([`row_tiles`]).
    Rows { ub: usize, live: RowLive },
    /// Rows too long for `ub` (at `bytes_per_column` live bytes a column) split into
    /// column chunks; otherwise rows of about [`ROW_TILE_F32_BYTES`] of f32
    /// ([`elementwise_tiles`]).
    Chunks { ub: usize, bytes_per_column: usize },
}

/// The most rows (at least 1, at most `rows`) of `cols` elements whose working set with
/// `live` fits `ub` bytes: see [`row_tiles`].
fn rows_that_fit(ub: usize, live: RowLive, rows: usize, cols: usize) -> usize {
    let working_set = |r: usize| live.bytes(r, cols);
    // The working set grows with the rows: the largest that fits, by bisection.
    let (mut fits, mut over) = (1, rows.saturating_add(1));
    while over - fits > 1 {
        let mid = fits + (over - fits) / 2;
        if working_set(mid) <= ub {
            fits = mid;
        } else {
            over = mid;
        }
    }
    fits
}

/// Rows per tile, at most `fit`, for `rows` rows of each of `matrices` matrices on `cores`
/// cores: the fewest rows that keep the fewest waves of block programs `fit` allows (see
/// [`row_tiles`]).
fn rows_for_cores(fit: usize, rows: usize, matrices: usize, cores: usize) -> usize {
    let waves = |r: usize| (matrices * rows.div_ceil(r)).div_ceil(cores.max(1));
    let fewest = waves(fit);
    // Waves shrink as the rows per tile grow: the smallest such rows, by bisection.
    let (mut more, mut enough) = (0, fit);
    while enough - more > 1 {
        let mid = more + (enough - more) / 2;
        if waves(mid) <= fewest {
            enough = mid;
        } else {
            more = mid;
        }
    }
    enough
}

/// Row tiles as `tiling` sizes them; sets the kernel's grid.
fn tiles(k: &mut Kernel, x: &Global, tiling: Tiling) -> Result<RowTiles, OpError> {
    let dims = x.shape().dims();
    // Neither is an error of the op: its kernel does not cover the case
    // (`OpError::Unsupported`), and a kernel target runs the op on its fallback.
    let Some((&cols, leading)) = dims.split_last() else {
        return Err(OpError::Unsupported {
            op: k.op().to_owned(),
            message: format!(
                "input `{}`: the kernel needs rank >= 1, got a scalar",
                x.name()
            ),
        });
    };
    if dims.contains(&0) {
        return Err(OpError::Unsupported {
            op: k.op().to_owned(),
            message: format!("input `{}`: shape {} is empty", x.name(), x.shape()),
        });
    }
    let chunk_of = |chunks: usize| {
        cols.div_ceil(chunks)
            .next_multiple_of(COLUMN_CHUNK_ALIGN)
            .min(cols)
    };
    let mut chunks = 1;
    if let Tiling::Chunks {
        ub,
        bytes_per_column,
    } = tiling
    {
        let working_set = |cols: usize| bytes_per_column * cols;
        chunks = working_set(cols).div_ceil(ub).max(1);
        // Rounding a chunk up to the alignment may push it over: one more chunk then, down
        // to one aligned chunk (a buffer smaller than that fails the kernel's buffer check).
        while working_set(chunk_of(chunks)) > ub && chunk_of(chunks) > COLUMN_CHUNK_ALIGN {
            chunks += 1;
        }
    }
    let chunk = chunk_of(chunks);
    let Some((&rows, outer)) = leading.split_last() else {
        k.grid(chunks)?;
        return Ok(RowTiles {
            grid: chunks,
            shape: vec![chunk],
            offsets: vec![match chunks {
                1 => Idx::from(0),
                _ => k.program_id() * chunk,
            }],
        });
    };
    if chunks > 1 {
        // One row per tile, `chunks` tiles per row: pid -> (row of all leading axes, chunk).
        let grid = outer.iter().product::<usize>() * rows * chunks;
        k.grid(grid)?;
        let pid = k.program_id();
        let mut row_index = pid / chunks;
        let mut offsets: Vec<Idx> = Vec::with_capacity(dims.len());
        for &size in leading.iter().rev() {
            offsets.push(row_index % size);
            row_index = row_index / size;
        }
        offsets.reverse();
        offsets.push((pid % chunks) * chunk);
        let mut shape = vec![1; leading.len()];
        shape.push(chunk);
        return Ok(RowTiles {
            grid,
            shape,
            offsets,
        });
    }
    let rows_per_tile = match tiling {
        Tiling::Rows { ub, live } => rows_for_cores(
            rows_that_fit(ub, live, rows, cols),
            rows,
            outer.iter().product(),
            k.core_count(),
        ),
        Tiling::Chunks { .. } => {
            let per_row = cols * DType::F32.size_bytes();
            (ROW_TILE_F32_BYTES / per_row).clamp(1, rows.min(64))
        }
    };
    let blocks = rows.div_ceil(rows_per_tile);
    let grid = outer.iter().product::<usize>() * blocks;
    k.grid(grid)?;

    // pid -> (outer index, block): the outer index is decomposed over the outer axes.
    let pid = k.program_id();
    let mut outer_index = pid / blocks;
    let mut offsets: Vec<Idx> = Vec::with_capacity(dims.len());
    for &size in outer.iter().rev() {
        offsets.push(outer_index % size);
        outer_index = outer_index / size;
    }
    offsets.reverse();
    offsets.push((pid % blocks) * rows_per_tile);
    offsets.push(Idx::from(0));

    let mut shape = vec![1; outer.len()];
    shape.extend([rows_per_tile, cols]);
    Ok(RowTiles {
        grid,
        shape,
        offsets,
    })
}

//! Row tiling for kernels that work on whole rows (the last axis): normalizations,
//! softmax, element-wise ops. Element-wise ops, which do not need a whole row at once, split
//! rows longer than a tile into column chunks ([`elementwise_tiles`]).
//!
//! ```
//! use pto_op::kernel::{Kernel, rows::row_tiles};
//! use pto_op::{DType, Shape};
//!
//! let mut k = Kernel::new("doc.rows");
//! let x = k.input("x", Shape::from([3, 100, 64]), DType::F16);
//! let tiles = row_tiles(&mut k, &x).unwrap();
//! // 64 rows of 64 f32 are 16 KiB: two tiles per matrix, three matrices.
//! assert_eq!((tiles.grid, tiles.shape.as_slice()), (6, &[1, 64, 64][..]));
//! ```

use super::ir::MemLevel;
use super::{Global, Idx, Kernel};
use crate::dtype::DType;
use crate::error::OpError;

/// Bytes of f32 working data one row tile aims for: a few such tiles (input, f32 copy,
/// intermediates) fit the smallest unified buffer of the built-in profiles (118 KiB).
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

/// Row tiles of `x` sized so a row tile of f32 stays near 16 KiB; sets the kernel's grid.
///
/// A tile holds at least one whole row, however long: kernels that reduce along the row
/// (normalizations, softmax) need that. Element-wise kernels use [`elementwise_tiles`].
pub fn row_tiles(k: &mut Kernel, x: &Global) -> Result<RowTiles, OpError> {
    tiles(k, x, None)
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
/// [`crate::ops::mul::LIVE_TILES`]): the most UB that the simulator's buffer plan or the
/// Ascend C lowering (its input and output queues, its computed tiles and its
/// temporaries) holds at one point, in such tiles of the chunk. A test traces every
/// standard element-wise op in chunks on each built-in device and checks both against it.
///
/// A row of 11,008 f32 (43 KiB) in one tile needs 129 KiB for `a * b` (three live tiles:
/// both operands and the product), more than the 118 KiB unified buffer of the Kirin
/// profiles; in two chunks it fits. ascend910b's 184 KiB holds the whole row:
///
/// ```
/// use pto_op::kernel::{Kernel, rows::elementwise_tiles};
/// use pto_op::{DType, DeviceProfile, Shape};
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
    tiles(k, x, Some((ub, live_tiles.max(1) * element)))
}

/// Row tiles; with `split` (a unified buffer and the live bytes per column), rows too long
/// for it split into column chunks.
fn tiles(k: &mut Kernel, x: &Global, split: Option<(usize, usize)>) -> Result<RowTiles, OpError> {
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
    if let Some((ub, bytes_per_column)) = split {
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
    let per_row = cols * DType::F32.size_bytes();
    let rows_per_tile = (ROW_TILE_F32_BYTES / per_row).clamp(1, rows.min(64));
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

//! Row tiling for kernels that work on whole rows (the last axis): normalizations,
//! softmax, element-wise ops.
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
pub fn row_tiles(k: &mut Kernel, x: &Global) -> Result<RowTiles, OpError> {
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
    let Some((&rows, outer)) = leading.split_last() else {
        k.grid(1)?;
        return Ok(RowTiles {
            grid: 1,
            shape: vec![cols],
            offsets: vec![Idx::from(0)],
        });
    };
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

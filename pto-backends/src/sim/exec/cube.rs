//! Cube instructions: the matrix product on the cube unit, accumulating in f32.

use ndarray::linalg::general_mat_mul;
use ndarray::{Array2, ArrayD, Ix2};
use pto_op::kernel::ir::TileId;

use super::machine::Machine;
use crate::sim::error::SimError;

impl Machine<'_> {
    /// `matmul`: `a @ b (+ acc)` into `dst`, rounded to its dtype.
    pub(super) fn run_matmul(
        &mut self,
        dst: TileId,
        a: TileId,
        b: TileId,
        acc: Option<TileId>,
        transpose_b: bool,
    ) -> Result<(), SimError> {
        let dtype = self.program.tile_type(dst).dtype;
        let data = self.matmul(a, b, acc, transpose_b)?;
        self.define_floats(dst, data, dtype);
        Ok(())
    }

    /// `a @ b (+ acc)`: a valid program gives float matrices whose inner dimensions agree
    /// and an accumulator of the product's shape.
    fn matmul(
        &self,
        a: TileId,
        b: TileId,
        acc: Option<TileId>,
        transpose_b: bool,
    ) -> Result<ArrayD<f32>, SimError> {
        let matrix = |t: TileId| -> Result<_, SimError> {
            Ok(self
                .floats(t)?
                .view()
                .into_dimensionality::<Ix2>()
                .expect("a valid program's cube tiles are rank 2"))
        };
        let a2 = matrix(a)?;
        let b2 = matrix(b)?;
        let b2 = if transpose_b { b2.reversed_axes() } else { b2 };
        let (m, n) = (a2.dim().0, b2.dim().1);
        let (mut out, beta) = match acc {
            Some(acc) => (matrix(acc)?.to_owned(), 1.0),
            None => (Array2::zeros((m, n)), 0.0),
        };
        general_mat_mul(1.0, &a2, &b2, beta, &mut out);
        Ok(out.into_dyn())
    }
}

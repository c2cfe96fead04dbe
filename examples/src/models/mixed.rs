//! A mixed model: standard ops and the ops of two operator crates, written by two teams
//! that never saw each other's code, in one graph.
//!
//! ```text
//! h = x + teamb.scaled_tanh(x @ w_in; alpha = 2)  std.matmul, team B's op, std.add
//! y = demo.rms_norm(h, gamma)
//! (mean, rstd) = demo.moments(y)                  no kernel: the CPU reference on sim
//! ```

use pto_op::ops::{add, matmul};
use pto_op::{DType, Graph, Model, OpError, Shape};
use pto_team_b::scaled_tanh;

use super::init::{gain, weight};
use crate::{moments, rms_norm};

/// Rows of the input.
pub const ROWS: usize = 64;
/// Columns of the input and of every activation.
pub const COLS: usize = 128;

/// The model over f32 `x` of `[ROWS, COLS]`; outputs `y`, then its row statistics.
pub fn build() -> Result<Model, OpError> {
    let dtype = DType::F32;
    let graph = Graph::new();
    let x = graph.input("x", Shape::from([ROWS, COLS]), dtype);
    let w_in = graph.weight(
        "w_in",
        weight(&[COLS, COLS], dtype, 21, 1.0 / (COLS as f64).sqrt()),
    )?;
    let gamma = graph.weight("gamma", gain(COLS, dtype, 22))?;
    let projected = matmul::apply(&x, &w_in, &matmul::Params {})?;
    let clamped = scaled_tanh::apply(&projected, &scaled_tanh::Params { alpha: 2.0 })?;
    let residual = add::apply(&x, &clamped, &add::Params {})?;
    let y = rms_norm::apply(&residual, &gamma, &rms_norm::Params { eps: 1e-6 })?;
    let (mean, rstd) = moments::apply(&y, &moments::Params { eps: 1e-5 })?;
    graph.output(&y);
    graph.output(&mean);
    graph.output(&rstd);
    graph.to_model("mixed")
}

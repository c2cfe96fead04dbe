//! A pipeline where one custom op feeds the next: `gelu_affine -> rms_norm -> softmax`.

use pto_op::{DType, Graph, Model, OpError, Shape};

use crate::{gelu_affine, rms_norm, softmax};

/// Rows and columns of the input.
pub const SHAPE: [usize; 2] = [64, 256];

/// `y = softmax(rms_norm(gelu(0.5 x + 0.1), gamma))`, over f32 `[64, 256]`.
pub fn build() -> Result<Model, OpError> {
    let graph = Graph::new();
    let x = graph.input("x", Shape::from(SHAPE), DType::F32);
    let gamma = graph.weight("gamma", super::init::gain(SHAPE[1], DType::F32, 11))?;
    let activated = gelu_affine::apply(
        &x,
        &gelu_affine::Params {
            scale: 0.5,
            bias: 0.1,
        },
    )?;
    let normalized = rms_norm::apply(&activated, &gamma, &rms_norm::Params { eps: 1e-6 })?;
    let probabilities = softmax::apply(&normalized, &softmax::Params {})?;
    graph.output(&probabilities);
    graph.to_model("pipeline")
}

//! The table of ONNX op handlers: one line per operator of the default domain that import
//! reads, the only place that lists them. A line names the operator, the handler that
//! imports its nodes, and the inputs it reads as constants (params) beyond those of the
//! table of standard ops (`standard.rs`, whose forms [`Importer::table_op`] and
//! [`Importer::standard`] read, with the earliest opset of each form).
//!
//! Adding an ONNX operator: a line here, and either a line of the table of standard ops
//! (an operator that is one std op: its handler is [`Importer::table_op`]) or a handler in
//! the file of its family (`constants.rs`, `movement.rs`, `elementwise.rs`, `reduce.rs`,
//! `normalization.rs`, `linalg.rs`).

use super::importer::Importer;
use crate::error::OnnxError;
use crate::proto::NodeProto;
use crate::standard::{self, Lowering, ParamForm};

/// What imports a node of one ONNX operator: `(importer, node, label)`, `label` naming the
/// node in messages.
pub(super) type Handler = fn(&mut Importer, &NodeProto, &str) -> Result<(), OnnxError>;

/// One line of the table.
pub(super) struct OnnxOp {
    /// The ONNX operator (`op_type` of the default domain).
    pub(super) op_type: &'static str,
    /// What imports its nodes.
    pub(super) handler: Handler,
    /// The positions of the inputs read as constants (params) by the handler, beyond the
    /// table of standard ops' constant inputs.
    pub(super) param_inputs: &'static [usize],
}

/// A line of `op_type` imported by `handler`.
const fn op(op_type: &'static str, handler: Handler) -> OnnxOp {
    OnnxOp {
        op_type,
        handler,
        param_inputs: &[],
    }
}

impl OnnxOp {
    /// The line with `inputs` read as constants by its handler.
    const fn params(self, inputs: &'static [usize]) -> OnnxOp {
        OnnxOp {
            param_inputs: inputs,
            ..self
        }
    }
}

/// The table, by family.
static ONNX_OPS: &[OnnxOp] = &[
    // Constants and shape computations, folded at import (`constants.rs`).
    op("Constant", Importer::constant),
    op("ConstantOfShape", Importer::constant_of_shape).params(&[0]),
    op("Range", Importer::range).params(&[0, 1, 2]),
    op("Shape", Importer::shape),
    // Data moved, reshaped or aliased (`movement.rs`), and the table's movement ops.
    op("Identity", Importer::identity),
    op("Flatten", Importer::flatten),
    op("Squeeze", Importer::squeeze).params(&[1]),
    op("Unsqueeze", Importer::squeeze).params(&[1]),
    op("Split", Importer::split).params(&[1]),
    op("Slice", Importer::slice),
    op("Dropout", Importer::dropout).params(&[1, 2]),
    op("Reshape", Importer::table_op),
    op("Transpose", Importer::table_op),
    op("Concat", Importer::table_op),
    op("Gather", Importer::table_op),
    op("Expand", Importer::standard),
    op("Trilu", Importer::table_op),
    // Element-wise (`elementwise.rs`), and the table's element-wise ops.
    op("Add", Importer::binary),
    op("Sub", Importer::binary),
    op("Mul", Importer::binary),
    op("Div", Importer::binary),
    op("Pow", Importer::pow),
    op("Max", Importer::max_min),
    op("Clip", Importer::clip),
    op("Min", Importer::max_min),
    op("CastLike", Importer::cast_like),
    op("Cast", Importer::table_op),
    op("Relu", Importer::table_op),
    op("Neg", Importer::table_op),
    op("Sqrt", Importer::table_op),
    op("Tanh", Importer::table_op),
    op("Sigmoid", Importer::table_op),
    op("Gelu", Importer::table_op),
    op("Exp", Importer::table_op),
    op("Erf", Importer::table_op),
    op("Reciprocal", Importer::table_op),
    op("Cos", Importer::table_op),
    op("Sin", Importer::table_op),
    op("Abs", Importer::table_op),
    op("Log", Importer::table_op),
    op("Sign", Importer::table_op),
    op("Floor", Importer::table_op),
    op("Ceil", Importer::table_op),
    op("Round", Importer::table_op),
    // Comparisons, logic and float classes: bool results.
    op("Equal", Importer::standard),
    op("Less", Importer::table_op),
    op("LessOrEqual", Importer::table_op),
    op("Greater", Importer::table_op),
    op("GreaterOrEqual", Importer::table_op),
    op("And", Importer::table_op),
    op("Or", Importer::table_op),
    op("Xor", Importer::table_op),
    op("Not", Importer::table_op),
    op("IsNaN", Importer::table_op),
    op("IsInf", Importer::table_op),
    op("Where", Importer::standard),
    // Reductions (`reduce.rs`), and softmax.
    op("ReduceMean", Importer::reduce),
    op("ReduceMax", Importer::reduce),
    op("ReduceSum", Importer::reduce),
    op("Softmax", Importer::softmax),
    // Normalizations on any axis (`normalization.rs`).
    op("LayerNormalization", Importer::normalization),
    op("RMSNormalization", Importer::normalization),
    // Linear algebra (`linalg.rs`).
    op("MatMul", Importer::matmul),
    op("Gemm", Importer::gemm),
];

/// The line of ONNX operator `op_type`, if import reads it.
pub(super) fn find(op_type: &str) -> Option<&'static OnnxOp> {
    ONNX_OPS.iter().find(|op| op.op_type == op_type)
}

/// The ONNX operators of the default domain that import reads, sorted: the table's.
///
/// ```
/// let types = pto_onnx::imported_op_types();
/// assert!(types.contains(&"MatMul"));
/// assert!(types.contains(&"Constant"));
/// ```
pub fn imported_op_types() -> Vec<&'static str> {
    let mut types: Vec<&'static str> = ONNX_OPS.iter().map(|op| op.op_type).collect();
    types.sort_unstable();
    types.dedup();
    types
}

/// The positions of the inputs of ONNX operator `op_type` (default domain) that import reads
/// as constants, because they are params of the op it becomes (Reshape's shape, Slice's
/// starts, ends, axes and steps, the axes of a reduction, ...). A model whose such input is
/// a graph input imports with its value bound
/// ([`ImportOptions::constants`](crate::ImportOptions::constants)).
///
/// ```
/// assert_eq!(pto_onnx::param_inputs("Reshape"), vec![1]);
/// assert_eq!(pto_onnx::param_inputs("Slice"), vec![1, 2, 3, 4]);
/// assert!(pto_onnx::param_inputs("Add").is_empty());
/// ```
pub fn param_inputs(op_type: &str) -> Vec<usize> {
    let mut positions: Vec<usize> = match standard::by_op_type(op_type).map(|s| s.lowering) {
        Some(Lowering::Node { params, .. }) => params
            .iter()
            .filter_map(|m| match m.form {
                ParamForm::Input { index, .. } => Some(index),
                _ => None,
            })
            .collect(),
        _ => Vec::new(),
    };
    if let Some(op) = find(op_type) {
        positions.extend(op.param_inputs.iter());
    }
    positions.sort_unstable();
    positions.dedup();
    positions
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_operator_has_one_line_and_every_form_of_the_standard_table_is_read() {
        for (i, a) in ONNX_OPS.iter().enumerate() {
            assert!(
                ONNX_OPS[i + 1..].iter().all(|b| b.op_type != a.op_type),
                "{} has two lines",
                a.op_type
            );
        }
        for entry in standard::STANDARD_OPS {
            if let Lowering::Node { op_type, .. } = entry.lowering {
                assert!(
                    find(op_type).is_some(),
                    "{op_type} ({}) has no line",
                    entry.op
                );
            }
        }
    }
}

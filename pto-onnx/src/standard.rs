//! The one table between pto-op's standard ops (`std.*`) and ONNX operators, read by export
//! and by import.
//!
//! Every op not in this table is a custom op: it travels as a node of its own domain.

use pto_op::ops;

/// How one param of a standard op is written in ONNX.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ParamForm {
    /// An attribute of this name, of the type that carries the param's type.
    Attr(&'static str),
    /// An INTS attribute of this name for a `Vec<i64>` param whose empty list means what the
    /// ONNX op does without the attribute (Transpose: reverse the axes). An empty list is
    /// written as no attribute, since ONNX reads an empty INTS as a list of length 0; no
    /// attribute imports as the empty list.
    IntsOrAbsent(&'static str),
    /// An attribute the operator has since opset `since`, for a param with a default that
    /// means what the operator does without it: read like [`Attr`](ParamForm::Attr);
    /// written only when the param is not its default, and then the model imports at
    /// least opset `since` (Cast's `saturate`, 19, and `round_mode`, 24).
    AttrSince {
        /// The attribute's name.
        name: &'static str,
        /// The opset that added it.
        since: i64,
    },
    /// An INT attribute of this name holding the ONNX code of the dtype that the param (a
    /// dtype name such as `"f16"`) names.
    DTypeCode(&'static str),
    /// A constant 1-D int64 input at this position (a 0-D one for an i64 param). When
    /// `omit_empty`, an empty list is written as an omitted input, which the ONNX op reads
    /// as "all axes".
    Input {
        /// The input's position.
        index: usize,
        /// Whether an empty list is omitted.
        omit_empty: bool,
    },
}

/// One param of a standard op and its ONNX form.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ParamMap {
    /// The param's name in the pto-op op.
    pub param: &'static str,
    /// Its ONNX form.
    pub form: ParamForm,
}

/// How a standard op is written in ONNX.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Lowering {
    /// One ONNX node of the default domain.
    Node {
        /// The ONNX operator.
        op_type: &'static str,
        /// The opset version whose form of the operator is written (the model's default
        /// opset is at least this).
        opset: i64,
        /// The op's params.
        params: &'static [ParamMap],
        /// INT attributes written with these values, and accepted on import only with them.
        fixed: &'static [(&'static str, i64)],
        /// The op takes any number (>= 2) of data inputs in ONNX; import chains the binary
        /// pto-op op over them.
        variadic: bool,
        /// The earliest opset whose form of the operator means what this form means (the
        /// later versions only added element types or attributes with a default that keeps
        /// the meaning): import accepts a model of that opset or later. `None`: `opset`.
        since: Option<i64>,
    },
    /// `x * sigmoid(x)`, written as Sigmoid then Mul; import reads those back as two ops.
    SigmoidTimesInput,
}

/// One standard op of the table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct StandardOp {
    /// The pto-op op name.
    pub op: &'static str,
    /// Its ONNX form.
    pub lowering: Lowering,
}

impl StandardOp {
    /// The entry, its form read by import from opset `opset` on (see
    /// [`Lowering::Node::since`]).
    const fn since(self, opset: i64) -> StandardOp {
        match self.lowering {
            Lowering::Node {
                op_type,
                opset: written,
                params,
                fixed,
                variadic,
                ..
            } => StandardOp {
                op: self.op,
                lowering: Lowering::Node {
                    op_type,
                    opset: written,
                    params,
                    fixed,
                    variadic,
                    since: Some(opset),
                },
            },
            Lowering::SigmoidTimesInput => self,
        }
    }
}

/// The opset of `Sigmoid` and `Mul`, written for [`Lowering::SigmoidTimesInput`].
pub(crate) const SIGMOID_MUL_OPSET: i64 = 14;

const fn node(op: &'static str, op_type: &'static str, opset: i64) -> StandardOp {
    with(op, op_type, opset, &[], &[])
}

const fn with(
    op: &'static str,
    op_type: &'static str,
    opset: i64,
    params: &'static [ParamMap],
    fixed: &'static [(&'static str, i64)],
) -> StandardOp {
    StandardOp {
        op,
        lowering: Lowering::Node {
            op_type,
            opset,
            params,
            fixed,
            variadic: false,
            since: None,
        },
    }
}

/// An op of two inputs that ONNX takes any number (>= 2) of: import chains it.
const fn variadic(op: &'static str, op_type: &'static str, opset: i64) -> StandardOp {
    StandardOp {
        op,
        lowering: Lowering::Node {
            op_type,
            opset,
            params: &[],
            fixed: &[],
            variadic: true,
            since: None,
        },
    }
}

const fn attr(param: &'static str, name: &'static str) -> ParamMap {
    ParamMap {
        param,
        form: ParamForm::Attr(name),
    }
}

const fn input(param: &'static str, index: usize, omit_empty: bool) -> ParamMap {
    ParamMap {
        param,
        form: ParamForm::Input { index, omit_empty },
    }
}

/// The table. Opsets are the version of each operator's form as written (inputs vs
/// attributes); ONNX Runtime runs all of them (see `tests/tests/onnx.rs`). `.since(v)`: import
/// reads the form from opset `v` on (else from the opset written).
pub(crate) static STANDARD_OPS: &[StandardOp] = &[
    node(ops::matmul::NAME, "MatMul", 13).since(9),
    // Exported as MatMul too; import reads MatMul as std.matmul and picks std.batch_matmul
    // when `b` has a batch (`by_op_type` finds the first entry).
    node(ops::batch_matmul::NAME, "MatMul", 13).since(9),
    // numpy broadcasting since 7.
    node(ops::add::NAME, "Add", 14).since(7),
    node(ops::sub::NAME, "Sub", 14).since(7),
    node(ops::mul::NAME, "Mul", 14).since(7),
    node(ops::div::NAME, "Div", 14).since(7),
    node(ops::relu::NAME, "Relu", 14).since(6),
    node(ops::neg::NAME, "Neg", 13).since(6),
    node(ops::sqrt::NAME, "Sqrt", 13).since(6),
    node(ops::tanh::NAME, "Tanh", 13).since(6),
    // Integer exponents since 12.
    node(ops::pow::NAME, "Pow", 15).since(12),
    node(ops::sigmoid::NAME, "Sigmoid", 13).since(6),
    StandardOp {
        op: ops::silu::NAME,
        lowering: Lowering::SigmoidTimesInput,
    },
    with(
        ops::gelu::NAME,
        "Gelu",
        20,
        &[attr("approximate", "approximate")],
        &[],
    ),
    with(
        ops::softmax::NAME,
        "Softmax",
        13,
        &[attr("axis", "axis")],
        &[],
    ),
    with(
        ops::layer_norm::NAME,
        "LayerNormalization",
        17,
        &[attr("eps", "epsilon")],
        &[("axis", -1), ("stash_type", 1)],
    ),
    with(
        ops::rms_norm::NAME,
        "RMSNormalization",
        23,
        &[attr("eps", "epsilon")],
        &[("axis", -1), ("stash_type", 1)],
    ),
    with(
        ops::transpose::NAME,
        "Transpose",
        13,
        &[ParamMap {
            param: "perm",
            form: ParamForm::IntsOrAbsent("perm"),
        }],
        &[],
    )
    .since(1),
    // Reshape's allowzero (14) defaults to the earlier meaning.
    with(
        ops::reshape::NAME,
        "Reshape",
        14,
        &[input("shape", 1, false), attr("allowzero", "allowzero")],
        &[],
    )
    .since(5),
    StandardOp {
        op: ops::concat::NAME,
        lowering: Lowering::Node {
            op_type: "Concat",
            opset: 13,
            params: &[attr("axis", "axis")],
            fixed: &[],
            variadic: true,
            since: None,
        },
    }
    .since(4),
    // Slice-13 only added bf16 to Slice-11 (negative axes since 11).
    with(
        ops::slice::NAME,
        "Slice",
        13,
        &[
            input("starts", 1, false),
            input("ends", 2, false),
            input("axes", 3, true),
            input("steps", 4, true),
        ],
        &[],
    )
    .since(11),
    // Negative indices since 11.
    with(
        ops::gather::NAME,
        "Gather",
        13,
        &[attr("axis", "axis")],
        &[],
    )
    .since(11),
    with(
        ops::cast::NAME,
        "Cast",
        13,
        &[
            ParamMap {
                param: "to",
                form: ParamForm::DTypeCode("to"),
            },
            ParamMap {
                param: "saturate",
                form: ParamForm::AttrSince {
                    name: "saturate",
                    since: 19,
                },
            },
            ParamMap {
                param: "round_mode",
                form: ParamForm::AttrSince {
                    name: "round_mode",
                    since: 24,
                },
            },
        ],
        &[],
    )
    .since(6),
    with(
        ops::reduce_mean::NAME,
        "ReduceMean",
        18,
        &[input("axes", 1, true), attr("keepdims", "keepdims")],
        &[("noop_with_empty_axes", 0)],
    ),
    with(
        ops::reduce_sum::NAME,
        "ReduceSum",
        13,
        &[input("axes", 1, true), attr("keepdims", "keepdims")],
        &[("noop_with_empty_axes", 0)],
    ),
    node(ops::exp::NAME, "Exp", 13).since(6),
    node(ops::erf::NAME, "Erf", 13).since(9),
    node(ops::reciprocal::NAME, "Reciprocal", 13).since(6),
    variadic(ops::max::NAME, "Max", 13).since(8),
    variadic(ops::min::NAME, "Min", 13).since(8),
    node(ops::equal::NAME, "Equal", 13).since(7),
    node(ops::select::NAME, "Where", 16).since(9),
    with(
        ops::reduce_max::NAME,
        "ReduceMax",
        18,
        &[input("axes", 1, true), attr("keepdims", "keepdims")],
        &[("noop_with_empty_axes", 0)],
    ),
    with(
        ops::expand::NAME,
        "Expand",
        13,
        &[input("shape", 1, false)],
        &[],
    )
    .since(8),
    with(
        ops::trilu::NAME,
        "Trilu",
        14,
        &[attr("upper", "upper"), input("k", 1, false)],
        &[],
    ),
    // Integer inputs since 9 (Less, Greater), the same comparison of the float ones before.
    node(ops::less::NAME, "Less", 13).since(7),
    node(ops::less_equal::NAME, "LessOrEqual", 16).since(12),
    node(ops::greater::NAME, "Greater", 13).since(7),
    node(ops::greater_equal::NAME, "GreaterOrEqual", 16).since(12),
    node(ops::and::NAME, "And", 7),
    node(ops::or::NAME, "Or", 7),
    node(ops::xor::NAME, "Xor", 7),
    node(ops::not::NAME, "Not", 1),
    // 16-bit floats since 20.
    node(ops::is_nan::NAME, "IsNaN", 20).since(9),
    with(
        ops::is_inf::NAME,
        "IsInf",
        20,
        &[
            attr("detect_positive", "detect_positive"),
            attr("detect_negative", "detect_negative"),
        ],
        &[],
    )
    .since(10),
    node(ops::cos::NAME, "Cos", 7),
    node(ops::sin::NAME, "Sin", 7),
    node(ops::abs::NAME, "Abs", 13).since(6),
    node(ops::log::NAME, "Log", 13).since(6),
    node(ops::sign::NAME, "Sign", 13).since(9),
    node(ops::floor::NAME, "Floor", 13).since(6),
    node(ops::ceil::NAME, "Ceil", 13).since(6),
    node(ops::round::NAME, "Round", 11),
    // Bounds as inputs since 11; 12 added integer types, 13 bf16.
    node(ops::clip::NAME, "Clip", 13).since(11),
];

/// The table entry of pto-op op `op`, if it is a standard op.
pub(crate) fn by_op(op: &str) -> Option<&'static StandardOp> {
    STANDARD_OPS.iter().find(|s| s.op == op)
}

/// The table entry that imports ONNX operator `op_type` of the default domain.
pub(crate) fn by_op_type(op_type: &str) -> Option<&'static StandardOp> {
    STANDARD_OPS
        .iter()
        .find(|s| matches!(s.lowering, Lowering::Node { op_type: t, .. } if t == op_type))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_onnx_operators_are_unique_so_both_directions_are_functions() {
        for (i, a) in STANDARD_OPS.iter().enumerate() {
            assert!(a.op.starts_with("std."), "{}", a.op);
            for b in &STANDARD_OPS[i + 1..] {
                assert_ne!(a.op, b.op);
                if let (Lowering::Node { op_type: x, .. }, Lowering::Node { op_type: y, .. }) =
                    (a.lowering, b.lowering)
                    && b.op != ops::batch_matmul::NAME
                {
                    assert_ne!(x, y, "{} and {}", a.op, b.op);
                }
            }
        }
        assert_eq!(by_op_type("Concat").map(|s| s.op), Some("std.concat"));
        assert_eq!(by_op_type("MatMul").map(|s| s.op), Some("std.matmul"));
        assert_eq!(
            by_op("std.silu").map(|s| s.lowering),
            Some(Lowering::SigmoidTimesInput)
        );
    }
}

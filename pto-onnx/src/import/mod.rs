//! ONNX bytes -> Model.
//!
//! The entry points ([`from_onnx`], [`from_onnx_with`], `model.rs`) read the model's proto and
//! its initializers' tensors, and an [`Importer`](importer) imports its graph (`graph.rs`):
//! each node of the default domain by its line of the table of ONNX op handlers
//! (`table.rs`, the one place that lists the operators import reads), each node of another
//! domain as the registry's op of its name (`custom.rs`). The handlers are by family:
//! constants and folded shape computations (`constants.rs`; any node of constants is
//! computed at import by `fold.rs`), the table of standard ops' form
//! (`std_op.rs`), movement (`movement.rs`), element-wise (`elementwise.rs`), reductions
//! (`reduce.rs`), normalizations (`normalization.rs`) and linear algebra (`linalg.rs`).
//! Around them: the options of an import (`options.rs`), attributes (`attribute.rs`), tensors
//! (`tensor.rs`), the types a graph declares (`declared.rs`) and the binding of symbolic dims
//! (`binding.rs`).

mod attribute;
mod binding;
mod constants;
mod custom;
mod declared;
mod elementwise;
mod fold;
mod graph;
mod importer;
mod linalg;
mod model;
mod movement;
mod normalization;
mod options;
mod reduce;
mod std_op;
mod table;
mod tensor;

pub(crate) use binding::{bound_shapes, symbolic_dims_text};
pub use declared::tensor_of_value;
pub(crate) use declared::{declared_inputs, declared_outputs};
pub(crate) use model::{bind_symbolic, build, build_keeping_constants, from_reader, read_source};
pub use model::{from_onnx, from_onnx_with};
pub use options::ImportOptions;
pub use table::{imported_op_types, param_inputs};
pub use tensor::tensor_from_onnx;

use pto_op::prelude::*;

// `#[path]` points at a file that exists, so only the inline-module errors remain: rustc's
// own (E0658, file modules in proc macro input) and #[custom_op]'s.
#[custom_op(name = "ui.non_inline_module")]
#[path = "non_inline_module/op.rs"]
mod op;

fn main() {}

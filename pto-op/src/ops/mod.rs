//! The standard operators, described with `#[custom_op]` like any other op: linking pto-op
//! registers them, and the engine knows them only by their descriptions.
//!
//! | op | inputs | params (defaults) | kernel |
//! |---|---|---|---|
//! | [`std.matmul`](matmul) | a, b | | yes (rank-2 `a`) |
//! | [`std.batch_matmul`](batch_matmul) | a, b | | yes |
//! | [`std.add`](add), [`std.sub`](sub), [`std.mul`](mul), [`std.div`](div) | a, b | | yes |
//! | [`std.relu`](relu), [`std.sigmoid`](sigmoid), [`std.silu`](silu) | x | | yes |
//! | [`std.neg`](neg), [`std.sqrt`](sqrt), [`std.tanh`](tanh) | x | | yes |
//! | [`std.pow`](pow) | a, b | | yes (float bases) |
//! | [`std.gelu`](gelu) | x | `approximate: String = "none"` | yes |
//! | [`std.softmax`](softmax) | x | `axis: i64 = -1` | yes (last axis) |
//! | [`std.layer_norm`](layer_norm) | x, gamma, beta | `eps: f32 = 1e-5` | yes |
//! | [`std.rms_norm`](rms_norm) | x, gamma | `eps: f32 = 1e-6` | yes |
//! | [`std.transpose`](transpose) | x | `perm: Vec<i64>` | no |
//! | [`std.reshape`](reshape) | x | `shape: Vec<i64>`, `allowzero: bool = false` | no |
//! | [`std.concat`](mod@concat) | a, b | `axis: i64` | no |
//! | [`std.slice`](mod@slice) | x | `starts: Vec<i64>`, `ends: Vec<i64>`, `axes: Vec<i64> = []`, `steps: Vec<i64> = []` | no |
//! | [`std.gather`](gather) | data, indices | `axis: i64 = 0` | no |
//! | [`std.cast`](cast) | x | `to: String`, `saturate: bool = true`, `round_mode: String = "up"` | no |
//! | [`std.reduce_mean`](reduce_mean), [`std.reduce_sum`](reduce_sum) | x | `axes: Vec<i64> = []`, `keepdims: bool = true` | no |
//! | [`std.exp`](exp), [`std.erf`](erf), [`std.reciprocal`](reciprocal) | x | | yes |
//! | [`std.max`](max), [`std.min`](min) | a, b | | yes (floats) |
//! | [`std.equal`](equal) | a, b | | no |
//! | [`std.where`](select) | cond, x, y | | no |
//! | [`std.reduce_max`](reduce_max) | x | `axes: Vec<i64> = []`, `keepdims: bool = true` | no |
//! | [`std.expand`](expand) | x | `shape: Vec<i64>` | no |
//! | [`std.trilu`](trilu) | x | `upper: bool = true`, `k: i64 = 0` | no |
//! | [`std.less`](less), [`std.less_equal`](less_equal), [`std.greater`](greater), [`std.greater_equal`](greater_equal) | a, b | | no |
//! | [`std.clip`](clip) | x, lo, hi | | no |
//! | [`std.and`](and), [`std.or`](or), [`std.xor`](xor) | a, b | | no |
//! | [`std.not`](not), [`std.is_nan`](is_nan) | x | | no |
//! | [`std.is_inf`](is_inf) | x | `detect_positive: bool = true`, `detect_negative: bool = true` | no |
//! | [`std.cos`](cos), [`std.sin`](sin), [`std.abs`](abs), [`std.log`](log), [`std.sign`](sign) | x | | no |
//! | [`std.floor`](floor), [`std.ceil`](ceil), [`std.round`](round) | x | | no |
//!
//! Float ops compute in f32 and return the input's dtype. Each op's module doc is its
//! schema doc, with the exact rules.
//!
//! ```
//! use pto_op::ops::add;
//! use pto_op::Tensor;
//!
//! let a = Tensor::from_vec([2, 2], vec![1.0f32, 2.0, 3.0, 4.0]).unwrap();
//! let b = Tensor::from_vec([2], vec![10.0f32, 20.0]).unwrap();
//! let y = add::def().run_reference(&[&a, &b], &Default::default()).unwrap();
//! assert_eq!(y[0].to_vec::<f32>().unwrap(), vec![11.0, 22.0, 13.0, 24.0]);
//! assert!(pto_op::registry::find("std.add").is_ok());
//! ```

/// A float element-wise op of one input `x` and one output `y` of the shape and dtype of `x`:
/// the `#[custom_op]` module `$module` named `$name`, whose reference applies `reference`
/// (an `f32 -> f32` function) to each element and whose kernel applies `kernel` (a
/// `&Tile -> Tile` function) to each row tile, both in f32, with `live_tiles` row tiles
/// live in UB at once (the module's `LIVE_TILES`, see
/// [`crate::kernel::rows::elementwise_tiles`]). The doc comments given first document the
/// module. The module's scope must hold `expect_float`, `activation_reference` and
/// `activation_kernel`.
macro_rules! float_unary_op {
    (
        $(#[doc = $doc:tt])*
        $name:literal, $module:ident,
        reference: $reference:expr,
        kernel: $tile:expr,
        live_tiles: $live:expr $(,)?
    ) => {
        $(#[doc = $doc])*
        #[custom_op(name = $name)]
        pub mod $module {
            use super::*;

            /// Row tiles (f32) the kernel keeps live in UB at once, on the simulator and in
            /// its Ascend C lowering: what its column chunks are sized for
            /// ([`crate::kernel::rows::elementwise_tiles`]).
            pub const LIVE_TILES: usize = $live;

            #[infer_shape]
            fn infer_shape(x: &Shape) -> Result<Shape, OpError> {
                Ok(x.clone())
            }

            #[infer_dtype]
            fn infer_dtype(x: DType) -> Result<DType, OpError> {
                expect_float("x", x)
            }

            #[reference]
            fn reference(x: &Tensor) -> Result<Tensor, OpError> {
                Ok(activation_reference(x, $reference))
            }

            #[kernel]
            fn kernel(k: &mut Kernel, x: &Global, y: &Global) -> Result<(), OpError> {
                activation_kernel(k, x, y, LIVE_TILES, $tile)
            }
        }
    };
}

/// A float element-wise op of one input `x` and one output `y` of the shape and dtype of `x`,
/// without a kernel (on a kernel target it runs on the CPU reference, a fallback the compile
/// report lists): the `#[custom_op]` module `$module` named `$name`, whose reference applies
/// `reference` (an `f64 -> f64` function) to each element in f64 and rounds the result to
/// the dtype. The doc comments given first document the module. The module's scope must
/// hold `expect_float` and `f64_reference`.
macro_rules! float_unary_reference_op {
    (
        $(#[doc = $doc:tt])*
        $name:literal, $module:ident,
        reference: $reference:expr $(,)?
    ) => {
        $(#[doc = $doc])*
        #[custom_op(name = $name)]
        pub mod $module {
            use super::*;

            #[infer_shape]
            fn infer_shape(x: &Shape) -> Result<Shape, OpError> {
                Ok(x.clone())
            }

            #[infer_dtype]
            fn infer_dtype(x: DType) -> Result<DType, OpError> {
                expect_float("x", x)
            }

            #[reference]
            fn reference(x: &Tensor) -> Result<Tensor, OpError> {
                f64_reference(x, $reference)
            }
        }
    };
}

/// A binary op with numpy broadcasting, inputs `a` and `b`, output `y`: the `#[custom_op]`
/// module `$module` named `$name`, whose dtype is `dtype(a, b)`, reference
/// `reference(a, b)` and, when given, kernel `kernel(k, a, b, y)` (the module's `NAME` is in
/// scope for its errors, and its `LIVE_TILES`, `live_tiles`, for the kernel's column chunks:
/// see [`crate::kernel::rows::elementwise_tiles`]). Without a kernel, a kernel target runs
/// the op on the CPU reference (a fallback the compile report lists). The doc comments given
/// first document the module. The module's scope must hold `broadcast_shapes`.
macro_rules! broadcast_binary_op {
    (
        $(#[doc = $doc:tt])*
        $name:literal, $module:ident,
        dtype: $dtype:expr,
        reference: $reference:expr
        $(, kernel: $kernel:expr, live_tiles: $live:expr)? $(,)?
    ) => {
        $(#[doc = $doc])*
        #[custom_op(name = $name)]
        pub mod $module {
            use super::*;

            #[infer_shape]
            fn infer_shape(a: &Shape, b: &Shape) -> Result<Shape, OpError> {
                broadcast_shapes(a, b)
            }

            #[infer_dtype]
            fn infer_dtype(a: DType, b: DType) -> Result<DType, OpError> {
                ($dtype)(a, b)
            }

            #[reference]
            fn reference(a: &Tensor, b: &Tensor) -> Result<Tensor, OpError> {
                ($reference)(a, b)
            }

            $(
                /// Row tiles the kernel keeps live in UB at once, on the simulator and in
                /// its Ascend C lowering, each of f32 or of the dtype if wider: what its
                /// column chunks are sized for ([`crate::kernel::rows::elementwise_tiles`]).
                pub const LIVE_TILES: usize = $live;

                #[kernel]
                fn kernel(
                    k: &mut Kernel,
                    a: &Global,
                    b: &Global,
                    y: &Global,
                ) -> Result<(), OpError> {
                    ($kernel)(k, a, b, y)
                }
            )?
        }
    };
}

// Registering an op puts it in a linkme slice: a `#[link_section]` static, which the
// `unsafe_code` lint reports here because the slices' macros are this crate's own (see
// Cargo.toml). The op families hold those registrations and allow the lint; the other
// files forbid it. No file here has an `unsafe` block.
#[forbid(unsafe_code)]
mod assemble;
#[forbid(unsafe_code)]
pub mod axes;
mod checks;
#[allow(unsafe_code)]
mod comparison;
#[allow(unsafe_code)]
mod elementwise;
#[allow(unsafe_code)]
mod linalg;
#[allow(unsafe_code)]
mod logic;
#[forbid(unsafe_code)]
pub mod math;
#[allow(unsafe_code)]
mod normalization;
#[allow(unsafe_code)]
mod reduce;
#[cfg(test)]
#[forbid(unsafe_code)]
mod reference_tests;
#[allow(unsafe_code)]
mod shape_ops;
#[allow(unsafe_code)]
mod unary_math;

pub use comparison::{clip, equal, greater, greater_equal, less, less_equal, max, min, select};
pub use elementwise::{GeluForm, add, div, gelu, mul, relu, sigmoid, silu, sub};
pub use linalg::{batch_matmul, matmul};
pub use logic::{and, is_inf, is_nan, not, or, xor};
pub use normalization::{layer_norm, rms_norm};
pub use reduce::{reduce_max, reduce_mean, reduce_sum, softmax};
pub use shape_ops::{cast, concat, expand, gather, reshape, slice, transpose, trilu};
pub use unary_math::{
    abs, ceil, cos, erf, exp, floor, log, neg, pow, reciprocal, round, sign, sin, sqrt, tanh,
};

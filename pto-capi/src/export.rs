//! [`export_c_abi!`](crate::export_c_abi): the `extern "C"` functions of `include/pto_capi.h`,
//! expanded in the deployment's own `cdylib` crate.
//!
//! The functions are defined in the crate that is built into the shared library, not here:
//! this crate is a plain library that links no operator crate, and the library a package's
//! op_host loads must answer for the deployment's ops. A deployment's crate links its
//! operator crates and expands the macro once:
//!
//! ```
//! use pto_op as _; // a deployment names its operator crates here: `use my_ops as _;`
//! pto_capi::export_c_abi!();
//! # fn main() {
//! #     let op = c"std.relu";
//! #     let mut fingerprint = 0u64;
//! #     // SAFETY: a NUL-terminated name, a live u64, no error buffer.
//! #     let status = unsafe {
//! #         pto_op_fingerprint(op.as_ptr(), &raw mut fingerprint, std::ptr::null_mut(), 0)
//! #     };
//! #     assert_eq!(status, 0);
//! #     let relu = pto_op::registry::find("std.relu").expect("a std op");
//! #     assert_eq!(fingerprint, relu.fingerprint().0);
//! # }
//! ```
//!
//! Each function is one call of its body in [`ffi`](crate::ffi). rustc does not report a lint
//! inside another crate's macro at the call site, so the expanding crate's `unsafe_code`
//! level does not apply to the expansion: a deployment's crate may `forbid(unsafe_code)`, as
//! the examples' (`examples/capi`) does. The `unsafe` is this crate's, which allows it in
//! `ffi.rs` alone.

/// Defines the `extern "C"` functions of `include/pto_capi.h` ([`HEADER`](crate::HEADER)),
/// `#[unsafe(no_mangle)]`, in the crate that expands it: `pto_infer`, `pto_infer_shapes`,
/// `pto_infer_dtypes`, `pto_op_fingerprint` and `pto_capi_version`. They answer for the ops
/// linked into the library: the standard ops, and those of every operator crate the
/// expanding crate names (`use my_ops as _;`).
///
/// Expand it once, at the root of a `cdylib` crate (see `docs/deploying.md`):
///
/// ```ignore
/// use my_ops as _;
/// pto_capi::export_c_abi!();
/// ```
#[macro_export]
macro_rules! export_c_abi {
    () => {
        $crate::export_c_abi!(@infer
            /// `pto_infer` of `pto_capi.h`: the output types of an op, by its own rules.
            ///
            /// # Safety
            ///
            /// `op_name` and `attrs_json` (which may be null) are NUL-terminated; `inputs`
            /// points to `num_inputs` descriptors (or is null when `num_inputs` is 0);
            /// `outputs` is valid for writes of `output_capacity` descriptors; `num_outputs`
            /// is valid for one write; `error` is null or valid for `error_capacity` bytes.
            /// None of them is written by another thread during the call.
            pto_infer, $crate::ffi::PtoTensorDesc, $crate::infer
        );
        $crate::export_c_abi!(@infer
            /// `pto_infer_shapes` of `pto_capi.h`: the output shapes of an op, by its own
            /// `#[infer_shape]` (a graph engine's InferShape hook).
            ///
            /// # Safety
            ///
            /// As `pto_infer`, with shapes for descriptors.
            pto_infer_shapes, $crate::ffi::PtoShape, $crate::infer_shapes
        );
        $crate::export_c_abi!(@infer
            /// `pto_infer_dtypes` of `pto_capi.h`: the output dtypes (ONNX codes) of an op, by
            /// its own `#[infer_dtype]` (a graph engine's InferDataType hook).
            ///
            /// # Safety
            ///
            /// As `pto_infer`, with ONNX dtype codes for descriptors.
            pto_infer_dtypes, i32, $crate::infer_dtypes
        );

        /// `pto_op_fingerprint` of `pto_capi.h`: an op's signature fingerprint.
        ///
        /// # Safety
        ///
        /// `op_name` is NUL-terminated; `fingerprint` is valid for one write; `error` is null
        /// or valid for `error_capacity` bytes.
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn pto_op_fingerprint(
            op_name: *const ::core::ffi::c_char,
            fingerprint: *mut u64,
            error: *mut ::core::ffi::c_char,
            error_capacity: usize,
        ) -> i32 {
            // SAFETY: the contract above is `op_fingerprint`'s.
            unsafe { $crate::ffi::op_fingerprint(op_name, fingerprint, error, error_capacity) }
        }

        /// `pto_capi_version` of `pto_capi.h`: the version this library was built from.
        #[unsafe(no_mangle)]
        pub extern "C" fn pto_capi_version() -> *const ::core::ffi::c_char {
            $crate::ffi::version()
        }
    };
    // One inference function: `$name` over C values `$value`, by `$rules`.
    (@infer $(#[$doc:meta])* $name:ident, $value:ty, $rules:path) => {
        $(#[$doc])*
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $name(
            op_name: *const ::core::ffi::c_char,
            inputs: *const $value,
            num_inputs: usize,
            attrs_json: *const ::core::ffi::c_char,
            outputs: *mut $value,
            output_capacity: usize,
            num_outputs: *mut usize,
            error: *mut ::core::ffi::c_char,
            error_capacity: usize,
        ) -> i32 {
            // SAFETY: the contract above is `infer_entry`'s.
            unsafe {
                $crate::ffi::infer_entry(
                    op_name,
                    inputs,
                    num_inputs,
                    attrs_json,
                    outputs,
                    output_capacity,
                    num_outputs,
                    error,
                    error_capacity,
                    $rules,
                )
            }
        }
    };
}

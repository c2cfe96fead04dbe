//! The custom-op package of a model: the msopgen project CANN builds into a vendor op package
//! that ATC and the graph engine load, one op per custom (non-`std`) op of the model.
//!
//! ```text
//! DIR/ pto_package.json                      the manifest: ops, fingerprints, instances, SoC
//!      CMakePresets.json  build.sh  (Kirin: build_and_install.sh)  op_desc.json
//!      CMakeLists.txt, framework/, framework/onnx_plugin/, op_host/, op_kernel/: one
//!      CMakeLists.txt each, the samples' ASC project (`cmake.rs`)
//!      capi/src/lib.rs  capi/build.sh          the C ABI library of the package's ops
//!      op_host/<stem>.cpp                    OpDef, InferShape/InferDataType, TilingFunc
//!      op_host/<stem>_infer.h                the op's C ABI calls (pto_infer_shapes/_dtypes)
//!      op_host/<stem>_tiling.h, op_kernel/<stem>.cpp, op_kernel/<stem>_tiling.h
//!      op_kernel/<stem>.pto                  the kernel's text form, one per instance: editable
//!      op_host/pto_capi.h, op_host/pto_infer_common.h
//!      op_graph/<stem>_proto.h               REG_OP ... OP_END_FACTORY_REG
//!      framework/onnx_plugin/<stem>_plugin.cc, framework/onnx_plugin/pto_onnx_attrs.h
//! ```
//!
//! Shape and dtype inference of the deployed op are the Rust description's own: op_host
//! calls the C ABI of `pto-capi` (`pto_capi.h`), which runs the op's `#[infer_shape]` and
//! `#[infer_dtype]`, in the package's own C ABI library: a `cdylib` crate in `capi/` that
//! links the crates defining the ops and expands `pto_capi::export_c_abi!()` (`capi.rs`;
//! `capi/build.sh` builds it from the crates' directories on the building machine). Standard ops (`std.*`)
//! are exported as ONNX standard operators and served by CANN's built-in kernels, so they are
//! not part of the package.
//!
//! Each op's kernel ships in the tile language's text form beside its lowering, and the
//! manifest holds the deployed kernels: an edit of either form is checked and swapped in by
//! [`redeploy()`](redeploy::redeploy) (`pto redeploy`), and [`with_package_kernels`] makes a
//! model run the deployed kernels.
//!
//! One kernel serves each op: every instance of an op in the model (its input types and
//! params) must lower to the same kernel source, and the TilingFunc picks the instance's
//! tiling values by input shapes and params. A model whose instances of one op lower to
//! different kernels is refused with [`PackageError::InstancesDiffer`].
//!
//! Nothing here has run through a CANN toolkit on this machine (none is installed): the
//! generated kernels compile against the host implementation of the Ascend C API (see
//! [`super::host`]), the op_host inference headers compile and run against the examples' C
//! ABI library; the graph-engine glue (OpDef, REG_OP, the ONNX plug-in, the CMake files)
//! follows the documented API and is marked unverified in its comments.
//!
//! The files, one job each: `manifest.rs` (`pto_package.json`: its types, reading it),
//! `custom_ops.rs` (a model's custom ops and their instances), `generate.rs` (which files a
//! package holds and their text, from `cpp.rs` for the C++ sources and `project.rs` for the
//! msopgen project), `write.rs` (placing the directory atomically), `check.rs` (a package
//! against a model), `paths.rs` (the manifest's paths, confined to the package), `capi.rs` (the C ABI
//! library's crate), `build.rs`
//! (`build.sh`, `CMakeLists.txt`, running the build),
//! `cann_types.rs` (CANN's names of the types), `error.rs`, `toolkit.rs`, and [`redeploy`](mod@redeploy).

mod build;
mod cann_types;
mod capi;
mod check;
mod cmake;
mod cpp;
mod custom_ops;
mod error;
mod generate;
mod manifest;
mod paths;
mod project;
pub mod redeploy;
mod toolkit;
mod write;

pub use build::{build_package, toolkit};
pub use capi::{build_capi_library, check_capi_library, framework_source};
pub use check::{
    CheckedEdit, check_package, check_package_kernels, load_package_kernels, with_package_kernels,
};
pub use error::PackageError;
pub use generate::{cpp_literal, inference_sources, kernel_file, op_type_name, stem_name};
pub use manifest::{
    DeployedKernel, Instance, InstanceTiling, KernelOrigin, MANIFEST_FILE, MANIFEST_FORMAT,
    Manifest, PackagedOp, read_manifest,
};
pub use redeploy::{RedeployError, RedeployOptions, RedeployReport, package_kernels, redeploy};
pub use toolkit::TOOLKIT_ENV;
pub use write::write_package;

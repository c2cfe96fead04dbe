//! The `kirin` target: a Kirin phone NPU (or an Ascend server) through its vendor runtime,
//! loaded at run time (feature `device`).
//!
//! Custom ops reach a Kirin NPU only inside an offline model: the package `pto package` writes
//! is built with the CANN toolkit and installed, ATC converts the model's ONNX export into an
//! `.omc`, and the HiAI Foundation / NNRt runtime of HarmonyOS runs it (see
//! `docs/deploying.md`). This module loads that runtime with `dlopen` and resolves the calls of
//! the documented sequence; [`DeviceRuntime::run_offline_model`] runs a converted model.
//!
//! Where the runtime is looked for, in order: [`KirinConfig::runtime`], the environment
//! variable [`RUNTIME_ENV`] (a directory, or `:`-separated directories), then the system's
//! locations ([`SYSTEM_DIRS`]) and the dynamic loader's own search path. Where none is present
//! (this project's machines) the target fails at once, at compile time of a model, with an
//! error that names every library and place it tried: never a fake result.
//!
//! NOT VERIFIED ON HARDWARE: no Kirin device or Ascend runtime was available where this was
//! written. The symbol names and signatures follow the HarmonyOS NNRt headers
//! (`neural_network_core.h`) and the HiAI Foundation calls the CANN Kirin recipes make;
//! running a model has not been exercised.

#![allow(unsafe_code)]

use std::ffi::{CStr, c_char, c_void};
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use libloading::Library;
use pto_op::__private::linkme;
use pto_op::target::TargetDef;
use pto_op::{Attributes, Execution, Executor, Lowering, OpDef, OpError, Tensor, TensorType};

/// The environment variable naming where the device runtime's libraries are (a directory,
/// or several separated by `:`).
pub const RUNTIME_ENV: &str = "PTO_DEVICE_RUNTIME";

/// Where the runtimes install their libraries: HarmonyOS's NDK directory, then the CANN
/// toolkit's default locations (for ACL on Ascend servers).
pub const SYSTEM_DIRS: [&str; 3] = [
    "/system/lib64/ndk",
    "/usr/local/Ascend/ascend-toolkit/latest/lib64",
    "/usr/local/Ascend/cann/lib64",
];

/// A device runtime the target can load.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RuntimeKind {
    /// HarmonyOS's HiAI Foundation with NNRt (`libhiai_foundation.so`,
    /// `libneural_network_core.so`): Kirin 9030 / X90 phones and tablets.
    HiaiFoundation,
    /// CANN's ACL (`libascendcl.so`): Ascend servers. Only loaded and checked here; running
    /// models through it is not implemented (the Kirin path is the NNRt one).
    AscendCl,
}

impl RuntimeKind {
    /// The libraries of the runtime, all of which must load.
    pub const fn libraries(self) -> &'static [&'static str] {
        match self {
            RuntimeKind::HiaiFoundation => &["libhiai_foundation.so", "libneural_network_core.so"],
            RuntimeKind::AscendCl => &["libascendcl.so"],
        }
    }
}

impl fmt::Display for RuntimeKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(match self {
            RuntimeKind::HiaiFoundation => "HiAI Foundation/NNRt",
            RuntimeKind::AscendCl => "ACL",
        })
    }
}

/// The configuration of the `kirin` target.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct KirinConfig {
    /// Directories to look in first for the runtime's libraries.
    pub runtime: Vec<PathBuf>,
}

impl KirinConfig {
    /// The configuration from the environment: [`RUNTIME_ENV`]'s directories.
    pub fn from_env() -> KirinConfig {
        KirinConfig {
            runtime: std::env::var_os(RUNTIME_ENV)
                .map(|v| std::env::split_paths(&v).collect())
                .unwrap_or_default(),
        }
    }

    /// Every directory searched, in order; `None` stands for the dynamic loader's own path.
    fn search(&self) -> Vec<Option<PathBuf>> {
        self.runtime
            .iter()
            .cloned()
            .map(Some)
            .chain(SYSTEM_DIRS.iter().map(|d| Some(PathBuf::from(d))))
            .chain([None])
            .collect()
    }
}

/// An error of the `kirin` target.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum KirinError {
    /// No device runtime could be loaded.
    #[error(
        "no device runtime: looked for {wanted} in {places}; the attempts:\n  {}\nset {RUNTIME_ENV} \
         to the directory of the runtime's libraries (on a HarmonyOS device: /system/lib64/ndk)",
        attempts.join("\n  ")
    )]
    NoRuntime {
        /// The libraries looked for.
        wanted: String,
        /// The places searched.
        places: String,
        /// Each load tried and why it failed.
        attempts: Vec<String>,
    },
    /// A loaded runtime lacks a function of the sequence.
    #[error("the {kind} runtime in `{}` has no `{symbol}`", library.display())]
    MissingSymbol {
        /// The runtime.
        kind: RuntimeKind,
        /// The library searched.
        library: PathBuf,
        /// The function.
        symbol: &'static str,
        /// The loader's error.
        #[source]
        source: libloading::Error,
    },
    /// A runtime call failed.
    #[error("{call} failed{}", code.map_or_else(String::new, |c| format!(" with code {c}")))]
    Call {
        /// The function.
        call: &'static str,
        /// Its return code, when it returns one.
        code: Option<i32>,
    },
    /// None of the runtime's NNRt devices is the NPU device the public app selects.
    #[error(
        "no NNRt device named `{NPU_DEVICE_NAME}` (the HiAI Foundation NPU): the runtime \
         lists {}",
        match seen.is_empty() {
            true => "no device".to_owned(),
            false => seen.join(", "),
        }
    )]
    NoNpuDevice {
        /// Each device listed: its id and name, or why its name could not be read.
        seen: Vec<String>,
    },
    /// The model's inputs or outputs do not match what the offline model declares.
    #[error("{0}")]
    Mismatch(String),
    /// Running models is not implemented for this runtime.
    #[error("running offline models through {0} is not implemented (only HiAI Foundation/NNRt)")]
    Unsupported(RuntimeKind),
}

// The NNRt C types, opaque handles and return codes (neural_network_core.h).
type Handle = *mut c_void;
type ReturnCode = i32;
const OH_NN_SUCCESS: ReturnCode = 0;

/// The name of the NNRt device that runs offline models on the Kirin NPU: the device the
/// public app selects by name (hicann/cann-recipes-harmony-infer,
/// `harmony_infer/harmony_os_next/Soble/entry/src/main/cpp/HIAIModelManager.cpp`,
/// `GetDeviceID`; `harmony_acl/src/ndk/hiai_ndk_nncore.cpp`, `HIAI_NDK_GetDeviceID`).
pub const NPU_DEVICE_NAME: &str = "HIAI_F";

/// The NNRt device that runs the model, from the runtime's devices (id, and name or why it
/// could not be read, in `OH_NNDevice_GetAllDevicesID` order): the first named
/// [`NPU_DEVICE_NAME`], as the public app chooses (not the first device listed, which may be
/// the CPU). A device id of 0 is what the app's lookup returns for "none", so it is never
/// chosen.
///
/// # Errors
///
/// [`KirinError::NoNpuDevice`] listing every device seen.
pub fn select_device(devices: &[(usize, Result<String, i32>)]) -> Result<usize, KirinError> {
    devices
        .iter()
        .find(|(id, name)| *id != 0 && name.as_deref() == Ok(NPU_DEVICE_NAME))
        .map(|(id, _)| *id)
        .ok_or_else(|| KirinError::NoNpuDevice {
            seen: devices
                .iter()
                .map(|(id, name)| match name {
                    Ok(name) => format!("{id} `{name}`"),
                    Err(code) => format!("{id} (OH_NNDevice_GetName failed with code {code})"),
                })
                .collect(),
        })
}

/// What `HMS_HiAICompatibility_CheckFromBuffer` said of a model (`HiAI_Compatibility` of
/// `hiai_helper.h`: 0 compatible, 1 incompatible). The public app logs the value and goes
/// on to build the model (`HIAIModelManager::LoadModelFromBuffer`), the build being the
/// judge; so does this target.
pub fn compatibility_note(code: i32) -> String {
    let meaning = match code {
        0 => "compatible",
        1 => {
            "incompatible: the NPU may not run it as converted; building it anyway, as the \
              HiAI sample does (convert it again with this device's --soc_version if the build \
              fails)"
        }
        _ => "an unknown HiAI_Compatibility value; building it anyway",
    };
    format!("HMS_HiAICompatibility_CheckFromBuffer: {code} ({meaning})")
}

/// The NNRt and HiAI Foundation functions of the documented run sequence.
#[derive(Clone, Copy)]
struct NnrtCalls {
    check_compatibility: unsafe extern "C" fn(*const c_void, usize) -> i32,
    construct_compilation: unsafe extern "C" fn(*const c_void, usize) -> Handle,
    get_all_devices: unsafe extern "C" fn(*mut *const usize, *mut u32) -> ReturnCode,
    get_name: unsafe extern "C" fn(usize, *mut *const c_char) -> ReturnCode,
    set_device: unsafe extern "C" fn(Handle, usize) -> ReturnCode,
    build: unsafe extern "C" fn(Handle) -> ReturnCode,
    destroy_compilation: unsafe extern "C" fn(*mut Handle),
    construct_executor: unsafe extern "C" fn(Handle) -> Handle,
    destroy_executor: unsafe extern "C" fn(*mut Handle),
    input_count: unsafe extern "C" fn(Handle, *mut usize) -> ReturnCode,
    output_count: unsafe extern "C" fn(Handle, *mut usize) -> ReturnCode,
    input_desc: unsafe extern "C" fn(Handle, usize) -> Handle,
    output_desc: unsafe extern "C" fn(Handle, usize) -> Handle,
    desc_byte_size: unsafe extern "C" fn(Handle, *mut usize) -> ReturnCode,
    destroy_desc: unsafe extern "C" fn(*mut Handle) -> ReturnCode,
    create_tensor: unsafe extern "C" fn(usize, Handle) -> Handle,
    tensor_data: unsafe extern "C" fn(Handle) -> *mut c_void,
    destroy_tensor: unsafe extern "C" fn(*mut Handle) -> ReturnCode,
    run_sync: unsafe extern "C" fn(Handle, *mut Handle, usize, *mut Handle, usize) -> ReturnCode,
}

/// A loaded device runtime.
pub struct DeviceRuntime {
    kind: RuntimeKind,
    paths: Vec<PathBuf>,
    nnrt: Option<NnrtCalls>,
    // Keeps the libraries loaded while `nnrt`'s function pointers are in use; dropped last.
    _libraries: Vec<Library>,
}

impl fmt::Debug for DeviceRuntime {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DeviceRuntime")
            .field("kind", &self.kind)
            .field("paths", &self.paths)
            .finish_non_exhaustive()
    }
}

/// Resolves `name` in `library` as a function pointer of type `T`.
///
/// # Safety
///
/// `T` must be the function's true C signature.
unsafe fn symbol<T: Copy>(
    kind: RuntimeKind,
    library: &Library,
    path: &Path,
    name: &'static str,
) -> Result<T, KirinError> {
    let with_nul = format!("{name}\0");
    // SAFETY: the caller guarantees `T` is the symbol's signature; the pointer is copied out
    // and used only while `library` is kept loaded by the `DeviceRuntime` that holds both.
    unsafe { library.get::<T>(with_nul.as_bytes()) }
        .map(|s| *s)
        .map_err(|source| KirinError::MissingSymbol {
            kind,
            library: path.to_path_buf(),
            symbol: name,
            source,
        })
}

impl DeviceRuntime {
    /// Loads the first runtime found: HiAI Foundation/NNRt, else ACL, in each place of
    /// `config`'s search in turn.
    ///
    /// # Errors
    ///
    /// [`KirinError::NoRuntime`] naming every library and place tried, or
    /// [`KirinError::MissingSymbol`] for a runtime without a function of the sequence.
    pub fn load(config: &KirinConfig) -> Result<DeviceRuntime, KirinError> {
        let search = config.search();
        let mut attempts = Vec::new();
        for kind in [RuntimeKind::HiaiFoundation, RuntimeKind::AscendCl] {
            for place in &search {
                let mut libraries = Vec::new();
                let mut paths = Vec::new();
                for name in kind.libraries() {
                    let path = place
                        .as_ref()
                        .map_or_else(|| PathBuf::from(name), |dir| dir.join(name));
                    if place.is_some() && !path.exists() {
                        attempts.push(format!("{}: no such file", path.display()));
                        break;
                    }
                    // SAFETY: loading a vendor runtime runs its initialisers; these are the
                    // system libraries the runtime documents for exactly this use.
                    match unsafe { Library::new(&path) } {
                        Ok(library) => {
                            libraries.push(library);
                            paths.push(path);
                        }
                        Err(e) => {
                            attempts.push(format!("{}: {e}", path.display()));
                            break;
                        }
                    }
                }
                if libraries.len() == kind.libraries().len() {
                    return DeviceRuntime::resolve(kind, paths, libraries);
                }
            }
        }
        let places = search
            .iter()
            .map(|p| {
                p.as_ref().map_or_else(
                    || "the dynamic loader's path (LD_LIBRARY_PATH, ld.so.cache)".to_owned(),
                    |d| d.display().to_string(),
                )
            })
            .collect::<Vec<_>>()
            .join(", ");
        Err(KirinError::NoRuntime {
            wanted: format!(
                "{} ({}) or {} ({})",
                RuntimeKind::HiaiFoundation.libraries().join(" + "),
                RuntimeKind::HiaiFoundation,
                RuntimeKind::AscendCl.libraries().join(""),
                RuntimeKind::AscendCl
            ),
            places,
            attempts,
        })
    }

    fn resolve(
        kind: RuntimeKind,
        paths: Vec<PathBuf>,
        libraries: Vec<Library>,
    ) -> Result<DeviceRuntime, KirinError> {
        let nnrt = match kind {
            RuntimeKind::HiaiFoundation => {
                let (hiai, nncore) = (&libraries[0], &libraries[1]);
                let (hiai_path, nncore_path) = (&paths[0], &paths[1]);
                // Each function's pointer, typed by the field it is stored in.
                macro_rules! resolve {
                    ($library:expr, $path:expr, $name:literal) => {
                        // SAFETY: the field types are the C signatures of
                        // neural_network_core.h and the HiAI Foundation NDK (NOT VERIFIED ON
                        // HARDWARE, see the module docs).
                        unsafe { symbol(kind, $library, $path, $name) }?
                    };
                }
                macro_rules! nn {
                    ($name:literal) => {
                        resolve!(nncore, nncore_path, $name)
                    };
                }
                Some(NnrtCalls {
                    check_compatibility: resolve!(
                        hiai,
                        hiai_path,
                        "HMS_HiAICompatibility_CheckFromBuffer"
                    ),
                    construct_compilation: nn!("OH_NNCompilation_ConstructWithOfflineModelBuffer"),
                    get_all_devices: nn!("OH_NNDevice_GetAllDevicesID"),
                    get_name: nn!("OH_NNDevice_GetName"),
                    set_device: nn!("OH_NNCompilation_SetDevice"),
                    build: nn!("OH_NNCompilation_Build"),
                    destroy_compilation: nn!("OH_NNCompilation_Destroy"),
                    construct_executor: nn!("OH_NNExecutor_Construct"),
                    destroy_executor: nn!("OH_NNExecutor_Destroy"),
                    input_count: nn!("OH_NNExecutor_GetInputCount"),
                    output_count: nn!("OH_NNExecutor_GetOutputCount"),
                    input_desc: nn!("OH_NNExecutor_CreateInputTensorDesc"),
                    output_desc: nn!("OH_NNExecutor_CreateOutputTensorDesc"),
                    desc_byte_size: nn!("OH_NNTensorDesc_GetByteSize"),
                    destroy_desc: nn!("OH_NNTensorDesc_Destroy"),
                    create_tensor: nn!("OH_NNTensor_Create"),
                    tensor_data: nn!("OH_NNTensor_GetDataBuffer"),
                    destroy_tensor: nn!("OH_NNTensor_Destroy"),
                    run_sync: nn!("OH_NNExecutor_RunSync"),
                })
            }
            RuntimeKind::AscendCl => {
                for name in ["aclInit", "aclmdlLoadFromMem", "aclmdlExecute"] {
                    // SAFETY: resolved only to check presence; never called.
                    unsafe { symbol::<*const c_void>(kind, &libraries[0], &paths[0], name) }?;
                }
                None
            }
        };
        Ok(DeviceRuntime {
            kind,
            paths,
            nnrt,
            _libraries: libraries,
        })
    }

    /// The runtime loaded.
    pub fn kind(&self) -> RuntimeKind {
        self.kind
    }

    /// The libraries loaded.
    pub fn paths(&self) -> &[PathBuf] {
        &self.paths
    }

    /// Runs an offline model (an `.omc` that ATC converted from the model's ONNX export, with
    /// the package installed) on the NPU device named [`NPU_DEVICE_NAME`] ([`select_device`]),
    /// the documented NNRt sequence: check compatibility (logged on stderr,
    /// [`compatibility_note`], not fatal), construct the compilation from the buffer, set the
    /// device, build,
    /// construct the executor, create the input and output tensors, `RunSync`. `outputs`
    /// gives the output types (the pto model's); each output's byte size must match.
    ///
    /// NOT VERIFIED ON HARDWARE.
    ///
    /// # Errors
    ///
    /// [`KirinError::Call`] naming the failing call, [`KirinError::NoNpuDevice`] without the
    /// NPU device, [`KirinError::Mismatch`] for counts or sizes that differ from the offline
    /// model's, [`KirinError::Unsupported`] on ACL.
    pub fn run_offline_model(
        &self,
        model: &[u8],
        inputs: &[&Tensor],
        outputs: &[TensorType],
    ) -> Result<Vec<Tensor>, KirinError> {
        let nn = self.nnrt.ok_or(KirinError::Unsupported(self.kind))?;
        let ok = |call: &'static str, code: ReturnCode| {
            if code == OH_NN_SUCCESS {
                Ok(())
            } else {
                Err(KirinError::Call {
                    call,
                    code: Some(code),
                })
            }
        };
        let non_null = |call: &'static str, handle: Handle| {
            if handle.is_null() {
                Err(KirinError::Call { call, code: None })
            } else {
                Ok(handle)
            }
        };
        // SAFETY (this block): every call is one of the NNRt sequence with the arguments its
        // header documents; the model buffer and tensors outlive the calls that read them;
        // every handle created is destroyed once, below, whatever fails.
        unsafe {
            let compatibility = (nn.check_compatibility)(model.as_ptr().cast(), model.len());
            eprintln!("note: target kirin: {}", compatibility_note(compatibility));
            let mut compilation = non_null(
                "OH_NNCompilation_ConstructWithOfflineModelBuffer",
                (nn.construct_compilation)(model.as_ptr().cast(), model.len()),
            )?;
            let result = (|| {
                let mut ids: *const usize = std::ptr::null();
                let mut count = 0u32;
                ok(
                    "OH_NNDevice_GetAllDevicesID",
                    (nn.get_all_devices)(&raw mut ids, &raw mut count),
                )?;
                let ids: &[usize] = match ids.is_null() {
                    true => &[],
                    false => std::slice::from_raw_parts(ids, count as usize),
                };
                let devices: Vec<(usize, Result<String, ReturnCode>)> = ids
                    .iter()
                    .map(|&id| {
                        let mut name: *const c_char = std::ptr::null();
                        let code = (nn.get_name)(id, &raw mut name);
                        let name = match (code, name.is_null()) {
                            (OH_NN_SUCCESS, false) => {
                                Ok(CStr::from_ptr(name).to_string_lossy().into_owned())
                            }
                            (OH_NN_SUCCESS, true) => Err(OH_NN_SUCCESS),
                            (code, _) => Err(code),
                        };
                        (id, name)
                    })
                    .collect();
                let device = select_device(&devices)?;
                ok(
                    "OH_NNCompilation_SetDevice",
                    (nn.set_device)(compilation, device),
                )?;
                ok("OH_NNCompilation_Build", (nn.build)(compilation))?;
                let mut executor = non_null(
                    "OH_NNExecutor_Construct",
                    (nn.construct_executor)(compilation),
                )?;
                let run = run_with_executor(&nn, executor, device, inputs, outputs);
                (nn.destroy_executor)(&raw mut executor);
                run
            })();
            (nn.destroy_compilation)(&raw mut compilation);
            result
        }
    }
}

/// Creates the tensors, runs, copies the outputs out, destroys the tensors.
///
/// # Safety
///
/// `executor` is a live NNRt executor of `nn`'s runtime.
unsafe fn run_with_executor(
    nn: &NnrtCalls,
    executor: Handle,
    device: usize,
    inputs: &[&Tensor],
    outputs: &[TensorType],
) -> Result<Vec<Tensor>, KirinError> {
    let mut count = [0usize; 2];
    // SAFETY: `executor` is live by the contract; the counts are local.
    unsafe {
        if (nn.input_count)(executor, &raw mut count[0]) != OH_NN_SUCCESS
            || (nn.output_count)(executor, &raw mut count[1]) != OH_NN_SUCCESS
        {
            return Err(KirinError::Call {
                call: "OH_NNExecutor_GetInputCount/GetOutputCount",
                code: None,
            });
        }
    }
    if count != [inputs.len(), outputs.len()] {
        return Err(KirinError::Mismatch(format!(
            "the offline model has {} inputs and {} outputs, the model {} and {}",
            count[0],
            count[1],
            inputs.len(),
            outputs.len()
        )));
    }
    let mut tensors: Vec<Handle> = Vec::new();
    let mut descs: Vec<Handle> = Vec::new();
    // SAFETY: descriptors and tensors are created from the live executor, written only
    // within the byte size the runtime reports, and destroyed below.
    let result = unsafe {
        (|| {
            let mut sizes = Vec::new();
            for index in 0..inputs.len() + outputs.len() {
                let desc = if index < inputs.len() {
                    (nn.input_desc)(executor, index)
                } else {
                    (nn.output_desc)(executor, index - inputs.len())
                };
                if desc.is_null() {
                    return Err(KirinError::Call {
                        call: "OH_NNExecutor_CreateInput/OutputTensorDesc",
                        code: None,
                    });
                }
                descs.push(desc);
                let mut size = 0usize;
                if (nn.desc_byte_size)(desc, &raw mut size) != OH_NN_SUCCESS {
                    return Err(KirinError::Call {
                        call: "OH_NNTensorDesc_GetByteSize",
                        code: None,
                    });
                }
                sizes.push(size);
                let tensor = (nn.create_tensor)(device, desc);
                if tensor.is_null() {
                    return Err(KirinError::Call {
                        call: "OH_NNTensor_Create",
                        code: None,
                    });
                }
                tensors.push(tensor);
            }
            for (index, input) in inputs.iter().enumerate() {
                let bytes = input.to_le_bytes();
                if bytes.len() != sizes[index] {
                    return Err(KirinError::Mismatch(format!(
                        "input {index}: {} bytes given, the offline model takes {}",
                        bytes.len(),
                        sizes[index]
                    )));
                }
                let data = (nn.tensor_data)(tensors[index]).cast::<u8>();
                if data.is_null() {
                    return Err(KirinError::Call {
                        call: "OH_NNTensor_GetDataBuffer",
                        code: None,
                    });
                }
                std::ptr::copy_nonoverlapping(bytes.as_ptr(), data, bytes.len());
            }
            let (ins, outs) = tensors.split_at_mut(inputs.len());
            let code = (nn.run_sync)(
                executor,
                ins.as_mut_ptr(),
                ins.len(),
                outs.as_mut_ptr(),
                outs.len(),
            );
            if code != OH_NN_SUCCESS {
                return Err(KirinError::Call {
                    call: "OH_NNExecutor_RunSync",
                    code: Some(code),
                });
            }
            outputs
                .iter()
                .enumerate()
                .map(|(o, ty)| {
                    let size = sizes[inputs.len() + o];
                    let want = ty.shape.numel() * ty.dtype.size_bytes();
                    if size != want {
                        return Err(KirinError::Mismatch(format!(
                            "output {o}: the offline model writes {size} bytes, {ty} is {want}"
                        )));
                    }
                    let data = (nn.tensor_data)(outs[o]).cast::<u8>();
                    if data.is_null() {
                        return Err(KirinError::Call {
                            call: "OH_NNTensor_GetDataBuffer",
                            code: None,
                        });
                    }
                    let bytes = std::slice::from_raw_parts(data, size);
                    Tensor::from_le_bytes(ty.dtype, ty.shape.clone(), bytes)
                        .map_err(|e| KirinError::Mismatch(format!("output {o}: {e}")))
                })
                .collect()
        })()
    };
    // SAFETY: each handle was created above and is destroyed exactly once.
    unsafe {
        for tensor in &mut tensors {
            (nn.destroy_tensor)(tensor);
        }
        for desc in &mut descs {
            (nn.destroy_desc)(desc);
        }
    }
    result
}

#[linkme::distributed_slice(pto_op::__private::TARGETS)]
#[linkme(crate = pto_op::__private::linkme)]
static KIRIN_TARGET: TargetDef = TargetDef {
    name: "kirin",
    description: "a Kirin NPU through HiAI Foundation/NNRt (or ACL), loaded at run time; \
                  runs packaged, converted models",
    // The device profile does not matter: the device is whatever the runtime finds.
    make: |_device| Box::new(Kirin::new(KirinConfig::from_env())),
    source: pto_op::source_location!(),
};

/// The `kirin` executor: loads the device runtime when first asked to prepare an op, and
/// fails there, at compile time of a model, when there is none.
#[derive(Debug)]
pub struct Kirin {
    config: KirinConfig,
    runtime: OnceLock<Result<DeviceRuntime, String>>,
}

impl Kirin {
    /// A `kirin` executor with this configuration; nothing is loaded yet.
    pub fn new(config: KirinConfig) -> Kirin {
        Kirin {
            config,
            runtime: OnceLock::new(),
        }
    }

    /// The loaded runtime.
    ///
    /// # Errors
    ///
    /// The load's error, as text (loaded once, so later calls repeat the first error).
    pub fn runtime(&self) -> Result<&DeviceRuntime, String> {
        self.runtime
            .get_or_init(|| DeviceRuntime::load(&self.config).map_err(|e| e.to_string()))
            .as_ref()
            .map_err(Clone::clone)
    }

    fn unsupported(op: &OpDef, message: String) -> OpError {
        OpError::Unsupported {
            op: op.name.to_owned(),
            message,
        }
    }
}

impl Executor for Kirin {
    fn target(&self) -> &str {
        "kirin"
    }

    fn prepare(
        &self,
        op: &'static OpDef,
        inputs: &[TensorType],
        attrs: &Attributes,
    ) -> Result<Lowering, OpError> {
        op.infer(inputs, attrs)?;
        let runtime = self
            .runtime()
            .map_err(|e| Kirin::unsupported(op, format!("target kirin: {e}")))?;
        Err(Kirin::unsupported(op, single_op_message(runtime)))
    }

    fn execute(
        &self,
        op: &'static OpDef,
        _inputs: &[&Tensor],
        _attrs: &Attributes,
    ) -> Result<Execution, OpError> {
        let runtime = self
            .runtime()
            .map_err(|e| Kirin::unsupported(op, format!("target kirin: {e}")))?;
        Err(Kirin::unsupported(op, single_op_message(runtime)))
    }
}

/// Why an op alone does not run on a loaded runtime.
fn single_op_message(runtime: &DeviceRuntime) -> String {
    format!(
        "target kirin: the {} runtime ({}) runs whole offline models, not single ops: write the \
         package (`pto package`), build and install it, convert the model's ONNX export with \
         ATC, and run the .omc with DeviceRuntime::run_offline_model (docs/deploying.md)",
        runtime.kind(),
        runtime
            .paths()
            .iter()
            .map(|p| p.display().to_string())
            .collect::<Vec<_>>()
            .join(", ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The public app's choice (hicann/cann-recipes-harmony-infer,
    /// `harmony_infer/harmony_os_next/Soble/entry/src/main/cpp/HIAIModelManager.cpp`,
    /// `GetDeviceID`): the first device named `HIAI_F`, wherever it is listed.
    #[test]
    fn the_device_is_chosen_by_name() {
        let devices = [
            (7, Ok("CPU".to_owned())),
            (9, Err(5)),
            (12, Ok("HIAI_F".to_owned())),
            (13, Ok("HIAI_F".to_owned())),
        ];
        assert_eq!(select_device(&devices).expect("found"), 12);
        let err = select_device(&devices[..2]).expect_err("no NPU");
        assert_eq!(
            err.to_string(),
            "no NNRt device named `HIAI_F` (the HiAI Foundation NPU): the runtime lists 7 \
             `CPU`, 9 (OH_NNDevice_GetName failed with code 5)"
        );
        assert!(
            select_device(&[])
                .expect_err("no device")
                .to_string()
                .ends_with("the runtime lists no device")
        );
        // Id 0 is the app's "not found".
        assert!(select_device(&[(0, Ok("HIAI_F".to_owned()))]).is_err());
    }

    /// `HiAI_Compatibility` (`hiai_helper.h` of the recipe's NDK stubs): 0 compatible, 1
    /// incompatible; neither stops the run.
    #[test]
    fn the_compatibility_result_is_a_note() {
        assert_eq!(
            compatibility_note(0),
            "HMS_HiAICompatibility_CheckFromBuffer: 0 (compatible)"
        );
        assert!(compatibility_note(1).contains("1 (incompatible"));
        assert!(compatibility_note(1).contains("building it anyway"));
        assert!(compatibility_note(42).contains("unknown"));
    }

    #[test]
    fn no_runtime_names_what_and_where() {
        let dir = std::env::temp_dir().join(format!("pto-kirin-empty-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("temp dir");
        let err = DeviceRuntime::load(&KirinConfig {
            runtime: vec![dir.clone()],
        })
        .expect_err("no runtime on this machine");
        let message = err.to_string();
        for wanted in [
            "libhiai_foundation.so",
            "libneural_network_core.so",
            "libascendcl.so",
            "/system/lib64/ndk",
            RUNTIME_ENV,
        ] {
            assert!(message.contains(wanted), "{wanted} missing from: {message}");
        }
        assert!(message.contains(&dir.display().to_string()), "{message}");
        std::fs::remove_dir_all(&dir).expect("remove temp dir");
    }

    #[test]
    fn a_file_that_is_not_a_library_is_reported() {
        let dir = std::env::temp_dir().join(format!("pto-kirin-fake-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("temp dir");
        std::fs::write(dir.join("libascendcl.so"), b"not an ELF file").expect("write");
        let err = DeviceRuntime::load(&KirinConfig {
            runtime: vec![dir.clone()],
        })
        .expect_err("not a library");
        let message = err.to_string();
        assert!(
            message.contains(&dir.join("libascendcl.so").display().to_string()),
            "{message}"
        );
        std::fs::remove_dir_all(&dir).expect("remove temp dir");
    }
}

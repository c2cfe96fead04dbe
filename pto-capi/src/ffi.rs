//! The bodies of the `extern "C"` functions of `include/pto_capi.h`: each converts its C
//! arguments to Rust values, calls the safe function of the crate root, and writes the
//! results back. The functions themselves, `#[unsafe(no_mangle)]`, are defined by
//! [`export_c_abi!`](crate::export_c_abi) in the deployment's own `cdylib` crate, and each is a
//! call of one function here. The only `unsafe` code of the crate is here and in that macro,
//! in the few pointer reads and writes a C ABI cannot avoid.

#![allow(unsafe_code)]

use std::ffi::{CStr, c_char};
use std::panic::{AssertUnwindSafe, catch_unwind};

use pto_op::{DType, Shape, TensorType};

use crate::{CapiError, MAX_RANK, Status, dtype, shape, tensor_type};

/// One tensor's type, as C sees it (`PtoTensorDesc`).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct PtoTensorDesc {
    /// ONNX `TensorProto.DataType` code.
    pub dtype: i32,
    /// Number of dims used.
    pub rank: u32,
    /// The dims; those past `rank` are ignored.
    pub dims: [i64; MAX_RANK],
}

impl PtoTensorDesc {
    /// The descriptor of `ty`.
    ///
    /// # Errors
    ///
    /// [`CapiError::BadArgument`] for a rank above [`MAX_RANK`] or a dim above `i64::MAX`.
    pub fn of(what: &str, ty: &TensorType) -> Result<PtoTensorDesc, CapiError> {
        let dims = ty.shape.dims();
        if dims.len() > MAX_RANK {
            return Err(CapiError::BadArgument(format!(
                "{what}: rank {} is above PTO_MAX_RANK ({MAX_RANK})",
                dims.len()
            )));
        }
        let mut desc = PtoTensorDesc {
            dtype: ty.dtype.onnx_code(),
            rank: u32::try_from(dims.len()).unwrap_or(u32::MAX),
            dims: [0; MAX_RANK],
        };
        for (slot, &d) in desc.dims.iter_mut().zip(dims) {
            *slot = i64::try_from(d)
                .map_err(|_| CapiError::BadArgument(format!("{what}: dim {d} overflows i64")))?;
        }
        Ok(desc)
    }

    /// The tensor type this descriptor describes.
    ///
    /// # Errors
    ///
    /// [`CapiError::BadArgument`] for a rank above [`MAX_RANK`], a negative dim or an
    /// unknown dtype code.
    pub fn tensor_type(&self, what: &str) -> Result<TensorType, CapiError> {
        let rank = usize::try_from(self.rank).unwrap_or(usize::MAX);
        let dims = self.dims.get(..rank).ok_or_else(|| {
            CapiError::BadArgument(format!(
                "{what}: rank {rank} is above PTO_MAX_RANK ({MAX_RANK})"
            ))
        })?;
        tensor_type(what, self.dtype, dims)
    }
}

/// One shape, as C sees it (`PtoShape`).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct PtoShape {
    /// Number of dims used.
    pub rank: u32,
    /// The dims; those past `rank` are ignored.
    pub dims: [i64; MAX_RANK],
}

impl PtoShape {
    fn of(what: &str, shape: &pto_op::Shape) -> Result<PtoShape, CapiError> {
        let desc = PtoTensorDesc::of(
            what,
            &TensorType {
                shape: shape.clone(),
                dtype: pto_op::DType::F32,
            },
        )?;
        Ok(PtoShape {
            rank: desc.rank,
            dims: desc.dims,
        })
    }

    fn shape(&self, what: &str) -> Result<pto_op::Shape, CapiError> {
        let rank = usize::try_from(self.rank).unwrap_or(usize::MAX);
        let dims = self.dims.get(..rank).ok_or_else(|| {
            CapiError::BadArgument(format!(
                "{what}: rank {rank} is above PTO_MAX_RANK ({MAX_RANK})"
            ))
        })?;
        shape(what, dims)
    }
}

/// The C array `ptr[..len]` as a slice.
///
/// # Safety
///
/// `ptr` is null only when `len` is 0, else points to `len` initialized values that are not
/// written during `'a`.
unsafe fn input_slice<'a, T>(what: &str, ptr: *const T, len: usize) -> Result<&'a [T], CapiError> {
    if len == 0 {
        Ok(&[])
    } else if ptr.is_null() {
        Err(CapiError::BadArgument(format!(
            "{what} is NULL with a count of {len}"
        )))
    } else {
        // SAFETY: non-null and pointing to `len` values by the contract.
        Ok(unsafe { std::slice::from_raw_parts(ptr, len) })
    }
}

/// Writes `values` to the caller's output array and their count to `count`.
///
/// # Safety
///
/// `out` is null or valid for writes of `capacity` values; `count` is null or valid for one
/// write.
unsafe fn write_outputs<T: Copy>(
    op: &str,
    values: &[T],
    out: *mut T,
    capacity: usize,
    count: *mut usize,
) -> Result<(), CapiError> {
    if count.is_null() {
        return Err(CapiError::BadArgument(format!(
            "op `{op}`: num_outputs is NULL"
        )));
    }
    // SAFETY: non-null, valid for one write by the contract.
    unsafe { *count = values.len() };
    let room = if out.is_null() { 0 } else { capacity };
    if values.len() > room {
        return Err(CapiError::OutputCapacity {
            op: op.to_owned(),
            needed: values.len(),
            capacity: room,
        });
    }
    for (i, value) in values.iter().enumerate() {
        // SAFETY: `i < values.len() <= capacity`, and `out` is valid for that many writes.
        unsafe { *out.add(i) = *value };
    }
    Ok(())
}

/// A C string argument as `&str`.
///
/// # Safety
///
/// `ptr` is null or points to a NUL-terminated string that lives for `'a`.
unsafe fn c_str<'a>(what: &str, ptr: *const c_char) -> Result<&'a str, CapiError> {
    if ptr.is_null() {
        return Err(CapiError::BadArgument(format!("{what} is NULL")));
    }
    // SAFETY: non-null, and NUL-terminated and live by this function's contract.
    let text = unsafe { CStr::from_ptr(ptr) };
    text.to_str()
        .map_err(|e| CapiError::BadArgument(format!("{what} is not UTF-8: {e}")))
}

/// An optional C string argument: null is the empty string.
///
/// # Safety
///
/// As [`c_str`], null allowed.
unsafe fn optional_c_str<'a>(what: &str, ptr: *const c_char) -> Result<&'a str, CapiError> {
    if ptr.is_null() {
        Ok("")
    } else {
        // SAFETY: forwarded contract.
        unsafe { c_str(what, ptr) }
    }
}

/// Writes `message` into the caller's buffer, truncated at a UTF-8 boundary to fit with its
/// NUL.
///
/// # Safety
///
/// `buf` is null or valid for writes of `capacity` bytes.
unsafe fn write_error(message: &str, buf: *mut c_char, capacity: usize) {
    if buf.is_null() || capacity == 0 {
        return;
    }
    let mut len = message.len().min(capacity - 1);
    while !message.is_char_boundary(len) {
        len -= 1;
    }
    // SAFETY: `buf` is valid for `capacity` bytes by the contract and `len < capacity`; the
    // source is a live `&str` that cannot overlap a buffer the caller owns.
    unsafe {
        std::ptr::copy_nonoverlapping(message.as_ptr(), buf.cast::<u8>(), len);
        *buf.add(len) = 0;
    }
}

/// Runs `body`, turning an error or a panic into its status and message.
///
/// # Safety
///
/// As [`write_error`] for `error`/`capacity`.
unsafe fn guarded(
    error: *mut c_char,
    capacity: usize,
    body: impl FnOnce() -> Result<(), CapiError>,
) -> i32 {
    let (status, message) = match catch_unwind(AssertUnwindSafe(body)) {
        Ok(Ok(())) => return Status::Ok as i32,
        Ok(Err(e)) => (e.status(), e.to_string()),
        Err(panic) => {
            let what = panic
                .downcast_ref::<&str>()
                .map(|s| (*s).to_owned())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "a panic without a message".to_owned());
            (Status::Panic, format!("pto-capi panicked (a bug): {what}"))
        }
    };
    // SAFETY: forwarded contract.
    unsafe { write_error(&message, error, capacity) };
    status as i32
}

/// A C value of an inference call's inputs and outputs ([`PtoTensorDesc`], [`PtoShape`], an
/// ONNX dtype code as `i32`) and the Rust value it stands for.
pub trait CValue: Copy {
    /// The Rust value ([`TensorType`], [`Shape`], [`DType`]).
    type Value;

    /// The Rust value of this C value; `what` names it in an error (`op `demo.x` input 0`).
    ///
    /// # Errors
    ///
    /// [`CapiError::BadArgument`] for a C value that stands for none.
    fn read(&self, what: &str) -> Result<Self::Value, CapiError>;

    /// The C value of `value`; `what` names it in an error (`op `demo.x` output 0`).
    ///
    /// # Errors
    ///
    /// [`CapiError::BadArgument`] for a value the C type cannot hold.
    fn write(what: &str, value: &Self::Value) -> Result<Self, CapiError>;
}

impl CValue for PtoTensorDesc {
    type Value = TensorType;

    fn read(&self, what: &str) -> Result<TensorType, CapiError> {
        self.tensor_type(what)
    }

    fn write(what: &str, value: &TensorType) -> Result<PtoTensorDesc, CapiError> {
        PtoTensorDesc::of(what, value)
    }
}

impl CValue for PtoShape {
    type Value = Shape;

    fn read(&self, what: &str) -> Result<Shape, CapiError> {
        self.shape(what)
    }

    fn write(what: &str, value: &Shape) -> Result<PtoShape, CapiError> {
        PtoShape::of(what, value)
    }
}

/// An ONNX `TensorProto.DataType` code.
impl CValue for i32 {
    type Value = DType;

    fn read(&self, what: &str) -> Result<DType, CapiError> {
        dtype(what, *self)
    }

    fn write(_what: &str, value: &DType) -> Result<i32, CapiError> {
        Ok(value.onnx_code())
    }
}

/// An op's rules over Rust values: [`infer`](crate::infer), [`infer_shapes`](crate::infer_shapes)
/// or [`infer_dtypes`](crate::infer_dtypes), given the op's name, the inputs and the
/// attributes JSON.
pub type Rules<V> = fn(&str, &[V], &str) -> Result<Vec<V>, CapiError>;

/// The body of the three inference functions (`pto_infer`, `pto_infer_shapes`,
/// `pto_infer_dtypes`): reads the op name, the attributes and the `num_inputs` input values,
/// lets `rules` ([`infer`](crate::infer), [`infer_shapes`](crate::infer_shapes),
/// [`infer_dtypes`](crate::infer_dtypes)) turn them into output values, and writes those
/// back; errors and panics become the status and message.
///
/// # Safety
///
/// `op_name` and `attrs_json` (which may be null) are NUL-terminated; `inputs` points to
/// `num_inputs` values (or is null when `num_inputs` is 0); `outputs` is valid for writes of
/// `output_capacity` values; `num_outputs` is valid for one write; `error` is null or valid
/// for `error_capacity` bytes. None of them is written by another thread during the call.
#[allow(clippy::too_many_arguments)]
pub unsafe fn infer_entry<C: CValue>(
    op_name: *const c_char,
    inputs: *const C,
    num_inputs: usize,
    attrs_json: *const c_char,
    outputs: *mut C,
    output_capacity: usize,
    num_outputs: *mut usize,
    error: *mut c_char,
    error_capacity: usize,
    rules: Rules<C::Value>,
) -> i32 {
    let body = || {
        // SAFETY: NUL-terminated by the contract.
        let op = unsafe { c_str("op_name", op_name) }?;
        // SAFETY: null or NUL-terminated by the contract.
        let attrs = unsafe { optional_c_str("attrs_json", attrs_json) }?;
        // SAFETY: `inputs` holds `num_inputs` values by the contract.
        let given = unsafe { input_slice("inputs", inputs, num_inputs) }?;
        let values = given
            .iter()
            .enumerate()
            .map(|(i, c)| c.read(&format!("op `{op}` input {i}")))
            .collect::<Result<Vec<_>, _>>()?;
        let inferred = rules(op, &values, attrs)?
            .iter()
            .enumerate()
            .map(|(i, value)| C::write(&format!("op `{op}` output {i}"), value))
            .collect::<Result<Vec<_>, _>>()?;
        // SAFETY: `outputs` and `num_outputs` as the contract says.
        unsafe { write_outputs(op, &inferred, outputs, output_capacity, num_outputs) }
    };
    // SAFETY: `error` as the contract says.
    unsafe { guarded(error, error_capacity, body) }
}

/// The body of `pto_op_fingerprint`: an op's signature fingerprint.
///
/// # Safety
///
/// `op_name` is NUL-terminated; `fingerprint` is valid for one write; `error` is null or
/// valid for `error_capacity` bytes.
pub unsafe fn op_fingerprint(
    op_name: *const c_char,
    fingerprint: *mut u64,
    error: *mut c_char,
    error_capacity: usize,
) -> i32 {
    let body = || {
        // SAFETY: NUL-terminated by the contract.
        let op = unsafe { c_str("op_name", op_name) }?;
        let def = pto_op::registry::find(op).map_err(CapiError::UnknownOp)?;
        if fingerprint.is_null() {
            return Err(CapiError::BadArgument(format!(
                "op `{op}`: fingerprint is NULL"
            )));
        }
        // SAFETY: non-null, valid for one write by the contract.
        unsafe { *fingerprint = def.fingerprint().0 };
        Ok(())
    };
    // SAFETY: `error` as the contract says.
    unsafe { guarded(error, error_capacity, body) }
}

/// The body of `pto_capi_version`: the version of pto-capi the library was built from,
/// NUL-terminated and static.
pub fn version() -> *const c_char {
    const VERSION: &CStr =
        match CStr::from_bytes_with_nul(concat!(env!("CARGO_PKG_VERSION"), "\0").as_bytes()) {
            Ok(v) => v,
            Err(_) => panic!("the package version has a NUL"),
        };
    VERSION.as_ptr()
}

#[cfg(test)]
mod tests {
    use super::*;

    // The functions a deployment's library exports, here in the test binary.
    crate::export_c_abi!();

    fn call(op: &str, inputs: &[PtoTensorDesc], attrs: &str) -> (i32, Vec<PtoTensorDesc>, String) {
        let op = std::ffi::CString::new(op).expect("no NUL");
        let attrs = std::ffi::CString::new(attrs).expect("no NUL");
        let mut outputs = [PtoTensorDesc::default(); 4];
        let mut n = 0usize;
        let mut error = [0 as c_char; 256];
        // SAFETY: every pointer is to a live local of the stated size.
        let status = unsafe {
            pto_infer(
                op.as_ptr(),
                inputs.as_ptr(),
                inputs.len(),
                attrs.as_ptr(),
                outputs.as_mut_ptr(),
                outputs.len(),
                &raw mut n,
                error.as_mut_ptr(),
                error.len(),
            )
        };
        // SAFETY: `write_error` always NUL-terminates within the buffer; it starts zeroed.
        let message = unsafe { CStr::from_ptr(error.as_ptr()) }
            .to_string_lossy()
            .into_owned();
        (status, outputs[..n.min(4)].to_vec(), message)
    }

    fn desc(dims: &[i64]) -> PtoTensorDesc {
        let mut d = PtoTensorDesc {
            dtype: 1,
            rank: u32::try_from(dims.len()).expect("small"),
            dims: [0; MAX_RANK],
        };
        d.dims[..dims.len()].copy_from_slice(dims);
        d
    }

    #[test]
    fn round_trips_through_the_abi() {
        let (status, out, message) = call("std.matmul", &[desc(&[4, 8]), desc(&[8, 3])], "");
        assert_eq!(status, 0, "{message}");
        assert_eq!(out.len(), 1);
        assert_eq!(
            (out[0].dtype, out[0].rank, &out[0].dims[..2]),
            (1, 2, &[4, 3][..])
        );
    }

    #[test]
    fn errors_come_back_as_status_and_message() {
        let (status, _, message) = call("std.matmul", &[desc(&[4, 8]), desc(&[7, 3])], "");
        assert_eq!(status, Status::Rejected as i32);
        assert!(message.contains("std.matmul"), "{message}");
        let mut big = desc(&[1]);
        big.rank = 9;
        let (status, _, message) = call("std.relu", &[big], "");
        assert_eq!(status, Status::BadArgument as i32);
        assert!(message.contains("PTO_MAX_RANK"), "{message}");
    }

    #[test]
    fn a_long_message_is_truncated_on_a_char_boundary() {
        let mut buf = [1 as c_char; 5];
        // SAFETY: `buf` is a live local of 5 bytes.
        unsafe { write_error("ab\u{e9}cd", buf.as_mut_ptr(), buf.len()) };
        // SAFETY: NUL-terminated within the buffer by `write_error`.
        let text = unsafe { CStr::from_ptr(buf.as_ptr()) };
        assert_eq!(text.to_str(), Ok("ab\u{e9}"));
    }
}

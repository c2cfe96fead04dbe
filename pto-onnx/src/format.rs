//! The ONNX model as pto-onnx writes it: its IR version and producer, and the metadata keys
//! that carry what ONNX has no field for (a custom op's version and schema fingerprint, the
//! shipped kernels).

/// The IR version written: the highest that both the `onnx` checker and ONNX Runtime 1.23
/// accept (ONNX Runtime refuses 12), and the one of opset 23.
pub const IR_VERSION: i64 = 11;

/// The `producer_name` written.
pub const PRODUCER: &str = "pto-op";

/// Metadata key of a custom node: the op description's version.
pub const VERSION_KEY: &str = "pto.version";

/// Metadata key of a custom node: the op's schema fingerprint.
pub const FINGERPRINT_KEY: &str = "pto.fingerprint";

/// Metadata key of the model: the shipped kernels, as JSON.
pub const KERNELS_KEY: &str = "pto.kernels";

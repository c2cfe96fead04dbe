//! The pto model format on the safetensors container: the `format` and `format_version`
//! entries of `__metadata__`, and the entries each version reads.

use super::error::ModelFileError;
use super::safetensors::Header;

/// The `format` entry of every model file's `__metadata__`.
pub const FORMAT: &str = "pto-model";

/// The `format_version` of a model of static shapes: what this pto-op writes for a
/// [`Model`](crate::model::Model), and what every earlier pto-op wrote.
pub const FORMAT_VERSION: u32 = 1;

/// The `format_version` of a model with symbolic dims (`pto_onnx::SymbolicModel`): a
/// pto-op that predates them refuses the file by its version.
pub const SYMBOLIC_FORMAT_VERSION: u32 = 2;

/// `value` as the JSON of the `__metadata__` entry `entry`, for a file being written.
///
/// # Errors
///
/// [`ModelFileError::BadJson`] of entry `entry` when `value` cannot be written as JSON.
pub fn entry_json(
    entry: &'static str,
    value: &impl serde::Serialize,
) -> Result<String, ModelFileError> {
    serde_json::to_string(value).map_err(|e| ModelFileError::BadJson {
        file: None,
        entry,
        message: format!("cannot be written: {e}"),
    })
}

impl Header {
    /// The model file's format version, 1 or 2, after its format.
    ///
    /// # Errors
    ///
    /// A `format` entry that is not [`FORMAT`], or a `format_version` that is neither 1
    /// nor 2.
    pub fn version(&self) -> Result<u32, ModelFileError> {
        let metadata = self.metadata();
        match metadata.get("format") {
            Some(format) if format == FORMAT => {}
            Some(other) => {
                return Err(ModelFileError::NotAModelFile {
                    file: None,
                    reason: format!("its `__metadata__.format` is `{other}`, not `{FORMAT}`"),
                });
            }
            None => {
                return Err(ModelFileError::NotAModelFile {
                    file: None,
                    reason: format!(
                        "a safetensors file without `__metadata__.format` = `{FORMAT}`"
                    ),
                });
            }
        }
        match metadata.get("format_version") {
            Some(version) if *version == FORMAT_VERSION.to_string() => Ok(FORMAT_VERSION),
            Some(version) if *version == SYMBOLIC_FORMAT_VERSION.to_string() => {
                Ok(SYMBOLIC_FORMAT_VERSION)
            }
            found => Err(ModelFileError::UnsupportedVersion {
                file: None,
                found: found.map_or("(none)", String::as_str).to_owned(),
                supported: SYMBOLIC_FORMAT_VERSION,
            }),
        }
    }

    /// The `__metadata__` entry `key`.
    ///
    /// # Errors
    ///
    /// [`ModelFileError::BadJson`] of entry `key`, `missing`.
    pub fn entry(&self, key: &'static str) -> Result<&String, ModelFileError> {
        self.metadata()
            .get(key)
            .ok_or_else(|| ModelFileError::BadJson {
                file: None,
                entry: key,
                message: "missing".to_owned(),
            })
    }
}

//! Reading an ONNX file without holding its weights twice.
//!
//! Decoding a whole `ModelProto` copies every initializer's `raw_data` into the message,
//! and building the tensors copies it again: a 541 MB model took 2 GB and five seconds to
//! import. Instead, [`skeleton`] walks the protobuf wire format of the model, graph and
//! initializers by hand, copying every field except the initializers' `raw_data` (whose
//! place in the file it records) into small buffers that `prost` then decodes; each
//! tensor is then read from its place straight into its own array
//! ([`read_tensor`](pto_op::model::file::read_tensor)), in
//! chunks. A protobuf message is the concatenation of its fields, and repeated or
//! repeated-message fields concatenate, so the skeleton decodes to the message the file
//! holds, without the bytes of the weights. Weights in ONNX external-data files are read
//! the same way, from the file named beside the model.
//!
//! Plain reads, not a memory map: a map's pages count in the process's memory as they are
//! touched, so copying out of it holds the weights twice as surely as reading does, and it
//! needs `unsafe` (the file may change under the map).

use std::io::{BufReader, Read, Seek, SeekFrom};
use std::path::{Component, Path};

use prost::Message;

use crate::error::OnnxError;
use crate::proto::{GraphProto, ModelProto, TensorProto};
use pto_op::dtype::DType;
use pto_op::fs::{FileKind, RegularFile, open_regular};
use pto_op::model::file::read_tensor;
use pto_op::shape::Shape;
use pto_op::tensor::Tensor;

/// `ModelProto.graph`.
const MODEL_GRAPH: u64 = 7;
/// `GraphProto.initializer`.
const GRAPH_INITIALIZER: u64 = 5;
/// `TensorProto.raw_data`.
const TENSOR_RAW_DATA: u64 = 9;

/// The wire types of protobuf.
const VARINT: u64 = 0;
const FIXED64: u64 = 1;
const LEN: u64 = 2;
const FIXED32: u64 = 5;

/// Where an initializer's `raw_data` is in the file: `len` bytes from `offset`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Extent {
    pub offset: u64,
    pub len: u64,
}

/// A model without its initializers' `raw_data`, and where each initializer's is.
#[derive(Debug)]
pub(crate) struct Skeleton {
    pub model: ModelProto,
    /// Per initializer of `model.graph`, in order: where its `raw_data` is (`None`: it has
    /// none).
    pub raw: Vec<Option<Extent>>,
}

/// Reads the wire format from `reader`, knowing where it is.
struct Walker<'r, R> {
    reader: &'r mut R,
    position: u64,
}

impl<R: Read + Seek> Walker<'_, R> {
    fn byte(&mut self) -> Result<u8, String> {
        let mut byte = [0u8];
        self.reader
            .read_exact(&mut byte)
            .map_err(|e| format!("reading byte {}: {e}", self.position))?;
        self.position += 1;
        Ok(byte[0])
    }

    fn varint(&mut self, end: u64) -> Result<u64, String> {
        let start = self.position;
        let mut value = 0u64;
        for shift in (0..64).step_by(7) {
            if self.position >= end {
                return Err(format!("a varint at byte {start} runs past its message"));
            }
            let byte = self.byte()?;
            value |= u64::from(byte & 0x7f) << shift;
            if byte & 0x80 == 0 {
                return Ok(value);
            }
        }
        Err(format!("a varint at byte {start} is longer than 10 bytes"))
    }

    /// Appends the next `len` bytes to `out`.
    fn bytes_into(&mut self, out: &mut Vec<u8>, len: u64) -> Result<(), String> {
        // `len` was checked against the message's end, which is within the input.
        let start = out.len();
        let len_usize = usize::try_from(len).map_err(|_| "too long".to_owned())?;
        out.resize(start + len_usize, 0);
        self.reader
            .read_exact(&mut out[start..])
            .map_err(|e| format!("reading {len} bytes at byte {}: {e}", self.position))?;
        self.position += len;
        Ok(())
    }

    fn skip(&mut self, len: u64) -> Result<(), String> {
        self.position += len;
        self.reader
            .seek(SeekFrom::Start(self.position))
            .map_err(|e| format!("seeking to byte {}: {e}", self.position))?;
        Ok(())
    }

    /// Walks the message in `[self.position, end)`, calling `field(walker, number, wire
    /// type, length of a LEN field, end)` for each field after its key (and length).
    fn fields(
        &mut self,
        end: u64,
        mut field: impl FnMut(&mut Self, u64, u64, u64) -> Result<(), String>,
    ) -> Result<(), String> {
        while self.position < end {
            let key = self.varint(end)?;
            let (number, wire) = (key >> 3, key & 7);
            let len = match wire {
                VARINT | FIXED64 | FIXED32 => 0,
                LEN => {
                    let len = self.varint(end)?;
                    if len > end - self.position {
                        return Err(format!(
                            "field {number} at byte {} holds {len} bytes, past the end of its \
                             message at byte {end}",
                            self.position
                        ));
                    }
                    len
                }
                _ => {
                    return Err(format!(
                        "field {number} at byte {} has wire type {wire}, which ONNX does not use",
                        self.position
                    ));
                }
            };
            field(self, number, wire, len)?;
        }
        if self.position == end {
            Ok(())
        } else {
            Err(format!(
                "a field runs past the end of its message at byte {end}"
            ))
        }
    }

    /// Appends the field whose key was just read, with its value, to `out`.
    fn copy(&mut self, out: &mut Vec<u8>, number: u64, wire: u64, len: u64) -> Result<(), String> {
        encode_varint(out, number << 3 | wire);
        match wire {
            VARINT => {
                let value = self.varint(u64::MAX)?;
                encode_varint(out, value);
            }
            FIXED64 => self.bytes_into(out, 8)?,
            FIXED32 => self.bytes_into(out, 4)?,
            _ => {
                encode_varint(out, len);
                self.bytes_into(out, len)?;
            }
        }
        Ok(())
    }
}

fn encode_varint(out: &mut Vec<u8>, mut value: u64) {
    while value >= 0x80 {
        out.push((value as u8) | 0x80);
        value >>= 7;
    }
    out.push(value as u8);
}

/// The model in the `len` bytes of `reader`, without its initializers' `raw_data`.
pub(crate) fn skeleton<R: Read + Seek>(reader: &mut R, len: u64) -> Result<Skeleton, OnnxError> {
    let not_onnx =
        |problem: String| OnnxError::Model(format!("the bytes are not an ONNX model: {problem}"));
    let mut walker = Walker {
        reader,
        position: 0,
    };
    let mut model_fields = Vec::new();
    let mut graph_fields = Vec::new();
    let mut has_graph = false;
    let mut initializers: Vec<(Vec<u8>, Option<Extent>)> = Vec::new();
    walker
        .fields(len, |w, number, wire, field_len| {
            if !(number == MODEL_GRAPH && wire == LEN) {
                return w.copy(&mut model_fields, number, wire, field_len);
            }
            has_graph = true;
            let graph_end = w.position + field_len;
            w.fields(graph_end, |w, number, wire, field_len| {
                if !(number == GRAPH_INITIALIZER && wire == LEN) {
                    return w.copy(&mut graph_fields, number, wire, field_len);
                }
                let tensor_end = w.position + field_len;
                let mut tensor_fields = Vec::new();
                let mut raw = None;
                w.fields(tensor_end, |w, number, wire, field_len| {
                    if number == TENSOR_RAW_DATA && wire == LEN {
                        // The last occurrence wins, as when protobuf decodes bytes.
                        raw = Some(Extent {
                            offset: w.position,
                            len: field_len,
                        });
                        w.skip(field_len)
                    } else {
                        w.copy(&mut tensor_fields, number, wire, field_len)
                    }
                })?;
                initializers.push((tensor_fields, raw));
                Ok(())
            })
        })
        .map_err(not_onnx)?;
    let mut model = ModelProto::decode(model_fields.as_slice())?;
    if has_graph {
        let mut graph = GraphProto::decode(graph_fields.as_slice())?;
        let mut raw = Vec::with_capacity(initializers.len());
        for (fields, extent) in initializers {
            graph
                .initializer
                .push(TensorProto::decode(fields.as_slice())?);
            raw.push(extent);
        }
        model.graph = Some(graph);
        return Ok(Skeleton { model, raw });
    }
    Ok(Skeleton {
        model,
        raw: Vec::new(),
    })
}

/// The tensor of an initializer whose data is in an ONNX external-data file, named by its
/// `external_data` entries (`location` relative to `dir`, the model's directory; `offset`
/// and `length` in bytes).
pub(crate) fn read_external(
    proto: &TensorProto,
    dtype: DType,
    shape: Shape,
    dir: Option<&Path>,
) -> Result<Tensor, String> {
    let entry = |key: &str| {
        proto
            .external_data
            .iter()
            .rev()
            .find(|e| e.key == key)
            .map(|e| e.value.as_str())
    };
    let location = entry("location")
        .ok_or_else(|| "its data is external, but `external_data` has no `location`".to_owned())?;
    let Some(dir) = dir else {
        return Err(format!(
            "its data is in the external file `{location}`: load the model from its file (a \
             path, Model::load_onnx) so that the file can be found beside it"
        ));
    };
    let relative = Path::new(location);
    if location.is_empty()
        || relative
            .components()
            .any(|c| !matches!(c, Component::Normal(_) | Component::CurDir))
    {
        return Err(format!(
            "external data location `{location}` must be a relative path inside the model's \
             directory (no root, no `..`)"
        ));
    }
    let number = |key: &str| -> Result<Option<u64>, String> {
        entry(key)
            .map(|text| {
                text.trim().parse::<u64>().map_err(|_| {
                    format!("external data `{key}` is `{text}`, not a number of bytes")
                })
            })
            .transpose()
    };
    let offset = number("offset")?.unwrap_or(0);
    let path = dir.join(relative);
    let RegularFile {
        file,
        len: file_len,
    } = open_regular(&path, FileKind::OnnxExternalData).map_err(|e| e.to_string())?;
    let available = file_len.checked_sub(offset).ok_or_else(|| {
        format!(
            "external data offset {offset} is past the end of {} ({file_len} bytes)",
            path.display()
        )
    })?;
    let len = number("length")?.unwrap_or(available);
    if len > available {
        return Err(format!(
            "external data of {len} bytes at offset {offset} runs past the end of {} \
             ({file_len} bytes)",
            path.display()
        ));
    }
    let mut reader = BufReader::new(file);
    reader
        .seek(SeekFrom::Start(offset))
        .map_err(|e| format!("external data file {}: {e}", path.display()))?;
    read_tensor(&mut reader.take(len), dtype, shape, len)
}

//! The checked model of an op: what validation builds and expansion prints.

use proc_macro2::Span;
use quote::ToTokens;
use syn::{Ident, ItemMod, Type};

/// The type of a param.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ParamKind {
    F32,
    F64,
    I32,
    I64,
    Bool,
    String,
    I64s,
    F32s,
}

impl ParamKind {
    pub(crate) const SUPPORTED: &'static str =
        "f32, f64, i32, i64, bool, String, Vec<i64> or Vec<f32>";

    pub(crate) fn of(ty: &Type) -> Option<ParamKind> {
        let text: String = ty
            .to_token_stream()
            .to_string()
            .split_whitespace()
            .collect();
        Some(match text.as_str() {
            "f32" => ParamKind::F32,
            "f64" => ParamKind::F64,
            "i32" => ParamKind::I32,
            "i64" => ParamKind::I64,
            "bool" => ParamKind::Bool,
            "String" | "std::string::String" | "::std::string::String" => ParamKind::String,
            "Vec<i64>" => ParamKind::I64s,
            "Vec<f32>" => ParamKind::F32s,
            _ => return None,
        })
    }

    /// The name of the `AttrType` / `AttrValue` variant.
    pub fn variant(self) -> &'static str {
        match self {
            ParamKind::F32 => "F32",
            ParamKind::F64 => "F64",
            ParamKind::I32 => "I32",
            ParamKind::I64 => "I64",
            ParamKind::Bool => "Bool",
            ParamKind::String => "String",
            ParamKind::I64s => "I64s",
            ParamKind::F32s => "F32s",
        }
    }

    pub(crate) fn example(self) -> &'static str {
        match self {
            ParamKind::F32 | ParamKind::F64 => "1e-6",
            ParamKind::I32 | ParamKind::I64 => "-1",
            ParamKind::Bool => "true",
            ParamKind::String => "\"tanh\"",
            ParamKind::I64s => "[1, 2]",
            ParamKind::F32s => "[0.5, 1.0]",
        }
    }

    /// "an f32", "a bool": for messages.
    pub(crate) fn with_article(self) -> String {
        let article = match self {
            ParamKind::F32 | ParamKind::F64 | ParamKind::I32 | ParamKind::I64 => "an",
            _ => "a",
        };
        format!("{article} {}", self.rust_name())
    }

    pub(crate) fn rust_name(self) -> &'static str {
        match self {
            ParamKind::F32 => "f32",
            ParamKind::F64 => "f64",
            ParamKind::I32 => "i32",
            ParamKind::I64 => "i64",
            ParamKind::Bool => "bool",
            ParamKind::String => "String",
            ParamKind::I64s => "Vec<i64>",
            ParamKind::F32s => "Vec<f32>",
        }
    }
}

/// A checked default value.
#[derive(Debug, Clone, PartialEq)]
pub enum DefaultValue {
    Float(f64),
    Int(i64),
    Bool(bool),
    Str(String),
    Ints(Vec<i64>),
    Floats(Vec<f64>),
}

/// A checked param.
pub struct Param {
    pub ident: Ident,
    pub kind: ParamKind,
    pub default: Option<DefaultValue>,
}

/// A checked role function.
pub struct FnModel {
    pub ident: Ident,
    /// Whether it takes `&Params` last.
    pub takes_params: bool,
    /// Its return type (its name when it has none): where rustc points when what the
    /// function returns does not fit the generated code that calls it.
    pub ret_span: Span,
}

/// A description known to be good: what expansion prints.
pub struct Model {
    pub module: ItemMod,
    pub name: String,
    pub version: u32,
    pub doc: String,
    pub params: Vec<Param>,
    pub inputs: Vec<Ident>,
    /// One per input: whether it is optional (`Option<&Shape>` in #[infer_shape]). Optional
    /// inputs come after every required one.
    pub optional: Vec<bool>,
    pub outputs: Vec<Ident>,
    pub infer_shape: FnModel,
    pub infer_dtype: FnModel,
    pub reference: FnModel,
    pub kernel: Option<FnModel>,
    pub estimator: Option<FnModel>,
    pub properties: Option<FnModel>,
    /// `tolerance(...)`, checked.
    pub tolerances: Vec<DeclaredTolerance>,
    /// The kernel's `#[parity]` cases, checked.
    pub parity: Vec<ParityCase>,
}

/// A checked `dtype = (rtol, atol)` of `tolerance(...)`.
pub struct DeclaredTolerance {
    /// The `pto_op::DType` variant.
    pub dtype: &'static str,
    pub rtol: f64,
    pub atol: f64,
}

/// One input of a parity case: its dtype variant, its dims, and the half-open range
/// `[low, high)` of its values when the case gives one.
pub struct CaseInput {
    pub dtype: &'static str,
    pub dims: Vec<usize>,
    pub range: Option<(f64, f64)>,
}

/// One param a parity case sets.
pub struct CaseParam {
    pub name: String,
    pub kind: ParamKind,
    pub value: DefaultValue,
}

/// The seed of a case's inputs.
pub enum CaseSeed {
    /// `seed = N`, as written.
    Given(u64),
    /// None written: `pto_op::parity::case_seed` of this text, the case's inputs and params
    /// as `name=value` without whitespace, sorted by name, joined by `,`.
    OfText(String),
}

/// A checked `#[parity(...)]` case.
pub struct ParityCase {
    /// The generated test's name, e.g. `case_0_x_f16_4x64`.
    pub test_name: Ident,
    /// One per op input the case gives, in order: every required input, then the optional
    /// ones up to the last the case gives (the others are absent).
    pub inputs: Vec<CaseInput>,
    /// The params the case sets; the others take their defaults.
    pub params: Vec<CaseParam>,
    pub seed: CaseSeed,
    /// `(rtol, atol)`, when the case sets them.
    pub tolerance: Option<(f64, f64)>,
}

//! Checking `#[parity(...)]` cases on the kernel and the op's `tolerance(...)`.
//!
//! Like the rest of validation, every check records its error in the [`Ctxt`] and goes on.
//! Param values are checked exactly as param defaults are ([`default_value`]).

use proc_macro2::Span;
use syn::ext::IdentExt;
use syn::{Expr, Ident, Lit, LitInt};

use super::literal::{default_value, float_lit, signed_lit};
use super::types::code;
use crate::ast::{OpModule, Role};
use crate::attr::{ParamDecl, ParityAttr, ParityValue, ToleranceDecl};
use crate::ctxt::Ctxt;
use crate::model::{
    CaseInput, CaseParam, CaseSeed, DeclaredTolerance, DefaultValue, Param, ParityCase,
};

/// The dtypes an author may name, with their `pto_op::DType` variants.
const DTYPES: [(&str, &str); 8] = [
    ("f32", "F32"),
    ("f16", "F16"),
    ("bf16", "BF16"),
    ("i32", "I32"),
    ("i64", "I64"),
    ("i8", "I8"),
    ("u8", "U8"),
    ("bool", "Bool"),
];

/// The names of the dtypes, for messages.
const DTYPE_LIST: &str = "f32, f16, bf16, i32, i64, i8, u8, bool";

/// The `pto_op::DType` variant of a dtype name, when it is one.
fn dtype_variant(dtype: &Ident) -> Option<&'static str> {
    DTYPES
        .iter()
        .find(|(name, _)| dtype == name)
        .map(|(_, variant)| *variant)
}

/// A non-negative finite number, possibly written as an integer.
fn tolerance_lit(expr: &Expr) -> Option<f64> {
    float_lit(expr).filter(|v| v.is_finite() && *v >= 0.0)
}

/// Checks `tolerance(f16 = (2e-3, 1e-3), ..)`.
pub fn check_tolerances(cx: &mut Ctxt, decls: &[ToleranceDecl]) -> Option<Vec<DeclaredTolerance>> {
    let mut checked = Vec::new();
    let mut ok = true;
    for (i, decl) in decls.iter().enumerate() {
        let Some(dtype) = dtype_variant(&decl.dtype) else {
            cx.error_spanned_by(
                &decl.dtype,
                format!(
                    "unknown dtype `{}` in tolerance(...); dtypes are {DTYPE_LIST}",
                    decl.dtype
                ),
            );
            ok = false;
            continue;
        };
        if decls[..i].iter().any(|d| d.dtype == decl.dtype) {
            cx.error_spanned_by(
                &decl.dtype,
                format!("the tolerance for `{}` is given twice", decl.dtype),
            );
            ok = false;
        }
        let pair = match &decl.value {
            Expr::Tuple(t) if t.elems.len() == 2 => {
                tolerance_lit(&t.elems[0]).zip(tolerance_lit(&t.elems[1]))
            }
            _ => None,
        };
        match pair {
            Some((rtol, atol)) => checked.push(DeclaredTolerance { dtype, rtol, atol }),
            None => {
                cx.error_spanned_by(
                    &decl.value,
                    format!(
                        "`{}` is not a tolerance; write `(rtol, atol)` with non-negative numbers, \
                         e.g. `{} = (2e-3, 1e-3)`",
                        code(&decl.value),
                        decl.dtype
                    ),
                );
                ok = false;
            }
        }
    }
    ok.then_some(checked)
}

/// The keys a `#[parity]` case takes besides inputs and params.
const CASE_KEYS: [&str; 3] = ["seed", "rtol", "atol"];

/// Checks every `#[parity]` of the module: on the kernel, each a complete case; anywhere
/// else, an error. Returns the kernel's cases when all are good.
///
/// `inputs` is `None` when #[infer_shape] is bad (reported already): the cases are not
/// checked then, so that its mistakes do not echo here. `params` is `None` when a param
/// declaration is bad; the declared names in `decls` still tell params from unknown names.
pub fn check_cases(
    cx: &mut Ctxt,
    op: &OpModule,
    inputs: Option<(&[Ident], &[bool])>,
    decls: &[ParamDecl],
    params: Option<&[Param]>,
) -> Option<Vec<ParityCase>> {
    let has_kernel = op.role_fns.iter().any(|f| f.role == Role::Kernel);
    let misplaced = op
        .stray_parity
        .iter()
        .map(|s| (&s.attr, s.target.clone()))
        .chain(
            op.role_fns
                .iter()
                .filter(|f| f.role != Role::Kernel)
                .flat_map(|f| {
                    f.parity
                        .iter()
                        .map(move |p| (&p.attr, format!("{} `{}`", f.role, f.item.sig.ident)))
                }),
        );
    let mut ok = true;
    for (attr, target) in misplaced {
        let hint = if has_kernel {
            ""
        } else {
            "; this op has no #[kernel], so there is nothing to compare with the reference"
        };
        cx.error_spanned_by(
            attr,
            format!("#[parity] goes on the #[kernel] function, not on {target}{hint}"),
        );
        ok = false;
    }
    let (inputs, optional) = inputs?;
    let mut cases = Vec::new();
    let kernel_cases: Vec<&ParityAttr> = op
        .role_fns
        .iter()
        .filter(|f| f.role == Role::Kernel)
        .flat_map(|f| &f.parity)
        .collect();
    // In a case, `seed = ..` would set a param or input of that name, never the case's own
    // seed: refuse the ambiguity where cases exist, on the name that causes it.
    if !kernel_cases.is_empty() {
        let names = decls
            .iter()
            .map(|d| (&d.name, "param"))
            .chain(inputs.iter().map(|i| (i, "input")));
        for (name, what) in names {
            if CASE_KEYS.iter().any(|key| name == key) {
                cx.error_spanned_by(
                    name,
                    format!(
                        "{what} `{name}` has the name of a #[parity] case key ({}): in a case, \
                         `{name} = ..` could not tell the two apart; rename the {what}",
                        CASE_KEYS.join(", ")
                    ),
                );
                ok = false;
            }
        }
    }
    for (index, case) in kernel_cases.into_iter().enumerate() {
        match check_case(cx, index, case, (inputs, optional), decls, params) {
            Some(case) => cases.push(case),
            None => ok = false,
        }
    }
    ok.then_some(cases)
}

/// Checks one case: every required input given once (optional ones given or left out, a
/// trailing run of them), params with good values, `seed`, and `rtol` with `atol` or neither.
fn check_case(
    cx: &mut Ctxt,
    index: usize,
    case: &ParityAttr,
    (inputs, optional): (&[Ident], &[bool]),
    decls: &[ParamDecl],
    params: Option<&[Param]>,
) -> Option<ParityCase> {
    let mut ok = true;
    // Given at all (even with a bad value), so a bad value is not also reported as missing.
    let mut given: Vec<bool> = vec![false; inputs.len()];
    let mut case_inputs: Vec<Option<CaseInput>> = inputs.iter().map(|_| None).collect();
    let mut case_params = Vec::new();
    let mut seen: Vec<&Ident> = Vec::new();
    let (mut seed, mut rtol, mut atol) = (None, None, None);
    for entry in &case.entries {
        let name = &entry.name;
        if seen.contains(&name) {
            cx.error_spanned_by(
                name,
                format!("`{name}` is given twice in this #[parity] case"),
            );
            ok = false;
            continue;
        }
        seen.push(name);
        if let Some(position) = inputs.iter().position(|i| i == name) {
            given[position] = true;
            match check_input(cx, name, &entry.value) {
                Some(input) => case_inputs[position] = Some(input),
                None => ok = false,
            }
        } else if decls.iter().any(|d| &d.name == name) {
            // A param whose declaration is bad is reported there; its value is not checked.
            let Some(param) = params.and_then(|ps| ps.iter().find(|p| &p.ident == name)) else {
                continue;
            };
            match check_param(cx, param, &entry.value) {
                Some(value) => case_params.push(CaseParam {
                    name: name.to_string(),
                    kind: param.kind,
                    value,
                }),
                None => ok = false,
            }
        } else {
            let slot = match name.to_string().as_str() {
                "seed" => {
                    match check_seed(cx, &entry.value) {
                        Some(value) => seed = Some(value),
                        None => ok = false,
                    }
                    continue;
                }
                "rtol" => &mut rtol,
                "atol" => &mut atol,
                _ => {
                    cx.error_spanned_by(name, unknown_name_message(name, inputs, decls));
                    ok = false;
                    continue;
                }
            };
            let value = match &entry.value {
                ParityValue::Expr(e) => tolerance_lit(e),
                ParityValue::Tensor { .. } => None,
            };
            if value.is_none() {
                cx.error_spanned_by(
                    value_tokens(&entry.value),
                    format!("`{name}` is a non-negative number, e.g. `{name} = 1e-3`"),
                );
                ok = false;
            }
            *slot = Some((name, value));
        }
    }
    let missing: Vec<&Ident> = inputs
        .iter()
        .zip(&given)
        .zip(optional)
        .filter(|((_, given), optional)| !**given && !**optional)
        .map(|((input, _), _)| input)
        .collect();
    // The case's inputs: through the last one given; an optional input left out before one
    // that is given cannot be represented (a call leaves out a trailing run).
    let given_count = given.iter().rposition(|g| *g).map_or(0, |last| last + 1);
    if let Some(gap) = (0..given_count).find(|&i| optional[i] && !given[i]) {
        let later = (gap..given_count)
            .find(|&i| given[i])
            .map_or_else(String::new, |i| inputs[i].to_string());
        cx.error_spanned_by(
            &case.attr,
            format!(
                "this #[parity] case leaves out optional input `{}` but gives `{later}` after \
                 it; a call leaves out a trailing run of optional inputs, so give `{}` too or \
                 leave out `{later}`",
                inputs[gap], inputs[gap]
            ),
        );
        ok = false;
    }
    if let Some(first) = missing.first() {
        let list: Vec<String> = missing.iter().map(|i| format!("`{i}`")).collect();
        cx.error_spanned_by(
            &case.attr,
            format!(
                "this #[parity] case does not give input {}; give every required input of the \
                 op as `name = dtype[dims]`, e.g. `{first} = f32[4, 64]`",
                list.join(", "),
            ),
        );
        ok = false;
    }
    for param in params.unwrap_or_default() {
        if param.default.is_none() && !case_params.iter().any(|p| param.ident == p.name) {
            cx.error_spanned_by(
                &case.attr,
                format!(
                    "this #[parity] case does not set param `{0}`, which has no default; add \
                     `{0} = {1}`",
                    param.ident,
                    param.kind.example()
                ),
            );
            ok = false;
        }
    }
    let tolerance = match (rtol, atol) {
        (None, None) => None,
        (Some((_, r)), Some((_, a))) => r.zip(a),
        (Some((given, _)), None) | (None, Some((given, _))) => {
            cx.error_spanned_by(
                given,
                format!(
                    "`{given}` alone: a #[parity] case sets both `rtol` and `atol`, or neither \
                     (then the op's tolerance applies)"
                ),
            );
            ok = false;
            None
        }
    };
    if !ok {
        return None;
    }
    let case_inputs: Vec<CaseInput> = case_inputs
        .into_iter()
        .take(given_count)
        .collect::<Option<_>>()?;
    Some(ParityCase {
        test_name: test_name(index, inputs.first().zip(case_inputs.first())),
        inputs: case_inputs,
        params: case_params,
        seed: match seed {
            Some(seed) => CaseSeed::Given(seed),
            None => CaseSeed::OfText(case_text(case)),
        },
        tolerance,
    })
}

/// The text a case's default seed is the hash of: its inputs and params as `name=value`,
/// whitespace removed, sorted by name, joined by `,`. Nothing else goes in (not the case's
/// place among the others, not `rtol`/`atol`), so the seed changes only when the case does.
fn case_text(case: &ParityAttr) -> String {
    let mut entries: Vec<String> = case
        .entries
        .iter()
        .filter(|entry| !CASE_KEYS.iter().any(|key| entry.name == key))
        .map(|entry| {
            let text = format!("{}={}", entry.name, value_tokens(&entry.value));
            text.chars().filter(|c| !c.is_whitespace()).collect()
        })
        .collect();
    entries.sort();
    entries.join(",")
}

/// An input's `dtype[dims]`.
fn check_input(cx: &mut Ctxt, name: &Ident, value: &ParityValue) -> Option<CaseInput> {
    let ParityValue::Tensor { dtype, dims, range } = value else {
        let ParityValue::Expr(expr) = value else {
            return None;
        };
        cx.error_spanned_by(
            expr,
            format!("input `{name}` takes a dtype and dims, e.g. `{name} = f16[4, 64]`"),
        );
        return None;
    };
    let variant = dtype_variant(dtype);
    if variant.is_none() {
        cx.error_spanned_by(
            dtype,
            format!("unknown dtype `{dtype}` for input `{name}`; dtypes are {DTYPE_LIST}"),
        );
    }
    let mut good_dims = Vec::new();
    for dim in dims {
        match dim_value(dim) {
            Some(d) => good_dims.push(d),
            None => cx.error_spanned_by(
                dim,
                format!(
                    "`{dim}` is not a dimension of input `{name}`; dims are whole numbers, \
                     e.g. `{name} = f16[4, 64]`"
                ),
            ),
        }
    }
    let dims_ok = good_dims.len() == dims.len();
    let dtype = variant?;
    let range = match range {
        Some(range) => Some(check_range(cx, name, dtype, range)?),
        None => None,
    };
    Some(CaseInput {
        dtype,
        dims: good_dims,
        range,
    })
    .filter(|_| dims_ok)
}

/// An input's value range, `in low..high`: two numbers, half-open, `low < high`; integers
/// within the dtype's values for an integer dtype.
fn check_range(cx: &mut Ctxt, name: &Ident, dtype: &str, range: &Expr) -> Option<(f64, f64)> {
    let example = match dtype {
        "F32" | "F16" | "BF16" => "-4.0..4.0",
        "U8" => "0..256",
        "Bool" => "0..2",
        _ => "-128..128",
    };
    let bounds = match range {
        Expr::Range(syn::ExprRange {
            start: Some(start),
            limits: syn::RangeLimits::HalfOpen(_),
            end: Some(end),
            ..
        }) => float_lit(start).zip(float_lit(end)),
        _ => None,
    };
    let Some((low, high)) = bounds.filter(|(l, h)| l.is_finite() && h.is_finite()) else {
        cx.error_spanned_by(
            range,
            format!(
                "the values of input `{name}` are a half-open range of two numbers, \
                 `low..high`, e.g. `{name} = {}[..] in {example}`",
                dtype.to_lowercase()
            ),
        );
        return None;
    };
    if low >= high {
        cx.error_spanned_by(
            range,
            format!("the range of input `{name}` is empty: `low..high` needs low < high"),
        );
        return None;
    }
    let integer_values = match dtype {
        "I32" => Some((f64::from(i32::MIN), f64::from(i32::MAX) + 1.0)),
        "I64" => Some((-(2f64.powi(63)), 2f64.powi(63))),
        "I8" => Some((-128.0, 128.0)),
        "U8" => Some((0.0, 256.0)),
        "Bool" => Some((0.0, 2.0)),
        _ => None,
    };
    if let Some((min, end)) = integer_values
        && (low.fract() != 0.0 || high.fract() != 0.0 || low < min || high > end)
    {
        cx.error_spanned_by(
            range,
            format!(
                "input `{name}` is {}: its range is of whole numbers within {min}..{end}, \
                 e.g. `in {example}`",
                dtype.to_lowercase()
            ),
        );
        return None;
    }
    Some((low, high))
}

/// A dimension: an unsuffixed or `usize` integer literal.
fn dim_value(lit: &LitInt) -> Option<usize> {
    matches!(lit.suffix(), "" | "usize")
        .then(|| lit.base10_parse::<usize>().ok())
        .flatten()
}

/// A value a case gives a param, checked as a default of it would be.
fn check_param(cx: &mut Ctxt, param: &Param, value: &ParityValue) -> Option<DefaultValue> {
    let name = &param.ident;
    let checked = match value {
        ParityValue::Expr(expr) => default_value(param.kind, expr),
        ParityValue::Tensor { .. } => None,
    };
    if checked.is_none() {
        let written = match value {
            ParityValue::Expr(expr) => format!("`{}` is not", code(expr)),
            ParityValue::Tensor { .. } => "a dtype and dims are not".to_owned(),
        };
        cx.error_spanned_by(
            value_tokens(value),
            format!(
                "{written} a value for param `{name}`, {}; write a literal, e.g. `{name} = {}`",
                param.kind.with_article(),
                param.kind.example()
            ),
        );
    }
    checked
}

/// The seed; `None` (recorded in `cx`) for anything but a whole number.
fn check_seed(cx: &mut Ctxt, value: &ParityValue) -> Option<u64> {
    let seed = match value {
        ParityValue::Expr(expr) => match signed_lit(expr) {
            Some((false, Lit::Int(i))) if matches!(i.suffix(), "" | "u64") => {
                i.base10_parse::<u64>().ok()
            }
            _ => None,
        },
        ParityValue::Tensor { .. } => None,
    };
    if seed.is_none() {
        cx.error_spanned_by(
            value_tokens(value),
            "the seed is a whole number from 0 up, e.g. `seed = 7`",
        );
    }
    seed
}

/// The tokens of a value, for spans.
fn value_tokens(value: &ParityValue) -> proc_macro2::TokenStream {
    match value {
        ParityValue::Expr(expr) => quote::ToTokens::to_token_stream(expr),
        ParityValue::Tensor {
            dtype,
            dims,
            range: None,
        } => quote::quote!(#dtype [#(#dims),*]),
        ParityValue::Tensor {
            dtype,
            dims,
            range: Some(range),
        } => quote::quote!(#dtype [#(#dims),*] in #range),
    }
}

/// The message for a name that is neither an input, a param nor a case key.
fn unknown_name_message(name: &Ident, inputs: &[Ident], decls: &[ParamDecl]) -> String {
    let list = |names: Vec<String>| {
        if names.is_empty() {
            "none".to_owned()
        } else {
            names.join(", ")
        }
    };
    format!(
        "unknown name `{name}` in #[parity]; the op's inputs are ({}), its params ({}), and a \
         case may set `seed`, `rtol` and `atol`",
        list(inputs.iter().map(ToString::to_string).collect()),
        list(decls.iter().map(|d| d.name.to_string()).collect()),
    )
}

/// `case_0_x_f16_4x64`: the case's index, then its first input's name, dtype and dims, so a
/// failing test reads as the case it checks. The index alone keeps names unique.
fn test_name(index: usize, first: Option<(&Ident, &CaseInput)>) -> Ident {
    let mut name = format!("case_{index}");
    if let Some((input, case_input)) = first {
        let dtype = case_input.dtype.to_ascii_lowercase();
        let dims = if case_input.dims.is_empty() {
            "scalar".to_owned()
        } else {
            case_input
                .dims
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join("x")
        };
        name = format!("{name}_{}_{dtype}_{dims}", input.unraw());
    }
    Ident::new(&name, Span::call_site())
}

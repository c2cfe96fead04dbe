//! Checking a parsed description and building the [`Model`] that expansion prints.
//!
//! Every check records its error in the [`Ctxt`] and goes on, so an author sees all of their
//! mistakes at once. A check whose input is already known bad is skipped instead of adding a
//! follow-on error (no input list, no output-count checks, and so on). One file per job:
//! this one checks the op as a whole (name, version, reserved names, outputs) and builds the
//! model; `literal.rs` checks params and literal values, `signature.rs` the role functions'
//! signatures, `parity.rs` the `#[parity]` cases and `tolerance(...)`; `types.rs` reads the
//! types an author writes.

mod literal;
mod parity;
mod signature;
mod types;

use proc_macro2::Span;
use syn::ext::IdentExt;
use syn::{Ident, ItemMod};

pub(crate) use types::{is_named_params, result_ok_type};

use crate::ast::{OpModule, Role, RoleFn};
use crate::attr::{OpArgs, attribute_span};
use crate::ctxt::Ctxt;
use crate::model::Model;
use literal::check_params;
use signature::{check_fixed, check_io_fn, check_kernel};

/// Names the expansion defines inside the op module.
const RESERVED: [&str; 5] = ["Params", "NAME", "def", "run", "apply"];

/// Checks everything; returns the model when nothing was wrong.
pub fn check(cx: &mut Ctxt, args: &OpArgs, op: OpModule) -> Option<Model> {
    let name = check_name(cx, args);
    let version = check_version(cx, args);
    let params = check_params(cx, &args.params);
    check_reserved(cx, &op.module);

    let shape_fn = single(cx, &op.role_fns, Role::InferShape);
    let dtype_fn = single(cx, &op.role_fns, Role::InferDtype);
    let reference_fn = single(cx, &op.role_fns, Role::Reference);
    let kernel_fn = single(cx, &op.role_fns, Role::Kernel);
    let estimator_fn = single(cx, &op.role_fns, Role::Estimator);
    let properties_fn = single(cx, &op.role_fns, Role::Properties);

    let module_ident = &op.module.ident;
    for (found, role, example) in [
        (
            shape_fn.is_some(),
            Role::InferShape,
            "fn infer_shape(x: &Shape, p: &Params) -> Result<Shape, OpError>",
        ),
        (
            dtype_fn.is_some(),
            Role::InferDtype,
            "fn infer_dtype(x: DType, p: &Params) -> Result<DType, OpError>",
        ),
        (
            reference_fn.is_some(),
            Role::Reference,
            "fn reference(x: &Tensor, p: &Params) -> Result<Tensor, OpError>",
        ),
    ] {
        if !found {
            cx.error_spanned_by(
                module_ident,
                format!("op module `{module_ident}` has no {role} function; add one, e.g. `{role} {example}`"),
            );
        }
    }

    // The inputs and the number of outputs come from #[infer_shape]; the others must agree.
    let shape = shape_fn.and_then(|f| check_io_fn(cx, f, None, "Shape", true));
    let declared = shape.as_ref().map(|(_, inputs, _)| inputs);
    let inputs = declared.map(|d| d.names.clone());
    let arity = shape.as_ref().and_then(|(_, _, arity)| *arity);
    let outputs = check_outputs(cx, args, arity);
    if let Some(inputs) = &inputs {
        check_param_input_clash(cx, args, inputs);
    }

    let dtype = dtype_fn.and_then(|f| check_io_fn(cx, f, declared, "DType", false));
    let reference = reference_fn.and_then(|f| check_io_fn(cx, f, declared, "Tensor", true));
    for (checked, f) in [(&dtype, dtype_fn), (&reference, reference_fn)] {
        if let (Some((_, _, Some(n))), Some(expected), Some(f)) = (checked, arity, f)
            && *n != expected
        {
            cx.error_spanned_by(
                &f.item.sig.output,
                format!(
                    "{} returns {n} output(s), but #[infer_shape] returns {expected}",
                    f.role
                ),
            );
        }
    }
    let kernel = kernel_fn.and_then(|f| check_kernel(cx, f, declared, outputs.as_deref()));
    let estimator = estimator_fn
        .and_then(|f| check_fixed(cx, f, &["OpInvokeInfo", "DeviceProfile"], "Estimate"));
    let properties =
        properties_fn.and_then(|f| check_fixed(cx, f, &["OpInvokeInfo"], "PerformanceProperties"));
    let tolerances = parity::check_tolerances(cx, &args.tolerances);
    let optional = declared.map(|d| d.optional.clone());
    let parity = parity::check_cases(
        cx,
        &op,
        inputs.as_deref().zip(optional.as_deref()),
        &args.params,
        params.as_deref(),
    );

    if !cx.is_ok() {
        return None;
    }
    Some(Model {
        doc: crate::ast::doc_comment(&op.module.attrs),
        module: op.module,
        name: name?,
        version: version?,
        params: params?,
        inputs: inputs?,
        optional: optional?,
        outputs: outputs?,
        infer_shape: shape?.0,
        infer_dtype: dtype?.0,
        reference: reference?.0,
        kernel,
        estimator,
        properties,
        tolerances: tolerances?,
        parity: parity?,
    })
}

/// The one function marked `role`; reports any second one.
fn single<'a>(cx: &mut Ctxt, role_fns: &'a [RoleFn], role: Role) -> Option<&'a RoleFn> {
    let found: Vec<&RoleFn> = role_fns.iter().filter(|f| f.role == role).collect();
    for extra in found.iter().skip(1) {
        cx.error_spanned_by(
            &extra.attr,
            format!(
                "a second {role} function (`{}`); the op already has `{}`",
                extra.item.sig.ident, found[0].item.sig.ident
            ),
        );
    }
    found.first().copied()
}

/// `name = "domain.op"`: present, made of letters, digits, `_` and non-empty dotted parts, with a
/// domain (the part before the last dot, which the ONNX export uses) other than `ai.onnx`.
fn check_name(cx: &mut Ctxt, args: &OpArgs) -> Option<String> {
    let Some(lit) = &args.name else {
        cx.error_at(
            attribute_span(),
            "#[custom_op] needs the op's name: `#[custom_op(name = \"domain.op\")]`",
        );
        return None;
    };
    let name = lit.value();
    let problem = if name.is_empty() {
        Some("the op name is empty".to_owned())
    } else if let Some(c) = name
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || *c == '_' || *c == '.'))
    {
        Some(format!("the op name `{name}` contains `{c}`"))
    } else if name.starts_with('.') || name.ends_with('.') || name.contains("..") {
        Some(format!(
            "the op name `{name}` has an empty part between dots"
        ))
    } else if !name.contains('.') {
        // The ONNX export splits the name at its last dot: domain, then op type.
        cx.error_spanned_by(
            lit,
            format!(
                "op name \"{name}\" has no domain: write \"<domain>.<name>\", e.g. \"my_ops.{}\"; \
                 the domain (everything before the last dot) becomes the ONNX domain",
                name.to_ascii_lowercase()
            ),
        );
        return None;
    } else if name
        .rsplit_once('.')
        .is_some_and(|(domain, _)| domain == "ai.onnx")
    {
        cx.error_spanned_by(
            lit,
            format!(
                "op name \"{name}\" is in the ONNX default domain `ai.onnx`, which the ONNX export \
                 refuses for custom ops; use a domain of your own, e.g. \"my_ops.{}\"",
                name.rsplit_once('.').map_or(name.as_str(), |(_, op)| op)
            ),
        );
        return None;
    } else {
        None
    };
    match problem {
        Some(problem) => {
            cx.error_spanned_by(
                lit,
                format!(
                    "{problem}; names are `domain.op`, made of letters, digits, `_` and `.` \
                     (e.g. \"demo.rms_norm\")"
                ),
            );
            None
        }
        None => Some(name),
    }
}

/// A param named like an input: the two would share a key in `#[parity(...)]` cases and a name
/// in the op's schema, so each param needs a name of its own.
fn check_param_input_clash(cx: &mut Ctxt, args: &OpArgs, inputs: &[Ident]) {
    for decl in &args.params {
        let name = decl.name.unraw().to_string();
        if inputs.iter().any(|input| *input == name) {
            cx.error_spanned_by(
                &decl.name,
                format!(
                    "param `{name}` has the same name as input `{name}` (from #[infer_shape]); \
                     inputs and params share one set of names (the op's schema, `#[parity(...)]` \
                     keys), so rename the param or the input"
                ),
            );
        }
    }
}

/// `version = N`, a whole number from 1 up; 1 when not given.
fn check_version(cx: &mut Ctxt, args: &OpArgs) -> Option<u32> {
    let Some(lit) = &args.version else {
        return Some(1);
    };
    match lit.base10_parse::<u32>() {
        Ok(v) if v >= 1 => Some(v),
        _ => {
            cx.error_spanned_by(lit, "the version is a whole number from 1 up");
            None
        }
    }
}

/// Items of the module whose names the expansion defines.
fn check_reserved(cx: &mut Ctxt, module: &ItemMod) {
    let Some((_, items)) = &module.content else {
        return;
    };
    for item in items {
        let ident = match item {
            syn::Item::Fn(i) => &i.sig.ident,
            syn::Item::Struct(i) => &i.ident,
            syn::Item::Enum(i) => &i.ident,
            syn::Item::Const(i) => &i.ident,
            syn::Item::Static(i) => &i.ident,
            syn::Item::Type(i) => &i.ident,
            syn::Item::Mod(i) => &i.ident,
            _ => continue,
        };
        if RESERVED.iter().any(|r| ident == r) || ident.to_string().starts_with("__pto") {
            cx.error_spanned_by(
                ident,
                format!(
                    "`{ident}` is generated by #[custom_op] in every op module; rename this item \
                     (generated names: {}, and anything starting with `__pto`)",
                    RESERVED.join(", ")
                ),
            );
        }
    }
}

/// The output names: `outputs(...)`, or `y` for one output and `y0, y1, ..` for several.
fn check_outputs(cx: &mut Ctxt, args: &OpArgs, arity: Option<usize>) -> Option<Vec<Ident>> {
    match &args.outputs {
        Some((key, names)) => {
            let mut ok = true;
            for (i, name) in names.iter().enumerate() {
                if names[..i].contains(name) {
                    cx.error_spanned_by(name, format!("output `{name}` is named twice"));
                    ok = false;
                }
            }
            if names.is_empty() {
                cx.error_spanned_by(key, "outputs() is empty; an op has at least one output");
                ok = false;
            }
            if let Some(arity) = arity
                && arity != names.len()
                && !names.is_empty()
            {
                cx.error_spanned_by(
                    key,
                    format!(
                        "outputs(...) names {} output(s), but #[infer_shape] returns {arity}",
                        names.len()
                    ),
                );
                ok = false;
            }
            (ok && arity.is_some()).then(|| names.clone())
        }
        None => arity.map(|n| match n {
            1 => vec![Ident::new("y", Span::call_site())],
            n => (0..n)
                .map(|i| Ident::new(&format!("y{i}"), Span::call_site()))
                .collect(),
        }),
    }
}

//! The signatures of the role functions: their inputs, `&Params`, and return types.

use proc_macro2::Span;
use quote::ToTokens;
use syn::ext::IdentExt;
use syn::spanned::Spanned;
use syn::{FnArg, Ident, ItemFn, Pat, ReturnType, Type};

use super::types::{
    code, describe_expected, is_named, is_named_params, is_ref_to, option_inner, result_ok_type,
};
use crate::ast::RoleFn;
use crate::ctxt::Ctxt;
use crate::model::FnModel;

/// The name of a function argument, leading `_` removed (so `_p` and `p` agree).
fn arg_ident(cx: &mut Ctxt, arg: &FnArg) -> Option<(Ident, Type)> {
    match arg {
        FnArg::Typed(pt) => match &*pt.pat {
            Pat::Ident(pi) if pi.subpat.is_none() => {
                let raw = pi.ident.unraw().to_string();
                let trimmed = raw.trim_start_matches('_');
                if trimmed.is_empty() {
                    cx.error_spanned_by(
                        &pi.ident,
                        "name this argument: it names an input of the op",
                    );
                    return None;
                }
                Some((Ident::new(trimmed, pi.ident.span()), (*pt.ty).clone()))
            }
            other => {
                cx.error_spanned_by(
                    other,
                    "write a plain name here: it names an input of the op",
                );
                None
            }
        },
        FnArg::Receiver(r) => {
            cx.error_spanned_by(r, "op functions are free functions, without `self`");
            None
        }
    }
}

/// Neither generic nor async.
fn check_plain_fn(cx: &mut Ctxt, f: &RoleFn) -> bool {
    let sig = &f.item.sig;
    let mut ok = true;
    if !sig.generics.params.is_empty() {
        cx.error_spanned_by(
            &sig.generics,
            format!("a {} function cannot be generic", f.role),
        );
        ok = false;
    }
    if let Some(a) = &sig.asyncness {
        cx.error_spanned_by(a, format!("a {} function cannot be async", f.role));
        ok = false;
    }
    ok
}

/// Splits off a trailing `&Params`; reports one anywhere else.
fn split_params(cx: &mut Ctxt, f: &RoleFn, args: &mut Vec<(Ident, Type)>) -> bool {
    let takes = args
        .last()
        .is_some_and(|(_, ty)| is_ref_to(ty, "Params", false));
    if takes {
        args.pop();
    }
    for (_, ty) in args.iter() {
        if is_named_params(ty) {
            cx.error_spanned_by(
                ty,
                format!("`&Params` goes last in the {} function's arguments", f.role),
            );
        }
    }
    // Reported above: the checks of inputs that follow must not report it again.
    args.retain(|(_, ty)| !is_named_params(ty));
    takes
}

/// Every argument as a name and a type; `None` when one is not a plain name (reported).
fn typed_args(cx: &mut Ctxt, item: &ItemFn) -> Option<Vec<(Ident, Type)>> {
    let mut out = Vec::new();
    let mut ok = true;
    for arg in &item.sig.inputs {
        match arg_ident(cx, arg) {
            Some(a) => out.push(a),
            None => ok = false,
        }
    }
    ok.then_some(out)
}

/// Compares a function's inputs with the op's (from #[infer_shape]).
fn check_input_names(cx: &mut Ctxt, f: &RoleFn, args: &[(Ident, Type)], inputs: &[Ident]) -> bool {
    let list = |names: &[&Ident]| {
        names
            .iter()
            .map(|n| n.to_string())
            .collect::<Vec<_>>()
            .join(", ")
    };
    let op_inputs: Vec<&Ident> = inputs.iter().collect();
    if args.len() != inputs.len() {
        let here: Vec<&Ident> = args.iter().map(|(n, _)| n).collect();
        let message = format!(
            "{} takes {} input(s) ({}), but the op has {} ({}), as #[infer_shape] declares; \
             every function lists the op's inputs in the same order",
            f.role,
            args.len(),
            list(&here),
            inputs.len(),
            list(&op_inputs)
        );
        match args.get(inputs.len()) {
            Some((extra, _)) => cx.error_spanned_by(extra, message),
            None => cx.error_spanned_by(&f.item.sig.ident, message),
        }
        return false;
    }
    let mut ok = true;
    for ((name, _), expected) in args.iter().zip(inputs) {
        if name != expected {
            cx.error_spanned_by(
                name,
                format!(
                    "input `{name}` of {} is `{expected}` in #[infer_shape]; every function \
                     lists the op's inputs ({}) in the same order",
                    f.role,
                    list(&op_inputs)
                ),
            );
            ok = false;
        }
    }
    ok
}

/// `elem` (`&elem` when `by_ref`).
fn is_elem(ty: &Type, elem: &str, by_ref: bool) -> bool {
    if by_ref {
        is_ref_to(ty, elem, false)
    } else {
        is_named(ty, elem)
    }
}

/// Each input argument has type `elem` (`&elem` when `by_ref`), or `Option<elem>` for an
/// optional input. Returns which inputs are optional, when every type is good.
fn check_arg_types(
    cx: &mut Ctxt,
    f: &RoleFn,
    args: &[(Ident, Type)],
    elem: &str,
    by_ref: bool,
) -> Option<Vec<bool>> {
    let mut ok = true;
    let mut optional = Vec::with_capacity(args.len());
    for (name, ty) in args {
        if is_elem(ty, elem, by_ref) {
            optional.push(false);
            continue;
        }
        if option_inner(ty).is_some_and(|inner| is_elem(inner, elem, by_ref)) {
            optional.push(true);
            continue;
        }
        let expected = describe_expected(elem, by_ref);
        cx.error_spanned_by(
            ty,
            format!(
                "input `{name}` of {} has type `{}`; expected `{expected}`, or \
                 `Option<{expected}>` for an optional input",
                f.role,
                code(ty),
            ),
        );
        ok = false;
    }
    ok.then_some(optional)
}

/// The declaring function's optional inputs come after every required one: a call leaves
/// out a trailing run of them.
fn check_optional_last(
    cx: &mut Ctxt,
    f: &RoleFn,
    args: &[(Ident, Type)],
    optional: &[bool],
) -> bool {
    let Some(first) = optional.iter().position(|o| *o) else {
        return true;
    };
    let mut ok = true;
    for ((name, ty), _) in args.iter().zip(optional).skip(first).filter(|(_, o)| !**o) {
        cx.error_spanned_by(
            ty,
            format!(
                "input `{name}` of {} is required but comes after optional input `{}`; \
                 optional inputs go after every required one, since a call leaves out a \
                 trailing run of them (as ONNX does)",
                f.role, args[first].0
            ),
        );
        ok = false;
    }
    ok
}

/// A function's optional inputs are the declaring function's (#[infer_shape]'s).
fn check_optional_agree(
    cx: &mut Ctxt,
    args: &[(Ident, Type)],
    optional: &[bool],
    declared: &[bool],
    elem: &str,
    by_ref: bool,
) -> bool {
    let mut ok = true;
    for (((name, ty), here), want) in args.iter().zip(optional).zip(declared) {
        if here != want {
            let expected = describe_expected(elem, by_ref);
            let (what, write) = match want {
                true => ("optional", format!("Option<{expected}>")),
                false => ("required", expected),
            };
            cx.error_spanned_by(
                ty,
                format!(
                    "input `{name}` is {what} in #[infer_shape]; write `{write}` here, as every \
                     function declares the op's inputs alike"
                ),
            );
            ok = false;
        }
    }
    ok
}

/// For `Result<Elem, OpError>` or `Result<(Elem, ..), OpError>`: the number of outputs.
fn output_arity(output: &ReturnType, elem: &str) -> Option<usize> {
    let ReturnType::Type(_, ty) = output else {
        return None;
    };
    match result_ok_type(ty)? {
        Type::Tuple(t) if t.elems.len() >= 2 && t.elems.iter().all(|e| is_named(e, elem)) => {
            Some(t.elems.len())
        }
        other if is_named(other, elem) => Some(1),
        _ => None,
    }
}

/// The op's inputs as #[infer_shape] declares them: names, and which are optional.
pub(crate) struct DeclaredInputs {
    pub names: Vec<Ident>,
    pub optional: Vec<bool>,
}

/// #[infer_shape], #[infer_dtype] and #[reference]: inputs of one type (or `Option` of it for
/// an optional input), then `&Params`. `inputs` is the op's, from #[infer_shape]; `None` when
/// this is #[infer_shape]. Returns the function, its inputs, and its number of outputs (when
/// its return type is good).
pub(crate) fn check_io_fn(
    cx: &mut Ctxt,
    f: &RoleFn,
    inputs: Option<&DeclaredInputs>,
    elem: &str,
    by_ref: bool,
) -> Option<(FnModel, DeclaredInputs, Option<usize>)> {
    let plain = check_plain_fn(cx, f);
    let mut args = typed_args(cx, &f.item)?;
    let takes_params = split_params(cx, f, &mut args);
    let optional = check_arg_types(cx, f, &args, elem, by_ref);
    let names_ok = match inputs {
        Some(inputs) => check_input_names(cx, f, &args, &inputs.names),
        None => true,
    };
    let optional_ok = match (&optional, inputs) {
        (Some(optional), None) => check_optional_last(cx, f, &args, optional),
        (Some(optional), Some(inputs)) if names_ok => {
            check_optional_agree(cx, &args, optional, &inputs.optional, elem, by_ref)
        }
        _ => true,
    };
    let arity = output_arity(&f.item.sig.output, elem);
    if arity.is_none() {
        let span_target: &dyn ToTokens = match &f.item.sig.output {
            ReturnType::Type(_, ty) => ty,
            ReturnType::Default => &f.item.sig.ident,
        };
        cx.error_spanned_by(
            span_target,
            format!(
                "{} returns `Result<{elem}, OpError>`, or `Result<({elem}, {elem}, ..), OpError>` \
                 for several outputs",
                f.role
            ),
        );
    }
    let optional = optional?;
    let names = args.into_iter().map(|(n, _)| n).collect();
    (plain && names_ok && optional_ok).then(|| {
        (
            FnModel {
                ident: f.item.sig.ident.clone(),
                takes_params,
                ret_span: ret_span(&f.item),
            },
            DeclaredInputs { names, optional },
            arity,
        )
    })
}

/// #[kernel]: `&mut Kernel`, inputs then outputs as `&Global`, then `&Params`.
pub(crate) fn check_kernel(
    cx: &mut Ctxt,
    f: &RoleFn,
    inputs: Option<&DeclaredInputs>,
    outputs: Option<&[Ident]>,
) -> Option<FnModel> {
    let plain = check_plain_fn(cx, f);
    let mut args = typed_args(cx, &f.item)?;
    let takes_params = split_params(cx, f, &mut args);
    let mut ok = plain;
    match args.first() {
        Some((_, ty)) if is_ref_to(ty, "Kernel", true) => {
            args.remove(0);
        }
        Some((_, ty)) => {
            cx.error_spanned_by(
                ty,
                "the #[kernel] function's first argument is the builder: `k: &mut Kernel`",
            );
            ok = false;
        }
        None => {
            cx.error_spanned_by(
                &f.item.sig.ident,
                "the #[kernel] function's first argument is the builder: `k: &mut Kernel`",
            );
            return None;
        }
    }
    let optional = check_arg_types(cx, f, &args, "Global", true);
    ok &= optional.is_some();
    if let (Some(inputs), Some(outputs)) = (inputs, outputs) {
        let io: Vec<Ident> = inputs.names.iter().chain(outputs).cloned().collect();
        if args.len() != io.len() || args.iter().zip(&io).any(|((a, _), b)| a != b) {
            let here: Vec<String> = args.iter().map(|(n, _)| n.to_string()).collect();
            let want: Vec<String> = io.iter().map(ToString::to_string).collect();
            cx.error_spanned_by(
                &f.item.sig.inputs,
                format!(
                    "#[kernel] takes ({}) after the builder, but the op's inputs then outputs \
                     are ({}); list them in that order, each as `&Global`",
                    here.join(", "),
                    want.join(", ")
                ),
            );
            ok = false;
        } else if let Some(optional) = &optional {
            ok &= check_optional_agree(cx, &args, optional, &inputs.optional, "Global", true);
            // Outputs are never optional: a kernel writes every one.
            let n = inputs.names.len();
            for ((name, ty), _) in args[n..].iter().zip(&optional[n..]).filter(|(_, o)| **o) {
                cx.error_spanned_by(
                    ty,
                    format!(
                        "output `{name}` is `&Global`, never `Option`: the kernel writes every \
                         output of the op"
                    ),
                );
                ok = false;
            }
        }
    }
    if !returns_unit_result(&f.item.sig.output) {
        cx.error_at(ret_span(&f.item), "#[kernel] returns `Result<(), OpError>`");
        ok = false;
    }
    ok.then(|| FnModel {
        ident: f.item.sig.ident.clone(),
        takes_params,
        ret_span: ret_span(&f.item),
    })
}

/// `Result<(), OpError>` (or an alias `Result<()>`).
fn returns_unit_result(output: &ReturnType) -> bool {
    let ReturnType::Type(_, ty) = output else {
        return false;
    };
    matches!(result_ok_type(ty), Some(Type::Tuple(t)) if t.elems.is_empty())
}

/// The span of the return type, or of the name when there is none.
pub(crate) fn ret_span(item: &ItemFn) -> Span {
    match &item.sig.output {
        ReturnType::Type(_, ty) => ty.span(),
        ReturnType::Default => item.sig.ident.span(),
    }
}

/// #[estimator] and #[properties]: fixed argument types and return type.
pub(crate) fn check_fixed(
    cx: &mut Ctxt,
    f: &RoleFn,
    arg_types: &[&str],
    ret: &str,
) -> Option<FnModel> {
    let mut ok = check_plain_fn(cx, f);
    let args = typed_args(cx, &f.item)?;
    let expected: Vec<String> = arg_types.iter().map(|t| format!("&{t}")).collect();
    let good_args = args.len() == arg_types.len()
        && args
            .iter()
            .zip(arg_types)
            .all(|((_, ty), t)| is_ref_to(ty, t, false));
    if !good_args {
        cx.error_spanned_by(
            &f.item.sig.inputs,
            format!("{} takes ({})", f.role, expected.join(", ")),
        );
        ok = false;
    }
    let good_ret = matches!(&f.item.sig.output, ReturnType::Type(_, ty) if is_named(ty, ret));
    if !good_ret {
        cx.error_at(ret_span(&f.item), format!("{} returns `{ret}`", f.role));
        ok = false;
    }
    ok.then(|| FnModel {
        ident: f.item.sig.ident.clone(),
        takes_params: false,
        ret_span: ret_span(&f.item),
    })
}

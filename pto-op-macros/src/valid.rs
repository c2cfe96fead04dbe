//! Checking a parsed description and building the model that expansion prints.
//!
//! Every check records its error in the [`Ctxt`] and goes on, so an author sees all of their
//! mistakes at once. A check whose input is already known bad is skipped instead of adding a
//! follow-on error (no input list, no output-count checks, and so on).

use proc_macro2::Span;
use quote::ToTokens;
use syn::ext::IdentExt;
use syn::spanned::Spanned;
use syn::{
    Expr, ExprLit, ExprUnary, FnArg, GenericArgument, Ident, ItemFn, ItemMod, Lit, Pat,
    PathArguments, ReturnType, Type, UnOp,
};

use crate::ast::{OpModule, Role, RoleFn};
use crate::attr::{OpArgs, ParamDecl, attribute_span};
use crate::ctxt::Ctxt;
use crate::parity::{DeclaredTolerance, ParityCase};

/// Names the expansion defines inside the op module.
const RESERVED: [&str; 5] = ["Params", "NAME", "def", "run", "apply"];

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
    const SUPPORTED: &'static str = "f32, f64, i32, i64, bool, String, Vec<i64> or Vec<f32>";

    fn of(ty: &Type) -> Option<ParamKind> {
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
    let inputs = shape.as_ref().map(|(_, inputs, _)| inputs.clone());
    let arity = shape.as_ref().and_then(|(_, _, arity)| *arity);
    let outputs = check_outputs(cx, args, arity);

    let dtype = dtype_fn.and_then(|f| check_io_fn(cx, f, inputs.as_deref(), "DType", false));
    let reference =
        reference_fn.and_then(|f| check_io_fn(cx, f, inputs.as_deref(), "Tensor", true));
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
    let kernel = kernel_fn.and_then(|f| check_kernel(cx, f, inputs.as_deref(), outputs.as_deref()));
    let estimator = estimator_fn
        .and_then(|f| check_fixed(cx, f, &["OpInvokeInfo", "DeviceProfile"], "Estimate"));
    let properties =
        properties_fn.and_then(|f| check_fixed(cx, f, &["OpInvokeInfo"], "PerformanceProperties"));
    let tolerances = crate::parity::check_tolerances(cx, &args.tolerances);
    let parity =
        crate::parity::check_cases(cx, &op, inputs.as_deref(), &args.params, params.as_deref());

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

fn check_params(cx: &mut Ctxt, decls: &[ParamDecl]) -> Option<Vec<Param>> {
    let mut params = Vec::new();
    let mut ok = true;
    for (i, decl) in decls.iter().enumerate() {
        if decls[..i].iter().any(|d| d.name == decl.name) {
            cx.error_spanned_by(
                &decl.name,
                format!("param `{}` is declared twice", decl.name),
            );
            ok = false;
        }
        let Some(kind) = ParamKind::of(&decl.ty) else {
            cx.error_spanned_by(
                &decl.ty,
                format!(
                    "unsupported param type `{}`; params are {}",
                    code(&decl.ty),
                    ParamKind::SUPPORTED
                ),
            );
            ok = false;
            continue;
        };
        let default = match &decl.default {
            None => None,
            Some(expr) => match default_value(kind, expr) {
                Some(v) => Some(v),
                None => {
                    cx.error_spanned_by(
                        expr,
                        format!(
                            "`{}` is not a default for {} param; write a literal, e.g. `{}: {} = {}`",
                            code(expr),
                            kind.with_article(),
                            decl.name,
                            kind.rust_name(),
                            kind.example()
                        ),
                    );
                    ok = false;
                    continue;
                }
            },
        };
        params.push(Param {
            ident: decl.name.clone(),
            kind,
            default,
        });
    }
    ok.then_some(params)
}

pub(crate) fn default_value(kind: ParamKind, expr: &Expr) -> Option<DefaultValue> {
    match kind {
        ParamKind::F32 => float_lit(expr)
            .filter(|v| v.is_finite() && v.abs() <= f64::from(f32::MAX))
            .map(DefaultValue::Float),
        ParamKind::F64 => float_lit(expr)
            .filter(|v| v.is_finite())
            .map(DefaultValue::Float),
        ParamKind::I32 => int_lit(expr)
            .filter(|v| i32::try_from(*v).is_ok())
            .map(DefaultValue::Int),
        ParamKind::I64 => int_lit(expr).map(DefaultValue::Int),
        ParamKind::Bool => match expr {
            Expr::Lit(ExprLit {
                lit: Lit::Bool(b), ..
            }) => Some(DefaultValue::Bool(b.value)),
            _ => None,
        },
        ParamKind::String => match expr {
            Expr::Lit(ExprLit {
                lit: Lit::Str(s), ..
            }) => Some(DefaultValue::Str(s.value())),
            _ => None,
        },
        ParamKind::I64s => array_elems(expr)?
            .iter()
            .map(int_lit)
            .collect::<Option<_>>()
            .map(DefaultValue::Ints),
        ParamKind::F32s => array_elems(expr)?
            .iter()
            .map(|e| float_lit(e).filter(|v| v.is_finite() && v.abs() <= f64::from(f32::MAX)))
            .collect::<Option<_>>()
            .map(DefaultValue::Floats),
    }
}

/// A literal, possibly negated: `-1e-6`.
pub(crate) fn signed_lit(expr: &Expr) -> Option<(bool, &Lit)> {
    match expr {
        Expr::Lit(ExprLit { lit, .. }) => Some((false, lit)),
        Expr::Unary(ExprUnary {
            op: UnOp::Neg(_),
            expr,
            ..
        }) => match &**expr {
            Expr::Lit(ExprLit { lit, .. }) => Some((true, lit)),
            _ => None,
        },
        _ => None,
    }
}

pub(crate) fn float_lit(expr: &Expr) -> Option<f64> {
    let (negative, lit) = signed_lit(expr)?;
    let v = match lit {
        Lit::Float(f) if matches!(f.suffix(), "" | "f32" | "f64") => {
            f.base10_parse::<f64>().ok()?
        }
        Lit::Int(i) if i.suffix().is_empty() => i.base10_parse::<f64>().ok()?,
        _ => return None,
    };
    Some(if negative { -v } else { v })
}

fn int_lit(expr: &Expr) -> Option<i64> {
    let (negative, lit) = signed_lit(expr)?;
    match lit {
        Lit::Int(i) if matches!(i.suffix(), "" | "i32" | "i64") => {
            let magnitude = i.base10_parse::<i128>().ok()?;
            i64::try_from(if negative { -magnitude } else { magnitude }).ok()
        }
        _ => None,
    }
}

fn array_elems(expr: &Expr) -> Option<Vec<Expr>> {
    match expr {
        Expr::Array(a) => Some(a.elems.iter().cloned().collect()),
        _ => None,
    }
}

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

/// The last path segment's name and its generic arguments, of a path type.
fn path_tail(ty: &Type) -> Option<(&Ident, &PathArguments)> {
    match ty {
        Type::Path(p) if p.qself.is_none() => {
            p.path.segments.last().map(|s| (&s.ident, &s.arguments))
        }
        Type::Group(g) => path_tail(&g.elem),
        Type::Paren(p) => path_tail(&p.elem),
        _ => None,
    }
}

fn is_named(ty: &Type, name: &str) -> bool {
    path_tail(ty).is_some_and(|(ident, args)| ident == name && args.is_none())
}

/// `&Name` (or `&mut Name` when `mutable`).
fn is_ref_to(ty: &Type, name: &str, mutable: bool) -> bool {
    match ty {
        Type::Reference(r) => r.mutability.is_some() == mutable && is_named(&r.elem, name),
        _ => false,
    }
}

/// Tokens as an author writes them (`&Params`, `Vec<u16>`), not as a token stream prints
/// them (`& Params`, `Vec < u16 >`), for messages.
pub(crate) fn code<T: ToTokens>(tokens: &T) -> String {
    let mut text = tokens.to_token_stream().to_string();
    for (from, to) in [
        (" < ", "<"),
        (" <", "<"),
        ("< ", "<"),
        (" >", ">"),
        (" :: ", "::"),
        (":: ", "::"),
        (" ,", ","),
        ("& ", "&"),
        ("( ", "("),
        (" )", ")"),
        ("[ ", "["),
        (" ]", "]"),
        (", - ", ", -"),
        ("(- ", "(-"),
        ("[- ", "[-"),
    ] {
        text = text.replace(from, to);
    }
    match text.strip_prefix("- ") {
        Some(rest) => format!("-{rest}"),
        None => text,
    }
}

fn describe_expected(name: &str, by_ref: bool) -> String {
    if by_ref {
        format!("&{name}")
    } else {
        name.to_owned()
    }
}

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

pub(crate) fn is_named_params(ty: &Type) -> bool {
    match ty {
        Type::Reference(r) => is_named(&r.elem, "Params"),
        other => is_named(other, "Params"),
    }
}

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

fn check_arg_types(
    cx: &mut Ctxt,
    f: &RoleFn,
    args: &[(Ident, Type)],
    elem: &str,
    by_ref: bool,
) -> bool {
    let mut ok = true;
    for (name, ty) in args {
        let good = if by_ref {
            is_ref_to(ty, elem, false)
        } else {
            is_named(ty, elem)
        };
        if !good {
            cx.error_spanned_by(
                ty,
                format!(
                    "input `{name}` of {} has type `{}`; expected `{}`",
                    f.role,
                    code(ty),
                    describe_expected(elem, by_ref)
                ),
            );
            ok = false;
        }
    }
    ok
}

/// `Result<T, OpError>` -> `T`.
pub(crate) fn result_ok_type(ty: &Type) -> Option<&Type> {
    let (ident, args) = path_tail(ty)?;
    if ident != "Result" {
        return None;
    }
    let PathArguments::AngleBracketed(args) = args else {
        return None;
    };
    let mut types = args.args.iter().filter_map(|a| match a {
        GenericArgument::Type(t) => Some(t),
        _ => None,
    });
    let ok = types.next()?;
    match types.next() {
        Some(err) if !is_named(err, "OpError") => None,
        _ => Some(ok),
    }
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

/// #[infer_shape], #[infer_dtype] and #[reference]: inputs of one type, then `&Params`.
/// Returns the function, its inputs, and its number of outputs (when its return type is good).
fn check_io_fn(
    cx: &mut Ctxt,
    f: &RoleFn,
    inputs: Option<&[Ident]>,
    elem: &str,
    by_ref: bool,
) -> Option<(FnModel, Vec<Ident>, Option<usize>)> {
    let plain = check_plain_fn(cx, f);
    let mut args = typed_args(cx, &f.item)?;
    let takes_params = split_params(cx, f, &mut args);
    let types_ok = check_arg_types(cx, f, &args, elem, by_ref);
    let names_ok = match inputs {
        Some(inputs) => check_input_names(cx, f, &args, inputs),
        None => true,
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
    let inputs = args.into_iter().map(|(n, _)| n).collect();
    (plain && types_ok && names_ok).then(|| {
        (
            FnModel {
                ident: f.item.sig.ident.clone(),
                takes_params,
                ret_span: ret_span(&f.item),
            },
            inputs,
            arity,
        )
    })
}

/// #[kernel]: `&mut Kernel`, inputs then outputs as `&Global`, then `&Params`.
fn check_kernel(
    cx: &mut Ctxt,
    f: &RoleFn,
    inputs: Option<&[Ident]>,
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
    ok &= check_arg_types(cx, f, &args, "Global", true);
    if let (Some(inputs), Some(outputs)) = (inputs, outputs) {
        let io: Vec<Ident> = inputs.iter().chain(outputs).cloned().collect();
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

fn returns_unit_result(output: &ReturnType) -> bool {
    let ReturnType::Type(_, ty) = output else {
        return false;
    };
    matches!(result_ok_type(ty), Some(Type::Tuple(t)) if t.elems.is_empty())
}

fn ret_span(item: &ItemFn) -> Span {
    match &item.sig.output {
        ReturnType::Type(_, ty) => ty.span(),
        ReturnType::Default => item.sig.ident.span(),
    }
}

/// #[estimator] and #[properties]: fixed argument types and return type.
fn check_fixed(cx: &mut Ctxt, f: &RoleFn, arg_types: &[&str], ret: &str) -> Option<FnModel> {
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

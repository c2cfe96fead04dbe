//! Checking a registration: its arguments and its function's signature.

use quote::ToTokens;
use syn::{FnArg, ItemFn, LitStr, ReturnType, Type};

use super::Kind;
use super::attr::RegistrationArgs;
use crate::ctxt::Ctxt;

/// A registration known to be good: what `expand` prints.
pub struct Registration {
    /// Estimator or properties.
    pub kind: Kind,
    /// The op's name.
    pub op: LitStr,
    /// The device, for a device-specific estimator.
    pub device: Option<LitStr>,
    /// `override` was given.
    pub overrides: bool,
    /// `default` was given: a framework default, not a user registration.
    pub default: bool,
}

/// Checks the arguments and the signature; records every problem in `cx`.
pub fn check(
    cx: &mut Ctxt,
    kind: Kind,
    args: RegistrationArgs,
    function: &ItemFn,
) -> Option<Registration> {
    let op = match args.op {
        Some(op) if op.value().trim().is_empty() => {
            cx.error_spanned_by(&op, "the op's name is empty; write `op = \"domain.op\"`");
            None
        }
        Some(op) => Some(op),
        None => {
            cx.error_at(
                args.span,
                format!(
                    "#[{}] needs the op it is for: `#[{}(op = \"domain.op\")]`",
                    kind.attribute(),
                    kind.attribute()
                ),
            );
            None
        }
    };
    if let Some(device) = &args.device
        && device.value().trim().is_empty()
    {
        cx.error_spanned_by(
            device,
            "the device's name is empty; leave `device` out to register for every device",
        );
    }
    check_signature(cx, kind, function);
    Some(Registration {
        kind,
        op: op?,
        device: args.device,
        overrides: args.overrides.is_some(),
        default: args.default.is_some(),
    })
}

/// The function must be a plain `fn` with the kind's parameters and return type.
fn check_signature(cx: &mut Ctxt, kind: Kind, function: &ItemFn) {
    let sig = &function.sig;
    if let Some(token) = &sig.asyncness {
        cx.error_spanned_by(token, "an estimator cannot be `async`");
    }
    if !sig.generics.params.is_empty() {
        cx.error_spanned_by(&sig.generics, "an estimator cannot be generic");
    }
    let expected: &[&str] = match kind {
        Kind::Estimator => &["OpInvokeInfo", "DeviceProfile"],
        Kind::Properties => &["OpInvokeInfo"],
    };
    if sig.inputs.len() != expected.len() {
        cx.error_spanned_by(
            &sig.inputs,
            format!(
                "#[{}] takes {} parameter(s), got {}: the signature is `{}`",
                kind.attribute(),
                expected.len(),
                sig.inputs.len(),
                kind.signature()
            ),
        );
    } else {
        for (input, want) in sig.inputs.iter().zip(expected) {
            // Point at the type when there is one: that is the token to change.
            let (ok, offending): (bool, &dyn ToTokens) = match input {
                FnArg::Typed(pattern) => match &*pattern.ty {
                    Type::Reference(reference) => (
                        reference.mutability.is_none() && names(&reference.elem, want),
                        &pattern.ty,
                    ),
                    _ => (false, &pattern.ty),
                },
                FnArg::Receiver(receiver) => (false, receiver),
            };
            if !ok {
                cx.error_spanned_by(
                    offending,
                    format!(
                        "expected `&{want}` here: the signature of #[{}] is `{}`",
                        kind.attribute(),
                        kind.signature()
                    ),
                );
            }
        }
    }
    let returns = match kind {
        Kind::Estimator => "Estimate",
        Kind::Properties => "PerformanceProperties",
    };
    match &sig.output {
        ReturnType::Type(_, ty) if names(ty, returns) => {}
        ReturnType::Type(_, ty) => cx.error_spanned_by(
            ty,
            format!(
                "expected `{returns}`: the signature of #[{}] is `{}`",
                kind.attribute(),
                kind.signature()
            ),
        ),
        ReturnType::Default => cx.error_spanned_by(
            sig,
            format!(
                "missing return type `-> {returns}`: the signature of #[{}] is `{}`",
                kind.attribute(),
                kind.signature()
            ),
        ),
    }
}

/// True when `ty` is a path whose last segment is `name` (`Estimate`, `pto_op::Estimate`).
fn names(ty: &Type, name: &str) -> bool {
    match ty {
        Type::Path(path) => path
            .path
            .segments
            .last()
            .is_some_and(|segment| segment.ident == name && segment.arguments.is_none()),
        Type::Paren(inner) => names(&inner.elem, name),
        Type::Group(inner) => names(&inner.elem, name),
        _ => false,
    }
}

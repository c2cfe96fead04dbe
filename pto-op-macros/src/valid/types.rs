//! Reading the types an author writes (`&Shape`, `Result<T, OpError>`), and printing them
//! back in messages.

use quote::ToTokens;
use syn::{GenericArgument, Ident, PathArguments, Type};

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

/// A path type whose last segment is `name`, without generic arguments.
pub(crate) fn is_named(ty: &Type, name: &str) -> bool {
    path_tail(ty).is_some_and(|(ident, args)| ident == name && args.is_none())
}

/// `Option<T>` -> `T`.
pub(crate) fn option_inner(ty: &Type) -> Option<&Type> {
    let (ident, args) = path_tail(ty)?;
    if ident != "Option" {
        return None;
    }
    let PathArguments::AngleBracketed(args) = args else {
        return None;
    };
    match args.args.iter().collect::<Vec<_>>().as_slice() {
        [GenericArgument::Type(inner)] => Some(inner),
        _ => None,
    }
}

/// `&Name` (or `&mut Name` when `mutable`).
pub(crate) fn is_ref_to(ty: &Type, name: &str, mutable: bool) -> bool {
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

/// `Name` or `&Name`, for messages.
pub(crate) fn describe_expected(name: &str, by_ref: bool) -> String {
    if by_ref {
        format!("&{name}")
    } else {
        name.to_owned()
    }
}

/// `Params` or a reference to it.
pub(crate) fn is_named_params(ty: &Type) -> bool {
    match ty {
        Type::Reference(r) => is_named(&r.elem, "Params"),
        other => is_named(other, "Params"),
    }
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

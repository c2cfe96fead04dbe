//! Param declarations, and the literals a description writes: defaults and parity values.

use syn::{Expr, ExprLit, ExprUnary, Lit, UnOp};

use super::types::code;
use crate::attr::ParamDecl;
use crate::ctxt::Ctxt;
use crate::model::{DefaultValue, Param, ParamKind};

/// Checks `params(...)`: each name once, a supported type, a default that is a literal of it.
pub(crate) fn check_params(cx: &mut Ctxt, decls: &[ParamDecl]) -> Option<Vec<Param>> {
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

/// A literal (a default, a parity case's value) as a value of a param of `kind`; `None` when
/// it is not one (wrong kind, out of range).
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

/// A float or unsuffixed integer literal, possibly negated, as an `f64`.
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

/// An integer literal (unsuffixed, `i32` or `i64`), possibly negated, that fits an `i64`.
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

/// The elements of an array expression `[a, b]`.
fn array_elems(expr: &Expr) -> Option<Vec<Expr>> {
    match expr {
        Expr::Array(a) => Some(a.elems.iter().cloned().collect()),
        _ => None,
    }
}

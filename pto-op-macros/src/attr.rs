//! Parsing the arguments of `#[custom_op(...)]`.
//!
//! Syntax errors stop parsing (there is no sensible way past them); anything that parses
//! but is wrong (an unknown key, a key given twice) is recorded and parsing goes on, so one
//! build reports every such mistake.

use proc_macro2::{Span, TokenStream};
use syn::parse::{ParseStream, Parser};
use syn::punctuated::Punctuated;
use syn::{Attribute, Expr, Ident, LitInt, LitStr, Token, Type};

use crate::ctxt::Ctxt;

/// The keys `#[custom_op(...)]` accepts.
const KEYS: &str = "name, version, params, outputs, tolerance";

/// `#[custom_op(...)]`, as written.
#[derive(Default)]
pub struct OpArgs {
    /// `name = "..."`.
    pub name: Option<LitStr>,
    /// `version = N`.
    pub version: Option<LitInt>,
    /// `params(...)`.
    pub params: Vec<ParamDecl>,
    /// `outputs(...)`, with the span of the `outputs` keyword.
    pub outputs: Option<(Ident, Vec<Ident>)>,
    /// `tolerance(f16 = (rtol, atol), ..)`.
    pub tolerances: Vec<ToleranceDecl>,
}

/// One `dtype = (rtol, atol)` in `tolerance(...)`.
pub struct ToleranceDecl {
    /// The dtype's name, as written.
    pub dtype: Ident,
    /// `(rtol, atol)`, as written.
    pub value: Expr,
}

/// One `#[parity(...)]` on the kernel: a case, as written.
pub struct ParityAttr {
    /// The attribute, for errors about the case as a whole.
    pub attr: Attribute,
    /// Its entries, in order.
    pub entries: Vec<ParityEntry>,
}

/// One `name = value` in `#[parity(...)]`.
pub struct ParityEntry {
    /// An input, a param, or `seed`, `rtol`, `atol`.
    pub name: Ident,
    /// What follows the `=`.
    pub value: ParityValue,
}

/// The value of a parity entry.
pub enum ParityValue {
    /// `f16[4, 64]`: an input's dtype and dims, and `in -1.5..1.5`, the range of its values,
    /// when given.
    Tensor {
        /// The dtype's name, as written.
        dtype: Ident,
        /// The dims, as written; empty for a scalar.
        dims: Vec<LitInt>,
        /// What follows `in`, as written.
        range: Option<Expr>,
    },
    /// A literal: a param's value, a seed, a tolerance.
    Expr(Expr),
}

/// One `name: Type = default` in `params(...)`.
pub struct ParamDecl {
    /// The param's name.
    pub name: Ident,
    /// Its type, as written.
    pub ty: Type,
    /// Its default, as written.
    pub default: Option<Expr>,
}

impl OpArgs {
    /// Parses the attribute's arguments, recording problems in `cx`.
    pub fn parse(cx: &mut Ctxt, args: TokenStream) -> OpArgs {
        let mut parsed = OpArgs::default();
        let parser = |input: ParseStream| parse_args(cx, &mut parsed, input);
        if let Err(e) = parser.parse2(args) {
            cx.syn_error(e);
        }
        parsed
    }
}

fn parse_args(cx: &mut Ctxt, out: &mut OpArgs, input: ParseStream) -> syn::Result<()> {
    let mut seen: Vec<Ident> = Vec::new();
    while !input.is_empty() {
        let key: Ident = input.parse()?;
        if seen.contains(&key) {
            cx.error_spanned_by(&key, format!("`{key}` is given twice in #[custom_op]"));
        }
        seen.push(key.clone());
        match key.to_string().as_str() {
            "name" => {
                input.parse::<Token![=]>()?;
                out.name = Some(input.parse()?);
            }
            "version" => {
                input.parse::<Token![=]>()?;
                out.version = Some(input.parse()?);
            }
            "params" => {
                let content;
                syn::parenthesized!(content in input);
                let decls = Punctuated::<ParamDecl, Token![,]>::parse_terminated_with(
                    &content,
                    parse_param,
                )?;
                out.params = decls.into_iter().collect();
            }
            "outputs" => {
                let content;
                syn::parenthesized!(content in input);
                let names = Punctuated::<Ident, Token![,]>::parse_terminated(&content)?;
                out.outputs = Some((key.clone(), names.into_iter().collect()));
            }
            "tolerance" => {
                let content;
                syn::parenthesized!(content in input);
                let decls = Punctuated::<ToleranceDecl, Token![,]>::parse_terminated_with(
                    &content,
                    |input: ParseStream| {
                        let dtype = input.parse()?;
                        input.parse::<Token![=]>()?;
                        Ok(ToleranceDecl {
                            dtype,
                            value: input.parse()?,
                        })
                    },
                )?;
                out.tolerances = decls.into_iter().collect();
            }
            _ => {
                cx.error_spanned_by(
                    &key,
                    format!("unknown key `{key}` in #[custom_op]; expected one of: {KEYS}"),
                );
                skip_value(input)?;
            }
        }
        if input.is_empty() {
            break;
        }
        input.parse::<Token![,]>()?;
    }
    Ok(())
}

fn parse_param(input: ParseStream) -> syn::Result<ParamDecl> {
    let name: Ident = input.parse()?;
    input.parse::<Token![:]>()?;
    let ty: Type = input.parse()?;
    let default = if input.peek(Token![=]) {
        input.parse::<Token![=]>()?;
        Some(input.parse()?)
    } else {
        None
    };
    Ok(ParamDecl { name, ty, default })
}

impl ParityAttr {
    /// Parses `#[parity(name = value, ..)]`; a syntax error is recorded and yields `None`.
    pub fn parse(cx: &mut Ctxt, attr: Attribute) -> Option<ParityAttr> {
        let parsed = attr.parse_args_with(|input: ParseStream| {
            Punctuated::<ParityEntry, Token![,]>::parse_terminated_with(input, parse_parity_entry)
        });
        match parsed {
            Ok(entries) => Some(ParityAttr {
                attr,
                entries: entries.into_iter().collect(),
            }),
            Err(e) => {
                cx.syn_error(e);
                None
            }
        }
    }
}

fn parse_parity_entry(input: ParseStream) -> syn::Result<ParityEntry> {
    let name: Ident = input.parse()?;
    input.parse::<Token![=]>()?;
    // `f16[4, 64]` is not an expression (the index holds a comma), so it is read by hand.
    let value = if input.peek(Ident) && input.peek2(syn::token::Bracket) {
        let dtype = input.parse()?;
        let content;
        syn::bracketed!(content in input);
        let dims = Punctuated::<LitInt, Token![,]>::parse_terminated(&content)?;
        let range = if input.peek(Token![in]) {
            input.parse::<Token![in]>()?;
            Some(input.parse()?)
        } else {
            None
        };
        ParityValue::Tensor {
            dtype,
            dims: dims.into_iter().collect(),
            range,
        }
    } else {
        ParityValue::Expr(input.parse()?)
    };
    Ok(ParityEntry { name, value })
}

/// Skips what follows an unknown key (`= value` or `(...)`), so the keys after it are
/// still checked.
fn skip_value(input: ParseStream) -> syn::Result<()> {
    if input.peek(Token![=]) {
        input.parse::<Token![=]>()?;
        input.parse::<Expr>()?;
    } else if input.peek(syn::token::Paren) {
        let content;
        syn::parenthesized!(content in input);
        content.parse::<TokenStream>()?;
    }
    Ok(())
}

/// A span for errors about the attribute as a whole (a key that is missing).
pub fn attribute_span() -> Span {
    Span::call_site()
}

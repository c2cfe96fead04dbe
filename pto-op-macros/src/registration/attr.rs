//! Parsing the arguments of `#[op_estimator(...)]` and `#[op_properties(...)]`.
//!
//! `op = "..."` and `device = "..."` take a string; `override` and `default` are flags.
//! An unknown or repeated key is recorded and parsing goes on.

use proc_macro2::{Span, TokenStream};
use syn::ext::IdentExt;
use syn::parse::{ParseStream, Parser};
use syn::{Ident, LitStr, Token};

use super::Kind;
use crate::ctxt::Ctxt;

/// The arguments as written.
pub struct RegistrationArgs {
    /// `op = "..."`.
    pub op: Option<LitStr>,
    /// `device = "..."` (estimators only).
    pub device: Option<LitStr>,
    /// `override`, with its token.
    pub overrides: Option<Ident>,
    /// `default`, with its token.
    pub default: Option<Ident>,
    /// Where the attribute is, for errors about a missing key.
    pub span: Span,
}

impl RegistrationArgs {
    /// Parses the arguments, recording problems in `cx`.
    pub fn parse(cx: &mut Ctxt, kind: Kind, tokens: TokenStream) -> RegistrationArgs {
        let mut args = RegistrationArgs {
            op: None,
            device: None,
            overrides: None,
            default: None,
            span: Span::call_site(),
        };
        let parser = |input: ParseStream| -> syn::Result<()> {
            while !input.is_empty() {
                // `override` is a reserved word: read keys as any identifier.
                let key = Ident::parse_any(input)?;
                let value = if input.peek(Token![=]) {
                    input.parse::<Token![=]>()?;
                    Some(input.parse::<LitStr>()?)
                } else {
                    None
                };
                args.record(cx, kind, key, value);
                if input.is_empty() {
                    break;
                }
                input.parse::<Token![,]>()?;
            }
            Ok(())
        };
        if let Err(error) = parser.parse2(tokens) {
            cx.syn_error(error);
        }
        args
    }

    fn record(&mut self, cx: &mut Ctxt, kind: Kind, key: Ident, value: Option<LitStr>) {
        let name = key.to_string();
        let keys = match kind {
            Kind::Estimator => "op, device, override, default",
            Kind::Properties => "op, override, default",
        };
        let (slot_string, slot_flag) = match (name.as_str(), kind) {
            ("op", _) => (Some(&mut self.op), None),
            ("device", Kind::Estimator) => (Some(&mut self.device), None),
            ("override", _) => (None, Some(&mut self.overrides)),
            ("default", _) => (None, Some(&mut self.default)),
            ("device", Kind::Properties) => {
                cx.error_spanned_by(
                    &key,
                    "`device` is not a key of #[op_properties]: properties (compute and bytes) \
                     do not depend on the device; write a device-specific #[op_estimator] instead",
                );
                return;
            }
            _ => {
                cx.error_spanned_by(
                    &key,
                    format!(
                        "unknown key `{name}` of #[{}]; expected one of: {keys}",
                        kind.attribute()
                    ),
                );
                return;
            }
        };
        if let Some(slot) = slot_string {
            match value {
                None => cx
                    .error_spanned_by(&key, format!("`{name}` takes a string: `{name} = \"...\"`")),
                Some(_) if slot.is_some() => {
                    cx.error_spanned_by(&key, format!("`{name}` is given twice"));
                }
                Some(value) => *slot = Some(value),
            }
        } else if let Some(slot) = slot_flag {
            if let Some(value) = value {
                cx.error_spanned_by(
                    &value,
                    format!("`{name}` is a flag and takes no value: write `{name}` alone"),
                );
            } else if slot.is_some() {
                cx.error_spanned_by(&key, format!("`{name}` is given twice"));
            } else {
                *slot = Some(key);
            }
        }
    }
}

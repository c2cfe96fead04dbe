//! `#[op_estimator(...)]` and `#[op_properties(...)]`: an estimator or a properties function
//! written outside an op's module, for any op, registered at link time.
//!
//! Same three steps as `#[custom_op]`: parse the arguments (`attr.rs`), check them and the
//! function's signature into a model (`valid.rs`), print the registration (`expand.rs`).
//! Every error is reported at once, beside the function itself, so the crate keeps
//! compiling around it.

mod attr;
mod expand;
mod valid;

use proc_macro2::TokenStream;
use quote::quote;

use crate::ctxt::Ctxt;

/// Which of the two levels a registration is.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// `#[op_estimator]`: `fn(&OpInvokeInfo, &DeviceProfile) -> Estimate`.
    Estimator,
    /// `#[op_properties]`: `fn(&OpInvokeInfo) -> PerformanceProperties`.
    Properties,
}

impl Kind {
    /// The attribute's name, for messages.
    fn attribute(self) -> &'static str {
        match self {
            Kind::Estimator => "op_estimator",
            Kind::Properties => "op_properties",
        }
    }

    /// The signature the function must have, for messages.
    fn signature(self) -> &'static str {
        match self {
            Kind::Estimator => "fn(info: &OpInvokeInfo, device: &DeviceProfile) -> Estimate",
            Kind::Properties => "fn(info: &OpInvokeInfo) -> PerformanceProperties",
        }
    }
}

/// The whole of `#[op_estimator]` or `#[op_properties]`, on `proc_macro2` tokens.
pub fn registration(kind: Kind, args: TokenStream, item: TokenStream) -> TokenStream {
    let mut cx = Ctxt::default();
    let Ok(function) = syn::parse2::<syn::ItemFn>(item.clone()) else {
        cx.error_spanned_by(
            &item,
            format!(
                "#[{}] goes on a function `{}`",
                kind.attribute(),
                kind.signature()
            ),
        );
        let errors = cx.into_compile_errors();
        return quote!(#errors #item);
    };
    let args = attr::RegistrationArgs::parse(&mut cx, kind, args);
    match valid::check(&mut cx, kind, args, &function) {
        Some(model) if cx.is_ok() => expand::expand(&model, &function),
        _ => {
            let errors = cx.into_compile_errors();
            quote!(#errors #function)
        }
    }
}

#[cfg(test)]
mod tests;

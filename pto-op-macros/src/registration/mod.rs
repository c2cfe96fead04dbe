//! `#[op_estimator(...)]` and `#[op_properties(...)]`: an estimator or a properties function
//! written outside an op's module, for any op, registered at link time.
//!
//! Same three steps as `#[custom_op]`: parse the arguments (`attr.rs`), check them and the
//! function's signature into a model (`valid.rs`), print the registration (`expand.rs`);
//! `kind.rs` says which of the two macros it is. Every error is reported at once, beside
//! the function itself, so the crate keeps compiling around it.

mod attr;
mod expand;
mod kind;
mod valid;

use proc_macro2::TokenStream;
use quote::quote;

use crate::ctxt::Ctxt;

pub use kind::Kind;

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

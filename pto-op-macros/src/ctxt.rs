//! Error collection: every problem of a description is reported in one build.

use proc_macro2::TokenStream;
use quote::ToTokens;

/// Collects errors while an op description is parsed and checked.
#[derive(Default)]
pub struct Ctxt {
    errors: Vec<syn::Error>,
}

impl Ctxt {
    /// Records an error spanned on `tokens`.
    pub fn error_spanned_by<T: ToTokens, M: core::fmt::Display>(&mut self, tokens: T, message: M) {
        self.errors
            .push(syn::Error::new_spanned(tokens.into_token_stream(), message));
    }

    /// Records an error at `span`.
    pub fn error_at<M: core::fmt::Display>(&mut self, span: proc_macro2::Span, message: M) {
        self.errors.push(syn::Error::new(span, message));
    }

    /// Records a parse error.
    pub fn syn_error(&mut self, error: syn::Error) {
        self.errors.push(error);
    }

    /// True when nothing was recorded.
    pub fn is_ok(&self) -> bool {
        self.errors.is_empty()
    }

    /// Every recorded error as `compile_error!` invocations.
    pub fn into_compile_errors(self) -> TokenStream {
        self.errors
            .iter()
            .map(syn::Error::to_compile_error)
            .collect()
    }
}

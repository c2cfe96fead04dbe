//! Procedural macros of pto-op. Use them through `pto_op::prelude`, not this crate.
//!
//! `#[custom_op]` works in three steps: parse the attribute and the module (`attr.rs`,
//! `ast.rs`), check them and build a model (`valid/`, one file per kind of check; the model
//! is `model.rs`), print the model (`expand.rs`).
//! Errors are collected (`ctxt.rs`) and all reported at once, beside
//! the module itself (`fallback.rs`).

mod ast;
mod attr;
mod ctxt;
mod expand;
mod fallback;
mod model;
mod registration;
mod valid;

use proc_macro::TokenStream;
use proc_macro2::TokenStream as TokenStream2;
use quote::quote;

/// Describes an operator with an inline module. See the `pto_op` crate docs and the guide.
///
/// ```ignore
/// #[custom_op(name = "demo.rms_norm", params(eps: f32 = 1e-6))]
/// pub mod rms_norm { /* #[infer_shape], #[infer_dtype], #[reference], ... */ }
/// ```
#[proc_macro_attribute]
pub fn custom_op(args: TokenStream, item: TokenStream) -> TokenStream {
    custom_op_impl(args.into(), item.into()).into()
}

/// The whole of `#[custom_op]`, on `proc_macro2` tokens so it can be unit-tested.
fn custom_op_impl(args: TokenStream2, item: TokenStream2) -> TokenStream2 {
    let mut cx = ctxt::Ctxt::default();
    let module = match syn::parse2::<syn::ItemMod>(item.clone()) {
        Ok(module) => module,
        Err(_) => {
            cx.error_spanned_by(
                &item,
                "#[custom_op] goes on an inline module: `#[custom_op(name = \"..\")] pub mod my_op { .. }`",
            );
            let errors = cx.into_compile_errors();
            return quote!(#errors #item);
        }
    };
    let args = attr::OpArgs::parse(&mut cx, args);
    if module.content.is_none() {
        cx.error_spanned_by(
            &module.ident,
            format!(
                "#[custom_op] needs the op's module inline, `mod {} {{ .. }}`: the macro reads \
                 its functions, and cannot see into another file",
                module.ident
            ),
        );
    }
    let Some(op) = ast::OpModule::parse(&mut cx, module.clone()) else {
        let errors = cx.into_compile_errors();
        return quote!(#errors #module);
    };
    let stripped = op.module.clone();
    let surface = fallback::Surface::of(&args, &op);
    match valid::check(&mut cx, &args, op) {
        Some(model) if cx.is_ok() => expand::expand(&model),
        _ => {
            let module = fallback::fallback(&stripped, &args, &surface);
            let errors = cx.into_compile_errors();
            quote!(#errors #module)
        }
    }
}

/// Registers a direct time estimate for an op, written anywhere (any crate), for any op.
///
/// ```ignore
/// #[op_estimator(op = "demo.rms_norm", device = "kirin9030", override)]
/// fn rms_norm_on_kirin(info: &OpInvokeInfo, device: &DeviceProfile) -> Estimate { .. }
/// ```
///
/// Keys: `op` (required), `device` (a profile name; without it, every device), `override`
/// (replaces another registration of the same op, device and level), `default` (a framework
/// default, below every user registration).
#[proc_macro_attribute]
pub fn op_estimator(args: TokenStream, item: TokenStream) -> TokenStream {
    registration::registration(registration::Kind::Estimator, args.into(), item.into()).into()
}

/// Registers the compute and memory properties of an op, written anywhere, for any op.
///
/// ```ignore
/// #[op_properties(op = "std.gelu")]
/// fn gelu(info: &OpInvokeInfo) -> PerformanceProperties { .. }
/// ```
///
/// Keys: `op` (required), `override`, `default`, as for `#[op_estimator]`.
#[proc_macro_attribute]
pub fn op_properties(args: TokenStream, item: TokenStream) -> TokenStream {
    registration::registration(registration::Kind::Properties, args.into(), item.into()).into()
}

/// Declares a helper attribute that is only meaningful inside a `#[custom_op]` module, where
/// `#[custom_op]` consumes it. Anywhere else it is an error that says so.
macro_rules! helper_attribute {
    ($($name:ident: $what:literal,)*) => {$(
        #[doc = concat!("Marks ", $what, " inside a `#[custom_op]` module.")]
        #[proc_macro_attribute]
        pub fn $name(_args: TokenStream, item: TokenStream) -> TokenStream {
            let item = TokenStream2::from(item);
            let message = concat!(
                "#[", stringify!($name), "] is only meaningful inside a #[custom_op] module"
            );
            let error = syn::Error::new(proc_macro2::Span::call_site(), message).to_compile_error();
            quote!(#error #item).into()
        }
    )*};
}

helper_attribute! {
    infer_shape: "the function that computes output shapes from input shapes",
    infer_dtype: "the function that computes output dtypes from input dtypes",
    reference: "the CPU reference implementation",
    kernel: "the kernel, written in the tile language",
    estimator: "a direct time estimate",
    properties: "the compute and memory properties for the roofline",
    parity: "a case that compares the kernel with the reference, on the `#[kernel]` function \
             (`#[parity(x = f16[4, 64], eps = 1e-5, seed = 7)]`)",
}

#[cfg(test)]
mod tests;

//! Printing a checked registration: the function, and its entry in the linkme slice.

use proc_macro2::TokenStream;
use quote::quote;
use syn::ItemFn;

use super::Kind;
use super::valid::Registration;

/// The function as written, and a static in `ESTIMATORS` or `PROPERTIES` that names it.
pub fn expand(model: &Registration, function: &ItemFn) -> TokenStream {
    let private = quote!(::pto_op::__private);
    let op = &model.op;
    let overrides = model.overrides;
    let level = if model.default {
        quote!(#private::Level::Default)
    } else {
        quote!(#private::Level::User)
    };
    let name = &function.sig.ident;
    let source = quote! {
        #private::SourceLocation {
            module_path: ::core::module_path!(),
            file: ::core::file!(),
            line: ::core::line!(),
        }
    };
    let entry = match model.kind {
        Kind::Estimator => {
            let device = match &model.device {
                Some(device) => quote!(::core::option::Option::Some(#device)),
                None => quote!(::core::option::Option::None),
            };
            quote! {
                #[#private::linkme::distributed_slice(#private::ESTIMATORS)]
                #[linkme(crate = #private::linkme)]
                static REGISTRATION: #private::EstimatorRegistration =
                    #private::EstimatorRegistration {
                        op: #op,
                        device: #device,
                        level: #level,
                        overrides: #overrides,
                        source: #source,
                        estimate: #name,
                    };
            }
        }
        Kind::Properties => quote! {
            #[#private::linkme::distributed_slice(#private::PROPERTIES)]
            #[linkme(crate = #private::linkme)]
            static REGISTRATION: #private::PropertiesRegistration =
                #private::PropertiesRegistration {
                    op: #op,
                    level: #level,
                    overrides: #overrides,
                    source: #source,
                    properties: #name,
                };
        },
    };
    quote! {
        #function
        const _: () = {
            #entry
        };
    }
}

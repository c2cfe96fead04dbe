//! What is emitted when a description has errors: the errors, and the module itself with
//! helper attributes stripped and a best-effort `Params`, so the rest of the crate (and the
//! IDE) keeps working and the author sees only the real mistakes, not their echoes.

use proc_macro2::TokenStream;
use quote::quote;
use syn::ItemMod;

use crate::attr::ParamDecl;

/// The module as written, minus helper attributes, plus `Params` with the declared fields.
pub fn fallback(module: &ItemMod, params: &[ParamDecl]) -> TokenStream {
    let attrs = &module.attrs;
    let vis = &module.vis;
    let ident = &module.ident;
    let Some((_, items)) = &module.content else {
        return quote!(#module);
    };
    // A param declared twice is already reported; one field keeps rustc from repeating it.
    let mut seen: Vec<&syn::Ident> = Vec::new();
    let unique = params.iter().filter(|p| {
        let new = !seen.contains(&&p.name);
        seen.push(&p.name);
        new
    });
    let fields = unique.map(|p| {
        let (name, ty) = (&p.name, &p.ty);
        quote!(pub #name: #ty)
    });
    quote! {
        #(#attrs)*
        #[allow(dead_code, unused_imports, unused_variables)]
        #vis mod #ident {
            #(#items)*

            /// The params of this op (its description has errors; see them above).
            pub struct Params {
                #(#fields,)*
            }
        }
    }
}

//! What is emitted when a description has errors: the errors, and the module itself with
//! helper attributes stripped and the whole generated surface (`NAME`, `Params`, `def`,
//! `run`, `apply`) with the signatures the description asks for, so the rest of the crate
//! (and the IDE) keeps working and the author sees only the real mistakes, not their echoes.
//!
//! The bodies of the generated functions panic: they can never run, because the
//! `compile_error!`s emitted beside them stop the crate from building.

use proc_macro2::{Span, TokenStream};
use quote::quote;
use syn::{FnArg, Ident, ItemMod, ReturnType, Type};

use crate::ast::{OpModule, Role};
use crate::attr::OpArgs;
use crate::valid::{is_named_params, result_ok_type};

/// The shape of the generated surface, guessed from a description that has errors.
pub struct Surface {
    name: String,
    /// One per input: whether it is declared `Option<..>`.
    inputs: Vec<bool>,
    outputs: usize,
}

impl Surface {
    /// What the description says, as far as it can be read: the op's name, its number of
    /// inputs (from #[infer_shape], else #[infer_dtype], else #[reference]: the function
    /// that declares them) and of outputs (`outputs(...)`, else the tuple that function
    /// returns). One input and one output where nothing says.
    pub fn of(args: &OpArgs, op: &OpModule) -> Surface {
        let declaring = [Role::InferShape, Role::InferDtype, Role::Reference]
            .into_iter()
            .find_map(|role| op.role_fns.iter().find(|f| f.role == role));
        let inputs = declaring.map_or(vec![false], |f| {
            f.item
                .sig
                .inputs
                .iter()
                .filter_map(|arg| match arg {
                    FnArg::Typed(t) if !is_named_params(&t.ty) => Some(is_option(&t.ty)),
                    _ => None,
                })
                .collect()
        });
        let outputs = match &args.outputs {
            Some((_, names)) if !names.is_empty() => names.len(),
            _ => declaring.map_or(1, |f| returned_count(&f.item.sig.output)),
        };
        Surface {
            name: args.name.as_ref().map(|n| n.value()).unwrap_or_default(),
            inputs,
            outputs,
        }
    }
}

/// `Option<..>`: an optional input.
fn is_option(ty: &Type) -> bool {
    matches!(ty, Type::Path(p) if p.path.segments.last().is_some_and(|s| s.ident == "Option"))
}

/// The number of outputs a `Result<(A, B, ..), OpError>` return type names; 1 for anything
/// else.
fn returned_count(output: &ReturnType) -> usize {
    match output {
        ReturnType::Type(_, ty) => match result_ok_type(ty) {
            Some(Type::Tuple(t)) if t.elems.len() >= 2 => t.elems.len(),
            _ => 1,
        },
        ReturnType::Default => 1,
    }
}

/// The module as written, minus helper attributes, plus the generated surface: every name
/// the module does not define itself (a clash is reported already).
pub fn fallback(module: &ItemMod, args: &OpArgs, surface: &Surface) -> TokenStream {
    let attrs = &module.attrs;
    let vis = &module.vis;
    let ident = &module.ident;
    let Some((_, items)) = &module.content else {
        return quote!(#module);
    };
    let defined: Vec<&Ident> = items.iter().filter_map(item_ident).collect();
    let free = |name: &str| !defined.iter().any(|d| *d == name);
    let op = &surface.name;
    let message = format!("the description of op `{op}` has errors: this crate does not compile");
    let never = quote!(::core::unreachable!("{}", #message));
    let name = free("NAME").then(|| {
        quote! {
            /// The op's registered name.
            pub const NAME: &str = #op;
        }
    });
    let params = free("Params").then(|| params_struct(args, &never));
    let def = free("def").then(|| {
        quote! {
            /// The op's description (its description has errors; see them above).
            pub fn def() -> &'static ::pto_op::OpDef {
                #never
            }
        }
    });
    let ins: Vec<Ident> = (0..surface.inputs.len())
        .map(|i| Ident::new(&format!("input{i}"), Span::mixed_site()))
        .collect();
    let typed = |ty: TokenStream| -> Vec<TokenStream> {
        surface
            .inputs
            .iter()
            .map(|optional| match optional {
                true => quote!(::core::option::Option<&#ty>),
                false => quote!(&#ty),
            })
            .collect()
    };
    let (tensors, values) = (
        typed(quote!(::pto_op::Tensor)),
        typed(quote!(::pto_op::Value)),
    );
    let outputs = |ty: TokenStream| {
        let tys = (0..surface.outputs).map(|_| &ty);
        if surface.outputs == 1 {
            ty.clone()
        } else {
            quote!((#(#tys),*))
        }
    };
    let p = Ident::new("params", Span::mixed_site());
    let run = free("run").then(|| {
        let executor = Ident::new("executor", Span::mixed_site());
        let ret = outputs(quote!(::pto_op::Tensor));
        quote! {
            /// Runs the op (its description has errors; see them above).
            pub fn run(
                #executor: &dyn ::pto_op::Executor,
                #(#ins: #tensors,)*
                #p: &Params,
            ) -> ::core::result::Result<#ret, ::pto_op::OpError> {
                #never
            }
        }
    });
    let apply = free("apply").then(|| {
        let ret = outputs(quote!(::pto_op::Value));
        quote! {
            /// Records a call of the op (its description has errors; see them above).
            pub fn apply(
                #(#ins: #values,)*
                #p: &Params,
            ) -> ::core::result::Result<#ret, ::pto_op::OpError> {
                #never
            }
        }
    });
    quote! {
        #(#attrs)*
        #[allow(dead_code, unused_imports, unused_variables, unreachable_code)]
        #vis mod #ident {
            #(#items)*

            #name
            #params
            #def
            #run
            #apply
        }
    }
}

/// `Params` with the declared fields, and every trait the real one implements, so that no
/// use of it adds an error of its own.
fn params_struct(args: &OpArgs, never: &TokenStream) -> TokenStream {
    // A param declared twice is already reported; one field keeps rustc from repeating it.
    let mut seen: Vec<&Ident> = Vec::new();
    let unique = args.params.iter().filter(|p| {
        let new = !seen.contains(&&p.name);
        seen.push(&p.name);
        new
    });
    let fields = unique.map(|p| {
        let (name, ty) = (&p.name, &p.ty);
        quote!(pub #name: #ty)
    });
    let serde = quote!(::pto_op::__private::serde);
    quote! {
        /// The params of this op (its description has errors; see them above).
        pub struct Params {
            #(#fields,)*
        }

        impl ::core::default::Default for Params {
            fn default() -> Self {
                #never
            }
        }

        impl ::core::fmt::Debug for Params {
            fn fmt(&self, _: &mut ::core::fmt::Formatter<'_>) -> ::core::fmt::Result {
                #never
            }
        }

        impl ::core::clone::Clone for Params {
            fn clone(&self) -> Self {
                #never
            }
        }

        impl ::core::cmp::PartialEq for Params {
            fn eq(&self, _: &Self) -> bool {
                #never
            }
        }

        impl #serde::Serialize for Params {
            fn serialize<S: #serde::Serializer>(
                &self,
                _: S,
            ) -> ::core::result::Result<S::Ok, S::Error> {
                #never
            }
        }

        impl<'de> #serde::Deserialize<'de> for Params {
            fn deserialize<D: #serde::Deserializer<'de>>(
                _: D,
            ) -> ::core::result::Result<Self, D::Error> {
                #never
            }
        }

        impl ::pto_op::OpParams for Params {
            const OP: &'static str = NAME;

            fn from_attributes(
                _: &::pto_op::Attributes,
            ) -> ::core::result::Result<Self, ::pto_op::OpError> {
                #never
            }

            fn to_attributes(&self) -> ::pto_op::Attributes {
                #never
            }
        }
    }
}

/// The name an item defines in the module, for the items that can clash with generated ones.
fn item_ident(item: &syn::Item) -> Option<&Ident> {
    Some(match item {
        syn::Item::Fn(i) => &i.sig.ident,
        syn::Item::Struct(i) => &i.ident,
        syn::Item::Enum(i) => &i.ident,
        syn::Item::Union(i) => &i.ident,
        syn::Item::Const(i) => &i.ident,
        syn::Item::Static(i) => &i.ident,
        syn::Item::Type(i) => &i.ident,
        syn::Item::Mod(i) => &i.ident,
        syn::Item::Trait(i) => &i.ident,
        _ => return None,
    })
}

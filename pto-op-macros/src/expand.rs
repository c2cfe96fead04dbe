//! Printing a checked model as tokens. Nothing here can fail: the model is known good.

use proc_macro2::{Literal, Span, TokenStream};
use quote::{format_ident, quote, quote_spanned};
use syn::Ident;

use crate::model::{CaseSeed, DefaultValue, FnModel, Model, ParamKind, ParityCase};

/// The expanded op module.
pub fn expand(model: &Model) -> TokenStream {
    let module = &model.module;
    let attrs = &module.attrs;
    let vis = &module.vis;
    let ident = &module.ident;
    let items = module
        .content
        .as_ref()
        .map(|(_, items)| items.as_slice())
        .unwrap_or_default();
    let name = &model.name;
    let params = params_struct(model);
    let op_def = op_def(model);
    let run = run_fn(model);
    let apply = apply_fn(model);
    let parity = parity_tests(model);
    quote! {
        #(#attrs)*
        #vis mod #ident {
            #(#items)*

            /// The op's registered name.
            pub const NAME: &str = #name;

            #params
            #op_def
            #run
            #apply
            #parity
        }
    }
}

fn param_type(kind: ParamKind) -> TokenStream {
    match kind {
        ParamKind::F32 => quote!(f32),
        ParamKind::F64 => quote!(f64),
        ParamKind::I32 => quote!(i32),
        ParamKind::I64 => quote!(i64),
        ParamKind::Bool => quote!(bool),
        ParamKind::String => quote!(::std::string::String),
        ParamKind::I64s => quote!(::std::vec::Vec<i64>),
        ParamKind::F32s => quote!(::std::vec::Vec<f32>),
    }
}

fn float_tokens(v: f64, kind: ParamKind) -> TokenStream {
    let lit = match kind {
        ParamKind::F64 => Literal::f64_suffixed(v.abs()),
        _ => Literal::f32_suffixed(v.abs() as f32),
    };
    if v.is_sign_negative() {
        quote!(-#lit)
    } else {
        quote!(#lit)
    }
}

fn int_tokens(v: i64, kind: ParamKind) -> TokenStream {
    let magnitude = v.unsigned_abs();
    let lit = match kind {
        // Range-checked in `valid.rs`.
        ParamKind::I32 => Literal::i32_suffixed(magnitude as i32),
        _ if v == i64::MIN => return quote!(::core::primitive::i64::MIN),
        _ => Literal::i64_suffixed(magnitude as i64),
    };
    if v < 0 { quote!(-(#lit)) } else { quote!(#lit) }
}

/// A checked literal (a default, a parity case's value) as a value of the param's Rust type.
fn default_tokens(kind: ParamKind, value: &DefaultValue) -> TokenStream {
    match value {
        DefaultValue::Float(v) => float_tokens(*v, kind),
        DefaultValue::Int(v) => int_tokens(*v, kind),
        DefaultValue::Bool(b) => quote!(#b),
        DefaultValue::Str(s) => quote!(::std::string::String::from(#s)),
        DefaultValue::Ints(vs) => {
            let vs = vs.iter().map(|v| int_tokens(*v, ParamKind::I64));
            quote!(::std::vec![#(#vs),*])
        }
        DefaultValue::Floats(vs) => {
            let vs = vs.iter().map(|v| float_tokens(*v, ParamKind::F32));
            quote!(::std::vec![#(#vs),*])
        }
    }
}

fn default_text(value: &DefaultValue) -> String {
    match value {
        DefaultValue::Float(v) => format!("{v:?}"),
        DefaultValue::Int(v) => v.to_string(),
        DefaultValue::Bool(b) => b.to_string(),
        DefaultValue::Str(s) => format!("{s:?}"),
        DefaultValue::Ints(vs) => format!("{vs:?}"),
        DefaultValue::Floats(vs) => format!("{vs:?}"),
    }
}

fn params_struct(model: &Model) -> TokenStream {
    let name = &model.name;
    let struct_doc = format!(
        " The params of `{name}`: set per call, carried as typed attributes through export."
    );
    let fields = model.params.iter().map(|p| {
        let ident = &p.ident;
        let ty = param_type(p.kind);
        let doc = match &p.default {
            Some(d) => format!(" `{}`, default `{}`.", p.kind.rust_name(), default_text(d)),
            None => format!(" `{}`, no default: every call sets it.", p.kind.rust_name()),
        };
        quote!(#[doc = #doc] pub #ident: #ty)
    });
    let all_default = model.params.iter().all(|p| p.default.is_some());
    let default_impl = all_default.then(|| {
        let inits = model.params.iter().map(|p| {
            let ident = &p.ident;
            let value = p.default.as_ref().map(|d| default_tokens(p.kind, d));
            quote!(#ident: #value)
        });
        quote! {
            impl ::core::default::Default for Params {
                fn default() -> Self {
                    Params { #(#inits),* }
                }
            }
        }
    });
    let attrs = Ident::new("attrs", Span::mixed_site());
    let names: Vec<String> = model.params.iter().map(|p| p.ident.to_string()).collect();
    let reads = model.params.iter().map(|p| {
        let ident = &p.ident;
        let key = ident.to_string();
        let ty = param_type(p.kind);
        let default = match &p.default {
            Some(d) => {
                let value = default_tokens(p.kind, d);
                quote!(::core::option::Option::Some((|| #value) as fn() -> #ty))
            }
            None => quote!(::core::option::Option::None),
        };
        quote!(#ident: ::pto_op::__private::read_param::<#ty>(self::NAME, #attrs, #key, #default)?)
    });
    let writes = model.params.iter().map(|p| {
        let ident = &p.ident;
        let key = ident.to_string();
        quote!(#attrs.insert(::std::string::String::from(#key), ::pto_op::ParamValue::to_attr(&self.#ident));)
    });
    quote! {
        #[doc = #struct_doc]
        #[derive(
            ::core::fmt::Debug,
            ::core::clone::Clone,
            ::core::cmp::PartialEq,
            ::pto_op::__private::serde::Serialize,
            ::pto_op::__private::serde::Deserialize,
        )]
        #[serde(crate = "::pto_op::__private::serde", deny_unknown_fields)]
        pub struct Params {
            #(#fields,)*
        }

        #default_impl

        impl ::pto_op::OpParams for Params {
            const OP: &'static str = NAME;

            fn from_attributes(#attrs: &::pto_op::Attributes) -> ::core::result::Result<Self, ::pto_op::OpError> {
                ::pto_op::__private::reject_unknown_params(self::NAME, #attrs, &[#(#names),*])?;
                ::core::result::Result::Ok(Params { #(#reads,)* })
            }

            fn to_attributes(&self) -> ::pto_op::Attributes {
                #[allow(unused_mut)]
                let mut #attrs = ::pto_op::Attributes::new();
                #(#writes)*
                #attrs
            }
        }
    }
}

/// Locals of generated functions: hygienic, so they never meet the author's names.
fn local(name: &str) -> Ident {
    Ident::new(name, Span::mixed_site())
}

fn locals(prefix: &str, n: usize) -> Vec<Ident> {
    (0..n).map(|i| local(&format!("{prefix}{i}"))).collect()
}

/// The call of an author's function from a wrapper, `&params` appended when it takes them.
/// Spanned on the function's return type, so that rustc, when what it returns does not fit
/// (an alias `Result<T>` with another error type), points there and not at the attribute.
fn call(f: &FnModel, args: &[Ident], params: &Ident) -> TokenStream {
    let ident = &f.ident;
    let params = f.takes_params.then(|| quote!(&#params));
    quote_spanned!(f.ret_span=> #ident(#(#args,)* #params))
}

/// `let params = ...;` (or a check only, for functions that ignore their params).
fn read_params(f: &FnModel, attrs: &Ident, params: &Ident) -> TokenStream {
    if f.takes_params {
        quote!(let #params = <Params as ::pto_op::OpParams>::from_attributes(#attrs)?;)
    } else {
        quote!(<Params as ::pto_op::OpParams>::from_attributes(#attrs)?;)
    }
}

/// `let [in0, in1, ..] = ..;` over the slice `items` of a call's inputs: each a `T`, or for an
/// optional input an `Option<T>` (`None` when the call leaves it out).
fn unpack_inputs(model: &Model, ins: &[Ident], items: &Ident) -> TokenStream {
    let n = model.inputs.len();
    if !model.optional.contains(&true) {
        return quote!(let [#(#ins),*] = ::pto_op::__private::inputs::<_, #n>(self::def(), #items)?;);
    }
    let required = model
        .optional
        .iter()
        .zip(ins)
        .filter(|(optional, _)| !**optional)
        .map(|(_, ident)| ident)
        .collect::<Vec<_>>();
    quote! {
        let [#(#ins),*] = ::pto_op::__private::optional_inputs::<_, #n>(self::def(), #items)?;
        #(let #required = ::pto_op::__private::present(self::def(), #required)?;)*
    }
}

/// A wrapper over `&[In]` + attributes, calling the author's function and returning a Vec.
fn io_wrapper(
    model: &Model,
    wrapper: &Ident,
    f: &FnModel,
    input_ty: TokenStream,
    output_ty: TokenStream,
) -> TokenStream {
    let (items, attrs, params, result) = (
        local("items"),
        local("attrs"),
        local("params"),
        local("result"),
    );
    let ins = locals("in", model.inputs.len());
    let outs = locals("out", model.outputs.len());
    let unpack = unpack_inputs(model, &ins, &items);
    let read = read_params(f, &attrs, &params);
    let call = call(f, &ins, &params);
    let call = quote_spanned!(f.ret_span=> #call?);
    let collect = if outs.len() == 1 {
        quote!(::std::vec![#result])
    } else {
        quote!({ let (#(#outs),*) = #result; ::std::vec![#(#outs),*] })
    };
    quote! {
        fn #wrapper(
            #items: &[#input_ty],
            #attrs: &::pto_op::Attributes,
        ) -> ::core::result::Result<::std::vec::Vec<#output_ty>, ::pto_op::OpError> {
            #read
            #unpack
            let #result = #call;
            ::core::result::Result::Ok(#collect)
        }
    }
}

fn op_def(model: &Model) -> TokenStream {
    let name_doc = &model.doc;
    let version = model.version;
    let inputs: Vec<String> = model.inputs.iter().map(ToString::to_string).collect();
    let required_inputs = model.optional.iter().filter(|o| !**o).count();
    let outputs: Vec<String> = model.outputs.iter().map(ToString::to_string).collect();
    let param_defs = model.params.iter().map(|p| {
        let key = p.ident.to_string();
        let variant = format_ident!("{}", p.kind.variant());
        let default = match &p.default {
            Some(d) => {
                let value = default_tokens(p.kind, d);
                quote!(::core::option::Option::Some(
                    (|| ::pto_op::AttrValue::#variant(#value)) as fn() -> ::pto_op::AttrValue
                ))
            }
            None => quote!(::core::option::Option::None),
        };
        quote!(::pto_op::ParamDef { name: #key, ty: ::pto_op::AttrType::#variant, default: #default })
    });

    let shapes = format_ident!("__pto_infer_shapes");
    let dtypes = format_ident!("__pto_infer_dtypes");
    let reference = format_ident!("__pto_reference");
    let shape_wrapper = io_wrapper(
        model,
        &shapes,
        &model.infer_shape,
        quote!(&::pto_op::Shape),
        quote!(::pto_op::Shape),
    );
    let dtype_wrapper = io_wrapper(
        model,
        &dtypes,
        &model.infer_dtype,
        quote!(::pto_op::DType),
        quote!(::pto_op::DType),
    );
    let reference_wrapper = io_wrapper(
        model,
        &reference,
        &model.reference,
        quote!(&::pto_op::Tensor),
        quote!(::pto_op::Tensor),
    );

    let (kernel_field, kernel_wrapper) = match &model.kernel {
        Some(f) => {
            let wrapper = format_ident!("__pto_kernel");
            let (builder, ins_arg, outs_arg, attrs, params) = (
                local("builder"),
                local("inputs"),
                local("outputs"),
                local("attrs"),
                local("params"),
            );
            let ins = locals("in", model.inputs.len());
            let outs = locals("out", model.outputs.len());
            let n_out = model.outputs.len();
            let unpack = unpack_inputs(model, &ins, &ins_arg);
            let read = read_params(f, &attrs, &params);
            let args: Vec<Ident> = ins.iter().chain(&outs).cloned().collect();
            let builder_then_io: Vec<Ident> =
                std::iter::once(builder.clone()).chain(args).collect();
            let call = call(f, &builder_then_io, &params);
            (
                quote!(::core::option::Option::Some(#wrapper)),
                quote! {
                    fn #wrapper(
                        #builder: &mut ::pto_op::Kernel,
                        #ins_arg: &[&::pto_op::Global],
                        #outs_arg: &[&::pto_op::Global],
                        #attrs: &::pto_op::Attributes,
                    ) -> ::core::result::Result<(), ::pto_op::OpError> {
                        #read
                        #unpack
                        let [#(#outs),*] = ::pto_op::__private::output_slots::<_, #n_out>(self::def(), #outs_arg)?;
                        #call
                    }
                },
            )
        }
        None => (quote!(::core::option::Option::None), quote!()),
    };
    let optional = |f: &Option<FnModel>| match f {
        Some(f) => {
            let ident = &f.ident;
            quote!(::core::option::Option::Some(#ident))
        }
        None => quote!(::core::option::Option::None),
    };
    let parity_cases = model.parity.iter().map(parity_case);
    let estimator = optional(&model.estimator);
    let properties = optional(&model.properties);
    let tolerances = model.tolerances.iter().map(|t| {
        let dtype = format_ident!("{}", t.dtype);
        let tolerance = tolerance_tokens(t.rtol, t.atol);
        quote!((::pto_op::DType::#dtype, #tolerance))
    });

    quote! {
        /// The op's description, as registered.
        pub fn def() -> &'static ::pto_op::OpDef {
            &__PTO_OP_DEF
        }

        #[::pto_op::__private::linkme::distributed_slice(::pto_op::__private::OPERATORS)]
        #[linkme(crate = ::pto_op::__private::linkme)]
        static __PTO_OP_DEF: ::pto_op::OpDef = ::pto_op::OpDef {
            name: NAME,
            version: #version,
            doc: #name_doc,
            inputs: &[#(#inputs),*],
            required_inputs: #required_inputs,
            outputs: &[#(#outputs),*],
            params: &[#(#param_defs),*],
            source: ::pto_op::SourceLocation {
                module_path: ::core::module_path!(),
                file: ::core::file!(),
                line: ::core::line!(),
            },
            infer_shapes: #shapes,
            infer_dtypes: #dtypes,
            reference: #reference,
            kernel: #kernel_field,
            estimator: #estimator,
            properties: #properties,
            tolerances: &[#(#tolerances),*],
            parity_cases: __pto_op_parity_cases,
        };

        /// The op's `#[parity]` cases, for checks at run time (a redeployed kernel's).
        fn __pto_op_parity_cases() -> ::std::vec::Vec<::pto_op::parity::ParityCase> {
            ::std::vec::Vec::from([#(#parity_cases),*])
        }

        #shape_wrapper
        #dtype_wrapper
        #reference_wrapper
        #kernel_wrapper
    }
}

/// The return type of `run` / `apply` (`T` for one output, a tuple for several), and the
/// block that turns the `Vec<T>` in `list` into it.
fn typed_outputs(model: &Model, ty: &TokenStream, list: &Ident) -> (TokenStream, TokenStream) {
    let n = model.outputs.len();
    let outs = locals("out", n);
    let tys = (0..n).map(|_| ty);
    let ret = if n == 1 {
        quote!(#ty)
    } else {
        quote!((#(#tys),*))
    };
    let value = if n == 1 {
        quote!(#(#outs)*)
    } else {
        quote!((#(#outs),*))
    };
    let block = quote!({
        let [#(#outs),*] = ::pto_op::__private::outputs::<_, #n>(self::def(), #list)?;
        ::core::result::Result::Ok(#value)
    });
    (ret, block)
}

fn io_docs(model: &Model) -> (String, String) {
    let list = |ids: &[Ident], optional: &[bool]| {
        ids.iter()
            .enumerate()
            .map(|(i, id)| match optional.get(i) {
                Some(true) => format!("`{id}` (optional: `None` leaves it out)"),
                _ => format!("`{id}`"),
            })
            .collect::<Vec<_>>()
            .join(", ")
    };
    (
        list(&model.inputs, &model.optional),
        list(&model.outputs, &[]),
    )
}

/// The argument types of `run` / `apply`'s inputs (`&T`, or `Option<&T>` for an optional
/// one), and the expression of the slice of the inputs a call gives.
fn typed_inputs(model: &Model, ty: &TokenStream) -> (Vec<TokenStream>, TokenStream) {
    let inputs = &model.inputs;
    let types = model
        .optional
        .iter()
        .map(|optional| match optional {
            true => quote!(::core::option::Option<&#ty>),
            false => quote!(&#ty),
        })
        .collect();
    if !model.optional.contains(&true) {
        return (types, quote!(&[#(#inputs),*]));
    }
    let wrapped = model
        .optional
        .iter()
        .zip(inputs)
        .map(|(optional, id)| match optional {
            true => quote!(#id),
            false => quote!(::core::option::Option::Some(#id)),
        });
    let given = quote!(&::pto_op::__private::given_inputs(self::def(), [#(#wrapped),*])?);
    (types, given)
}

fn run_fn(model: &Model) -> TokenStream {
    let (executor, params, list) = (local("executor"), local("params"), local("outputs"));
    let inputs = &model.inputs;
    let tensor = quote!(::pto_op::Tensor);
    let (types, given) = typed_inputs(model, &tensor);
    let (ret, block) = typed_outputs(model, &tensor, &list);
    let (ins, outs) = io_docs(model);
    let doc = format!(
        " Runs `{}` now, on `executor` (the target: CPU reference, simulator, device).\n\n\
         Inputs {ins}; returns {outs}. Shapes and dtypes are checked against the op's rules.",
        model.name
    );
    quote! {
        #[doc = #doc]
        pub fn run(
            #executor: &dyn ::pto_op::Executor,
            #(#inputs: #types,)*
            #params: &Params,
        ) -> ::core::result::Result<#ret, ::pto_op::OpError> {
            let #list = #executor.execute(self::def(), #given, &::pto_op::OpParams::to_attributes(#params))?.outputs;
            #block
        }
    }
}

fn apply_fn(model: &Model) -> TokenStream {
    let (params, list) = (local("params"), local("outputs"));
    let inputs = &model.inputs;
    let value = quote!(::pto_op::Value);
    let (types, given) = typed_inputs(model, &value);
    let (ret, block) = typed_outputs(model, &value, &list);
    let (ins, outs) = io_docs(model);
    let doc = format!(
        " Records a call of `{}` in the graph its inputs belong to.\n\n\
         Inputs {ins}; returns {outs}. The op's shape and dtype rules run now, so a bad call \
         fails while the model is traced.",
        model.name
    );
    quote! {
        #[doc = #doc]
        pub fn apply(
            #(#inputs: #types,)*
            #params: &Params,
        ) -> ::core::result::Result<#ret, ::pto_op::OpError> {
            let #list = ::pto_op::Graph::trace(self::def(), #given, ::pto_op::OpParams::to_attributes(#params))?;
            #block
        }
    }
}

fn tolerance_tokens(rtol: f64, atol: f64) -> TokenStream {
    let (rtol, atol) = (Literal::f64_suffixed(rtol), Literal::f64_suffixed(atol));
    quote!(::pto_op::Tolerance::new(#rtol, #atol))
}

/// `#[cfg(test)] mod __pto_parity`: one `#[test]` per `#[parity]` case, comparing the kernel
/// on `sim` with the reference on `cpu`. Nothing when the op declares no case.
fn parity_tests(model: &Model) -> TokenStream {
    if model.parity.is_empty() {
        return quote!();
    }
    let tests = model.parity.iter().map(parity_test);
    quote! {
        /// The op's `#[parity]` cases, one test each.
        #[cfg(test)]
        pub(crate) mod __pto_parity {
            #(#tests)*
        }
    }
}

/// The `::pto_op::parity::ParityCase` expression of one `#[parity]` case.
fn parity_case(case: &ParityCase) -> TokenStream {
    let inputs = case.inputs.iter().map(|input| {
        let dtype = format_ident!("{}", input.dtype);
        let shape = if input.dims.is_empty() {
            quote!(::pto_op::Shape::scalar())
        } else {
            let dims = input.dims.iter().map(|d| Literal::usize_suffixed(*d));
            quote!(::pto_op::Shape::new([#(#dims),*]))
        };
        quote!(::pto_op::TensorType {
            shape: #shape,
            dtype: ::pto_op::DType::#dtype,
        })
    });
    let attrs = case.params.iter().map(|p| {
        let variant = format_ident!("{}", p.kind.variant());
        let key = &p.name;
        let value = default_tokens(p.kind, &p.value);
        quote!((::std::string::String::from(#key), ::pto_op::AttrValue::#variant(#value)))
    });
    let ranges = case.inputs.iter().map(|input| match input.range {
        Some((low, high)) => {
            let (low, high) = (Literal::f64_suffixed(low), Literal::f64_suffixed(high));
            quote!(::core::option::Option::Some((#low, #high)))
        }
        None => quote!(::core::option::Option::None),
    });
    let seed = match &case.seed {
        CaseSeed::Given(seed) => quote!(#seed),
        CaseSeed::OfText(text) => quote!(::pto_op::parity::case_seed(#text)),
    };
    let tolerance = match case.tolerance {
        Some((rtol, atol)) => {
            let tolerance = tolerance_tokens(rtol, atol);
            quote!(::core::option::Option::Some(#tolerance))
        }
        None => quote!(::core::option::Option::None),
    };
    quote! {
        ::pto_op::parity::ParityCase {
            inputs: ::std::vec::Vec::from([#(#inputs),*]),
            attrs: ::pto_op::Attributes::from([#(#attrs),*]),
            ranges: ::std::vec::Vec::from([#(#ranges),*]),
            seed: #seed,
            tolerance: #tolerance,
        }
    }
}

fn parity_test(case: &ParityCase) -> TokenStream {
    let name = &case.test_name;
    let value = parity_case(case);
    quote! {
        #[test]
        pub(crate) fn #name() {
            ::pto_op::__private::parity::assert_parity(super::def(), &#value);
        }
    }
}

//! Unit tests of the macro on `proc_macro2` tokens. The trybuild UI cases in `pto-tests`
//! cover what authors see from rustc.

use quote::quote;

use super::custom_op_impl;

fn pretty(tokens: proc_macro2::TokenStream) -> String {
    let file: syn::File = syn::parse2(tokens).expect("the expansion parses as a file");
    prettyplease::unparse(&file)
}

/// The text without whitespace, so checks do not depend on how it is laid out.
fn squash(text: &str) -> String {
    text.chars().filter(|c| !c.is_whitespace()).collect()
}

fn error_count(tokens: &proc_macro2::TokenStream) -> usize {
    tokens.to_string().matches("compile_error").count()
}

fn rms_norm() -> proc_macro2::TokenStream {
    quote! {
        /// y = x * rsqrt(mean(x^2) + eps) * gamma
        pub mod rms_norm {
            use super::*;

            #[infer_shape]
            fn infer_shape(x: &Shape, gamma: &Shape, _p: &Params) -> Result<Shape, OpError> {
                Ok(x.clone())
            }

            #[infer_dtype]
            fn infer_dtype(x: DType, _gamma: DType) -> Result<DType, OpError> {
                Ok(x)
            }

            #[reference]
            fn reference(x: &Tensor, gamma: &Tensor, p: &Params) -> Result<Tensor, OpError> {
                todo_reference(x, gamma, p.eps)
            }

            #[kernel]
            fn kernel(k: &mut Kernel, x: &Global, gamma: &Global, y: &Global, p: &Params) -> Result<(), OpError> {
                k.grid(1)
            }
        }
    }
}

#[test]
fn expansion_snapshot() {
    let out = custom_op_impl(
        quote!(name = "demo.rms_norm", params(eps: f32 = 1e-6)),
        rms_norm(),
    );
    assert_eq!(error_count(&out), 0, "{out}");
    insta::assert_snapshot!(pretty(out));
}

#[test]
fn three_mistakes_are_three_errors() {
    let item = quote! {
        pub mod bad {
            #[infer_shape]
            fn infer_shape(x: &Shape) -> Result<Shape, OpError> { Ok(x.clone()) }
            #[infer_dtype]
            fn infer_dtype(x: DType) -> Result<DType, OpError> { Ok(x) }
            #[reference]
            fn reference(z: &Tensor) -> Result<Tensor, OpError> { Ok(z.clone()) }
        }
    };
    let out = custom_op_impl(
        quote!(name = "demo.bad", colour = "red", params(k: u16)),
        item,
    );
    assert_eq!(error_count(&out), 3, "{out}");
    let text = out.to_string();
    assert!(text.contains("unknown key `colour`"), "{text}");
    assert!(text.contains("unsupported param type `u16`"), "{text}");
    assert!(
        text.contains("input `z` of #[reference] is `x` in #[infer_shape]"),
        "{text}"
    );
    // The module is still there, with a Params struct, and without helper attributes.
    assert!(text.contains("pub mod bad"), "{text}");
    assert!(text.contains("pub struct Params"), "{text}");
    assert!(!text.contains("# [reference]"), "{text}");
}

#[test]
fn a_broken_description_still_has_the_whole_surface() {
    let item = quote! {
        pub mod bad {
            #[infer_shape]
            fn s(x: &Shape, gamma: &Shape, _p: &Params) -> Result<(Shape, Shape), OpError> { todo() }
            #[infer_dtype]
            fn t(x: DType, gamma: DType) -> Result<(DType, DType), OpError> { todo() }
            #[reference]
            fn r(x: &Tensor, g: &Tensor) -> Result<(Tensor, Tensor), OpError> { todo() }
            fn run() {}
        }
    };
    let out = custom_op_impl(quote!(name = "demo.bad", params(k: u16 = 1)), item);
    // `g` for `gamma`, `u16`, and `run` defined by the module: three mistakes, three errors.
    assert_eq!(error_count(&out), 3, "{out}");
    let text = squash(&pretty(out));
    assert!(text.contains(r#"pubconstNAME:&str="demo.bad";"#), "{text}");
    assert!(text.contains("pubstructParams{pubk:u16,}"), "{text}");
    assert!(text.contains("impl::pto_op::OpParamsforParams"), "{text}");
    assert!(
        text.contains("impl::core::default::DefaultforParams"),
        "{text}"
    );
    assert!(
        text.contains("pubfndef()->&'static::pto_op::OpDef"),
        "{text}"
    );
    // Two inputs and two outputs, as #[infer_shape] declares.
    assert!(
        text.contains(
            "pubfnapply(input0:&::pto_op::Value,input1:&::pto_op::Value,params:&Params,)\
             ->::core::result::Result<(::pto_op::Value,::pto_op::Value),::pto_op::OpError>"
        ),
        "{text}"
    );
    // The module's own `run` stays the only one; nothing is registered.
    assert_eq!(text.matches("fnrun(").count(), 1, "{text}");
    assert!(!text.contains("distributed_slice"), "{text}");
}

#[test]
fn defaults_are_typed_literals() {
    let out = custom_op_impl(
        quote!(name = "demo.d", params(a: f32 = -0.5, b: i32 = -3, c: Vec<i64> = [1, -2], s: String = "x", t: bool = true, f: f64 = 2)),
        quote! {
            mod d {
                #[infer_shape] fn s(x: &Shape) -> Result<Shape, OpError> { Ok(x.clone()) }
                #[infer_dtype] fn t(x: DType) -> Result<DType, OpError> { Ok(x) }
                #[reference] fn r(x: &Tensor) -> Result<Tensor, OpError> { Ok(x.clone()) }
            }
        },
    );
    assert_eq!(error_count(&out), 0, "{out}");
    let text = squash(&pretty(out));
    assert!(text.contains("a:-0.5f32"), "{text}");
    assert!(text.contains("b:-(3i32)"), "{text}");
    assert!(text.contains("f:2f64"), "{text}");
    assert!(text.contains("c:::std::vec![1i64,-(2i64)]"), "{text}");
    assert!(
        text.contains("impl::core::default::DefaultforParams"),
        "{text}"
    );
}

#[test]
fn out_of_range_default_is_an_error() {
    let out = custom_op_impl(
        quote!(name = "demo.d", params(a: i32 = 3000000000)),
        quote!(
            mod d {}
        ),
    );
    assert!(
        out.to_string()
            .contains("is not a default for an i32 param"),
        "{out}"
    );
}

#[test]
fn multiple_outputs_take_their_names_from_outputs() {
    let out = custom_op_impl(
        quote!(name = "demo.two", outputs(mean, rstd)),
        quote! {
            mod two {
                #[infer_shape] fn s(x: &Shape) -> Result<(Shape, Shape), OpError> { Ok((x.clone(), x.clone())) }
                #[infer_dtype] fn t(x: DType) -> Result<(DType, DType), OpError> { Ok((x, x)) }
                #[reference] fn r(x: &Tensor) -> Result<(Tensor, Tensor), OpError> { Ok((x.clone(), x.clone())) }
            }
        },
    );
    assert_eq!(error_count(&out), 0, "{out}");
    let text = squash(&pretty(out));
    assert!(text.contains(r#"outputs:&["mean","rstd"]"#), "{text}");
    assert!(
        text.contains("Result<(::pto_op::Tensor,::pto_op::Tensor),"),
        "{text}"
    );
}

#[test]
fn output_count_disagreement_is_reported_on_the_return_type() {
    let out = custom_op_impl(
        quote!(name = "demo.two"),
        quote! {
            mod two {
                #[infer_shape] fn s(x: &Shape) -> Result<(Shape, Shape), OpError> { todo() }
                #[infer_dtype] fn t(x: DType) -> Result<DType, OpError> { Ok(x) }
                #[reference] fn r(x: &Tensor) -> Result<(Tensor, Tensor), OpError> { todo() }
            }
        },
    );
    assert_eq!(error_count(&out), 1, "{out}");
    assert!(
        out.to_string()
            .contains("#[infer_dtype] returns 1 output(s), but #[infer_shape] returns 2")
    );
}

/// The generated `__pto_parity` module of an expansion, pretty-printed.
fn parity_module(tokens: proc_macro2::TokenStream) -> String {
    let file: syn::File = syn::parse2(tokens).expect("the expansion parses as a file");
    let Some(syn::Item::Mod(op)) = file.items.first() else {
        panic!("the expansion is the op module");
    };
    let items = &op.content.as_ref().expect("the op module is inline").1;
    let parity = items
        .iter()
        .find(|item| matches!(item, syn::Item::Mod(m) if m.ident == "__pto_parity"))
        .expect("the op module holds __pto_parity");
    prettyplease::unparse(&syn::parse_quote!(#parity))
}

/// rms_norm with `#[parity]` cases on its kernel.
fn rms_norm_with_cases(cases: proc_macro2::TokenStream) -> proc_macro2::TokenStream {
    quote! {
        pub mod rms_norm {
            #[infer_shape]
            fn infer_shape(x: &Shape, gamma: &Shape, _p: &Params) -> Result<Shape, OpError> { Ok(x.clone()) }
            #[infer_dtype]
            fn infer_dtype(x: DType, _gamma: DType) -> Result<DType, OpError> { Ok(x) }
            #[reference]
            fn reference(x: &Tensor, gamma: &Tensor, p: &Params) -> Result<Tensor, OpError> { todo() }
            #cases
            #[kernel]
            fn kernel(k: &mut Kernel, x: &Global, gamma: &Global, y: &Global) -> Result<(), OpError> { k.grid(1) }
        }
    }
}

#[test]
fn parity_cases_expand_into_a_test_module() {
    let out = custom_op_impl(
        quote!(name = "demo.rms_norm", params(eps: f32 = 1e-6, bias: i64), tolerance(f16 = (2e-3, 1e-3))),
        rms_norm_with_cases(quote! {
            #[parity(x = f16[4, 64] in -4.5..4.5, gamma = f16[64], eps = 1e-5, bias = -2, seed = 7, rtol = 2e-3, atol = 1e-3)]
            #[parity(gamma = bf16[], x = bool[3], bias = 0)]
        }),
    );
    assert_eq!(error_count(&out), 0, "{out}");
    let text = squash(&pretty(out.clone()));
    assert!(
        text.contains(
            "tolerances:&[(::pto_op::DType::F16,::pto_op::Tolerance::new(0.002f64,0.001f64)),]"
        ),
        "{text}"
    );
    assert!(!text.contains("#[parity("), "{text}");
    insta::assert_snapshot!(parity_module(out));
}

#[test]
fn an_op_without_cases_has_no_parity_module() {
    let out = custom_op_impl(
        quote!(name = "demo.rms_norm"),
        rms_norm_with_cases(quote!()),
    );
    assert_eq!(error_count(&out), 0, "{out}");
    assert!(!out.to_string().contains("__pto_parity"), "{out}");
}

#[test]
fn every_parity_mistake_is_reported_at_once() {
    let out = custom_op_impl(
        quote!(name = "demo.rms_norm", params(eps: f32 = 1e-6)),
        rms_norm_with_cases(quote! {
            #[parity(x = f16[4, 64], gamma = f16[64], colour = 1)]
            #[parity(x = f16[4, 64])]
            #[parity(x = f16[4], x = f16[4], gamma = f17[4])]
            #[parity(x = f16[4, -1], gamma = f16[4], eps = "big")]
            #[parity(x = f16[4], gamma = f16[4], rtol = 1e-3)]
            #[parity(x = f16[4], gamma = f16[4], seed = -1)]
        }),
    );
    let text = out.to_string();
    for message in [
        "unknown name `colour` in #[parity]; the op's inputs are (x, gamma), its params (eps), \
         and a case may set `seed`, `rtol` and `atol`",
        "this #[parity] case does not give input `gamma`",
        "`x` is given twice in this #[parity] case",
        "unknown dtype `f17` for input `gamma`",
        "is not a dimension of input `x`",
        "`\\\"big\\\"` is not a value for param `eps`, an f32",
        "`rtol` alone: a #[parity] case sets both `rtol` and `atol`",
        "the seed is a whole number from 0 up",
    ] {
        assert!(text.contains(message), "{message:?} not in: {text}");
    }
    assert_eq!(error_count(&out), 8, "{out}");
    // The module is kept, without the attributes.
    assert!(text.contains("pub mod rms_norm"), "{text}");
    assert!(!text.contains("# [parity"), "{text}");
}

#[test]
fn parity_goes_on_the_kernel_only() {
    let item = |kernel: proc_macro2::TokenStream| {
        quote! {
            mod m {
                #[infer_shape] fn s(x: &Shape) -> Result<Shape, OpError> { Ok(x.clone()) }
                #[infer_dtype] fn t(x: DType) -> Result<DType, OpError> { Ok(x) }
                #[parity(x = f32[4])]
                #[reference] fn r(x: &Tensor) -> Result<Tensor, OpError> { Ok(x.clone()) }
                #[parity(x = f32[4])]
                fn helper() {}
                #kernel
            }
        }
    };
    let with_kernel = custom_op_impl(
        quote!(name = "demo.m"),
        item(quote!(
            #[kernel]
            fn k(k: &mut Kernel, x: &Global, y: &Global) -> Result<(), OpError> {
                k.grid(1)
            }
        )),
    );
    let text = with_kernel.to_string();
    assert_eq!(error_count(&with_kernel), 2, "{text}");
    assert!(
        text.contains("#[parity] goes on the #[kernel] function, not on function `helper`"),
        "{text}"
    );
    assert!(
        text.contains("#[parity] goes on the #[kernel] function, not on #[reference] `r`"),
        "{text}"
    );
    let without_kernel = custom_op_impl(quote!(name = "demo.m"), item(quote!()));
    assert_eq!(error_count(&without_kernel), 2, "{without_kernel}");
    assert!(
        without_kernel
            .to_string()
            .contains("this op has no #[kernel], so there is nothing to compare"),
        "{without_kernel}"
    );
}

#[test]
fn declared_tolerances_are_checked() {
    let out = custom_op_impl(
        quote!(
            name = "demo.rms_norm",
            tolerance(
                f17 = (1e-3, 1e-3),
                f16 = (1e-3, -1.0),
                bf16 = 0.1,
                f16 = (0.0, 0)
            )
        ),
        rms_norm_with_cases(quote!()),
    );
    let text = out.to_string();
    assert_eq!(error_count(&out), 4, "{text}");
    assert!(
        text.contains("unknown dtype `f17` in tolerance(...)"),
        "{text}"
    );
    assert!(text.contains("`(1e-3, -1.0)` is not a tolerance"), "{text}");
    assert!(text.contains("`0.1` is not a tolerance"), "{text}");
    assert!(
        text.contains("the tolerance for `f16` is given twice"),
        "{text}"
    );
}

#[test]
fn a_case_without_seed_is_seeded_by_its_own_text() {
    let seeds = |cases: proc_macro2::TokenStream| -> Vec<String> {
        let out = custom_op_impl(
            quote!(name = "demo.rms_norm", params(eps: f32 = 1e-6)),
            rms_norm_with_cases(cases),
        );
        assert_eq!(error_count(&out), 0, "{out}");
        squash(&parity_module(out))
            .split("seed:")
            .skip(1)
            .map(|rest| rest.split(",tolerance").next().unwrap_or(rest).to_owned())
            .collect()
    };
    let before = seeds(quote! {
        #[parity(x = f16[4, 64], gamma = f16[64])]
        #[parity(x = f32[7, 100], gamma = f32[100], eps = 1e-5, seed = 3)]
    });
    // A case inserted first, the keys reordered and spaced differently, a tolerance added.
    let after = seeds(quote! {
        #[parity(x = f16[8, 8], gamma = f16[8])]
        #[parity(gamma = f16[ 64 ], x = f16[4,64], rtol = 1e-2, atol = 1e-3)]
        #[parity(x = f32[7, 100], gamma = f32[100], eps = 1e-5, seed = 3)]
    });
    let text = r#"::pto_op::parity::case_seed("gamma=f16[64],x=f16[4,64]")"#;
    assert_eq!(before, [text, "3u64"]);
    assert_eq!(after[1..], before[..]);
    assert_eq!(
        after[0],
        r#"::pto_op::parity::case_seed("gamma=f16[8],x=f16[8,8]")"#
    );
}

/// A minimal op with one input `x` (written `_x` in #[infer_dtype]) under `args`.
fn one_input_op(args: proc_macro2::TokenStream) -> proc_macro2::TokenStream {
    custom_op_impl(
        args,
        quote!(
            mod op {
                #[infer_shape]
                fn s(x: &Shape) -> Result<Shape, OpError> {
                    Ok(x.clone())
                }
                #[infer_dtype]
                fn t(_x: DType) -> Result<DType, OpError> {
                    Ok(DType::F32)
                }
                #[reference]
                fn r(x: &Tensor) -> Result<Tensor, OpError> {
                    Ok(x.clone())
                }
            }
        ),
    )
}

#[test]
fn op_names_need_a_domain_other_than_ai_onnx() {
    let out = one_input_op(quote!(name = "Relu"));
    assert_eq!(error_count(&out), 1, "{out}");
    assert!(
        out.to_string().contains(
            r#"op name \"Relu\" has no domain: write \"<domain>.<name>\", e.g. \"my_ops.relu\""#
        ),
        "{out}"
    );

    let out = one_input_op(quote!(name = "ai.onnx.Relu"));
    assert_eq!(error_count(&out), 1, "{out}");
    assert!(
        out.to_string()
            .contains("is in the ONNX default domain `ai.onnx`"),
        "{out}"
    );

    // A dotted domain is fine: the export takes everything before the last dot.
    for name in ["com.acme.relu", "ai.onnx_ext.relu", "onnx.relu"] {
        let out = one_input_op(quote!(name = #name));
        assert_eq!(error_count(&out), 0, "{name}: {out}");
    }
}

#[test]
fn a_param_named_like_an_input_is_an_error() {
    let out = one_input_op(quote!(name = "demo.clash", params(alpha: f32 = 1.0, x: f32 = 0.5)));
    assert_eq!(error_count(&out), 1, "{out}");
    assert!(
        out.to_string()
            .contains("param `x` has the same name as input `x`"),
        "{out}"
    );

    let out = one_input_op(quote!(name = "demo.no_clash", params(alpha: f32 = 1.0)));
    assert_eq!(error_count(&out), 0, "{out}");
}

/// An op whose `bias` is optional, every function declaring it alike.
fn affine(
    shape_bias: proc_macro2::TokenStream,
    reference_bias: proc_macro2::TokenStream,
) -> proc_macro2::TokenStream {
    quote! {
        pub mod affine {
            use super::*;

            #[infer_shape]
            fn infer_shape(x: &Shape, w: &Shape, bias: #shape_bias) -> Result<Shape, OpError> {
                Ok(x.clone())
            }

            #[infer_dtype]
            fn infer_dtype(x: DType, w: DType, bias: Option<DType>) -> Result<DType, OpError> {
                Ok(x)
            }

            #[reference]
            fn reference(x: &Tensor, w: &Tensor, bias: #reference_bias) -> Result<Tensor, OpError> {
                todo_reference(x)
            }

            #[parity(x = f32[4, 8], w = f32[8])]
            #[parity(x = f32[4, 8], w = f32[8], bias = f32[8])]
            #[kernel]
            fn kernel(k: &mut Kernel, x: &Global, w: &Global, bias: Option<&Global>, y: &Global) -> Result<(), OpError> {
                k.grid(1)
            }
        }
    }
}

#[test]
fn an_optional_input_is_declared_with_option_and_counted_as_not_required() {
    let out = custom_op_impl(
        quote!(name = "demo.affine"),
        affine(quote!(Option<&Shape>), quote!(Option<&Tensor>)),
    );
    assert_eq!(error_count(&out), 0, "{out}");
    let text = squash(&pretty(out));
    for expected in [
        "required_inputs:2usize",
        "::pto_op::__private::optional_inputs::<_,3usize,>(self::def(),items)?",
        "letin0=::pto_op::__private::present(self::def(),in0)?;letin1=::pto_op::__private::present(self::def(),in1)?;letresult=reference(in0,in1,in2)?;",
        "bias:::core::option::Option<&::pto_op::Value>",
        "::pto_op::__private::given_inputs(self::def(),[::core::option::Option::Some(x),::core::option::Option::Some(w),bias",
    ] {
        assert!(
            text.contains(&squash(expected)),
            "{expected:?} not in: {text}"
        );
    }
}

#[test]
fn optional_inputs_that_disagree_or_come_before_a_required_one_are_refused() {
    // #[reference] takes `bias` as required while #[infer_shape] makes it optional.
    let out = custom_op_impl(
        quote!(name = "demo.affine"),
        affine(quote!(Option<&Shape>), quote!(&Tensor)),
    );
    let text = out.to_string();
    assert!(
        text.contains("input `bias` is optional in #[infer_shape]; write `Option<&Tensor>` here"),
        "{text}"
    );
    // A required input after an optional one.
    let out = custom_op_impl(
        quote!(name = "demo.affine"),
        quote! {
            pub mod affine {
                use super::*;
                #[infer_shape]
                fn infer_shape(x: &Shape, bias: Option<&Shape>, w: &Shape) -> Result<Shape, OpError> { Ok(x.clone()) }
                #[infer_dtype]
                fn infer_dtype(x: DType, bias: Option<DType>, w: DType) -> Result<DType, OpError> { Ok(x) }
                #[reference]
                fn reference(x: &Tensor, bias: Option<&Tensor>, w: &Tensor) -> Result<Tensor, OpError> { todo_reference(x) }
            }
        },
    );
    let text = out.to_string();
    assert!(
        text.contains(
            "input `w` of #[infer_shape] is required but comes after optional input `bias`"
        ),
        "{text}"
    );
    // A parity case that leaves out an optional input but gives a later one, and a kernel
    // whose output is optional.
    let out = custom_op_impl(
        quote!(name = "demo.two"),
        quote! {
            pub mod two {
                use super::*;
                #[infer_shape]
                fn infer_shape(x: &Shape, a: Option<&Shape>, b: Option<&Shape>) -> Result<Shape, OpError> { Ok(x.clone()) }
                #[infer_dtype]
                fn infer_dtype(x: DType, a: Option<DType>, b: Option<DType>) -> Result<DType, OpError> { Ok(x) }
                #[reference]
                fn reference(x: &Tensor, a: Option<&Tensor>, b: Option<&Tensor>) -> Result<Tensor, OpError> { todo_reference(x) }
                #[parity(x = f32[4], b = f32[4])]
                #[kernel]
                fn kernel(k: &mut Kernel, x: &Global, a: Option<&Global>, b: Option<&Global>, y: Option<&Global>) -> Result<(), OpError> { k.grid(1) }
            }
        },
    );
    let text = out.to_string();
    for message in [
        "this #[parity] case leaves out optional input `a` but gives `b` after it",
        "output `y` is `&Global`, never `Option`",
    ] {
        assert!(text.contains(message), "{message:?} not in: {text}");
    }
    // The error for a type that is neither says what an optional input is written as.
    let out = custom_op_impl(
        quote!(name = "demo.affine"),
        affine(quote!(Vec<Shape>), quote!(Option<&Tensor>)),
    );
    assert!(
        out.to_string()
            .contains("expected `&Shape`, or `Option<&Shape>` for an optional input"),
        "{out}"
    );
}

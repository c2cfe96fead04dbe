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

//! The safe side of the C ABI ([`pto_capi::infer`] and its shape and dtype halves) for an op
//! of the examples, which this crate links: unknown ops and attributes that do not parse are
//! named, and shapes and dtypes inferred apart agree with the whole inference.

use pto_capi::{CapiError, Status, infer, infer_dtypes, infer_shapes};
use pto_op::{DType, Shape, TensorType};
// Links the examples' ops into this test, as the library links them.
use pto_examples_capi as _;

fn f32s(dims: &[usize]) -> TensorType {
    TensorType {
        shape: Shape::new(dims.to_vec()),
        dtype: DType::F32,
    }
}

#[test]
fn unknown_ops_and_bad_json_are_named() {
    let err = infer("demo.nope", &[], "").expect_err("no such op");
    assert_eq!(err.status(), Status::UnknownOp);
    assert!(err.to_string().contains("demo.nope"), "{err}");
    let err =
        infer("demo.rms_norm", &[f32s(&[2, 4]), f32s(&[4])], "{eps: 1}").expect_err("not JSON");
    assert_eq!(err.status(), Status::BadAttributes);
    assert!(err.to_string().contains("demo.rms_norm"), "{err}");
}

#[test]
fn shapes_and_dtypes_apart_agree_with_infer() -> Result<(), CapiError> {
    let attrs = r#"{"eps":{"f32":1e-5}}"#;
    let both = infer("demo.rms_norm", &[f32s(&[2, 4]), f32s(&[4])], attrs)?;
    let shapes = infer_shapes(
        "demo.rms_norm",
        &[Shape::new(vec![2, 4]), Shape::new(vec![4])],
        attrs,
    )?;
    let dtypes = infer_dtypes("demo.rms_norm", &[DType::F32, DType::F32], attrs)?;
    assert_eq!(
        both.iter().map(|t| t.shape.clone()).collect::<Vec<_>>(),
        shapes
    );
    assert_eq!(both.iter().map(|t| t.dtype).collect::<Vec<_>>(), dtypes);
    let err = infer_dtypes("demo.rms_norm", &[DType::F32], attrs).expect_err("one input short");
    assert_eq!(err.status(), Status::Rejected);
    Ok(())
}

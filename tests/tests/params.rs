//! Generated `Params`: defaults, serde, and conversion to and from attributes.

use pto_op::prelude::*;
use pto_op::{AttrValue, Attributes};

/// Every param type, some with defaults and some without.
#[custom_op(
    name = "test.all_params",
    params(
        a: f32 = -0.5,
        b: f64,
        c: i32 = 7,
        d: i64 = -9000000000,
        e: bool = true,
        f: String = "tanh",
        g: Vec<i64> = [1, -2, 3],
        h: Vec<f32>,
    )
)]
pub mod all_params {
    use super::*;

    #[infer_shape]
    fn infer_shape(x: &Shape, _p: &Params) -> Result<Shape, OpError> {
        Ok(x.clone())
    }

    #[infer_dtype]
    fn infer_dtype(x: DType, _p: &Params) -> Result<DType, OpError> {
        Ok(x)
    }

    #[reference]
    fn reference(x: &Tensor, _p: &Params) -> Result<Tensor, OpError> {
        Ok(x.clone())
    }
}

use all_params::Params;

fn sample() -> Params {
    Params {
        a: 1.5,
        b: 2.25,
        c: -3,
        d: 4,
        e: false,
        f: "erf".into(),
        g: vec![5],
        h: vec![0.5, 0.25],
    }
}

#[test]
fn params_round_trip_through_attributes() {
    let p = sample();
    let attrs = p.to_attributes();
    assert_eq!(attrs.len(), 8);
    assert_eq!(attrs["b"], AttrValue::F64(2.25));
    assert_eq!(attrs["g"], AttrValue::I64s(vec![5]));
    assert_eq!(Params::from_attributes(&attrs).unwrap(), p);
}

#[test]
fn absent_params_take_their_defaults_and_required_ones_are_named() {
    let mut attrs = Attributes::new();
    attrs.insert("b".into(), AttrValue::F64(1.0));
    attrs.insert("h".into(), AttrValue::F32s(vec![]));
    let p = Params::from_attributes(&attrs).unwrap();
    assert_eq!((p.a, p.c, p.d, p.e), (-0.5, 7, -9_000_000_000, true));
    assert_eq!((p.f.as_str(), p.g.as_slice()), ("tanh", &[1, -2, 3][..]));

    attrs.remove("h");
    let err = Params::from_attributes(&attrs).unwrap_err();
    assert_eq!(
        err.to_string(),
        "op `test.all_params`: param `h`: missing: it has no default, so every call must set \
         a value of type Vec<f32>"
    );
}

#[test]
fn params_serialize_with_serde() {
    let json = serde_json::to_string(&sample()).unwrap();
    assert_eq!(
        json,
        r#"{"a":1.5,"b":2.25,"c":-3,"d":4,"e":false,"f":"erf","g":[5],"h":[0.5,0.25]}"#
    );
    assert_eq!(serde_json::from_str::<Params>(&json).unwrap(), sample());
    let unknown = serde_json::from_str::<Params>(&json.replace("\"a\"", "\"z\""));
    assert!(unknown.is_err());
}

#[test]
fn the_schema_lists_types_and_defaults_in_declaration_order() {
    let schema = all_params::def().schema();
    let listed: Vec<(String, String, Option<AttrValue>)> = schema
        .params
        .into_iter()
        .map(|p| (p.name, p.ty.to_string(), p.default))
        .collect();
    assert_eq!(
        listed,
        vec![
            ("a".into(), "f32".into(), Some(AttrValue::F32(-0.5))),
            ("b".into(), "f64".into(), None),
            ("c".into(), "i32".into(), Some(AttrValue::I32(7))),
            (
                "d".into(),
                "i64".into(),
                Some(AttrValue::I64(-9_000_000_000))
            ),
            ("e".into(), "bool".into(), Some(AttrValue::Bool(true))),
            (
                "f".into(),
                "String".into(),
                Some(AttrValue::String("tanh".into()))
            ),
            (
                "g".into(),
                "Vec<i64>".into(),
                Some(AttrValue::I64s(vec![1, -2, 3]))
            ),
            ("h".into(), "Vec<f32>".into(), None),
        ]
    );
}

//! The serialized schemas of the example ops, pinned.

use pto_examples::{gelu_affine, moments};

#[test]
fn gelu_affine_schema() {
    insta::assert_snapshot!(gelu_affine::def().schema().to_json_pretty());
}

#[test]
fn moments_schema() {
    insta::assert_snapshot!(moments::def().schema().to_json_pretty());
}

#[test]
fn schemas_parse_back() {
    for def in [gelu_affine::def(), moments::def()] {
        let schema = def.schema();
        let parsed: pto_op::OpSchema = serde_json::from_str(&schema.to_json_pretty()).unwrap();
        assert_eq!(parsed, schema);
    }
}

//! The fingerprint changes with the signature (inputs, outputs, params and their types) and
//! with nothing else.
//!
//! The ops here share names on purpose, to compare versions of one op; this binary never
//! uses the registry, which would refuse them.

use pto_op::prelude::*;
use pto_op::{Fingerprint, OpDef};

macro_rules! identity_op {
    ($module:ident, $($args:tt)*) => {
        /// One version of `fp.op`.
        #[custom_op($($args)*)]
        pub mod $module {
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
    };
}

identity_op!(base, name = "fp.op", params(k: f32 = 1.0));
identity_op!(retyped, name = "fp.op", params(k: f64 = 1.0));
identity_op!(renamed_param, name = "fp.op", params(scale: f32 = 1.0));
identity_op!(extra_param, name = "fp.op", params(k: f32 = 1.0, flag: bool = false));
identity_op!(new_default, name = "fp.op", params(k: f32 = 2.0));
identity_op!(new_version, name = "fp.op", version = 2, params(k: f32 = 1.0));
identity_op!(renamed_output, name = "fp.op", params(k: f32 = 1.0), outputs(out));

fn fingerprint(def: &OpDef) -> Fingerprint {
    def.fingerprint()
}

#[test]
fn fingerprint_changes_when_a_param_type_changes() {
    assert_ne!(fingerprint(base::def()), fingerprint(retyped::def()));
}

#[test]
fn fingerprint_changes_with_param_names_and_outputs() {
    let base = fingerprint(base::def());
    assert_ne!(base, fingerprint(renamed_param::def()));
    assert_ne!(base, fingerprint(extra_param::def()));
    assert_ne!(base, fingerprint(renamed_output::def()));
}

#[test]
fn defaults_docs_and_versions_keep_the_fingerprint() {
    let base = fingerprint(base::def());
    assert_eq!(base, fingerprint(new_default::def()));
    assert_eq!(base, fingerprint(new_version::def()));
    assert_eq!(base::def().schema().fingerprint, base);
}

#[test]
fn fingerprint_is_the_hash_of_the_documented_signature_text() {
    assert_eq!(
        pto_op::schema::signature_text(retyped::def()),
        "fp.op(x) -> (y) params(k: f64)"
    );
    assert_eq!(
        fingerprint(retyped::def()),
        Fingerprint::of_signature("fp.op(x) -> (y) params(k: f64)")
    );
}

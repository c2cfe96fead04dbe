//! Two ops with one name: the registry refuses, at first use, naming both definitions.

use pto_op::RegistryError;
use pto_op::prelude::*;

/// The first definition.
#[custom_op(name = "dup.same")]
pub mod first {
    use super::*;

    #[infer_shape]
    fn infer_shape(x: &Shape) -> Result<Shape, OpError> {
        Ok(x.clone())
    }

    #[infer_dtype]
    fn infer_dtype(x: DType) -> Result<DType, OpError> {
        Ok(x)
    }

    #[reference]
    fn reference(x: &Tensor) -> Result<Tensor, OpError> {
        Ok(x.clone())
    }
}

/// The second definition, same name.
#[custom_op(name = "dup.same")]
pub mod second {
    use super::*;

    #[infer_shape]
    fn infer_shape(y: &Shape) -> Result<Shape, OpError> {
        Ok(y.clone())
    }

    #[infer_dtype]
    fn infer_dtype(y: DType) -> Result<DType, OpError> {
        Ok(y)
    }

    #[reference]
    fn reference(y: &Tensor) -> Result<Tensor, OpError> {
        Ok(y.clone())
    }
}

#[test]
fn duplicate_names_fail_at_first_use_naming_both() {
    let err = pto_op::registry::find("dup.same").unwrap_err();
    let RegistryError::Duplicate(duplicate) = &err else {
        panic!("expected a duplicate-name error, got {err}");
    };
    assert_eq!(duplicate.key, "`dup.same`");
    assert_eq!(duplicate.kind, "op");
    let mut modules = [duplicate.first.module_path, duplicate.second.module_path];
    modules.sort_unstable();
    assert_eq!(
        modules,
        ["duplicate_names::first", "duplicate_names::second"]
    );
    let message = err.to_string();
    assert!(
        message.starts_with("two op registrations of `dup.same`: one in duplicate_names::"),
        "{message}"
    );
    assert!(message.contains("duplicate_names.rs:"), "{message}");
    // Every later use fails the same way, and any other lookup too: the program is ambiguous.
    assert_eq!(pto_op::registry::ops().unwrap_err(), err);
}

#[test]
fn each_module_still_knows_its_own_definition() {
    assert_eq!(first::def().inputs, ["x"]);
    assert_eq!(second::def().inputs, ["y"]);
}

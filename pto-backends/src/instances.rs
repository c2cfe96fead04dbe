//! What a kernel target prepares once per op instance (the op, its input types, its
//! attributes) and reuses for every call: the simulator's traced programs, the Ascend C
//! host's compiled builds. A kernel shipped with a model replaces the instance's entry.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use pto_op::{Attributes, OpDef, TensorType};

/// An op instance: the op's name, the input types and the attributes as their `Debug` text,
/// which is exact (every f32 and f64 prints distinctly) and cannot fail.
type InstanceKey = (String, Vec<TensorType>, String);

/// Entries of type `T` by op instance, shared by the threads that run a compiled model.
#[derive(Debug)]
pub(crate) struct InstanceCache<T> {
    entries: Mutex<HashMap<InstanceKey, Arc<T>>>,
}

impl<T> InstanceCache<T> {
    /// An empty cache.
    pub(crate) fn new() -> InstanceCache<T> {
        InstanceCache {
            entries: Mutex::new(HashMap::new()),
        }
    }

    fn key(op: &OpDef, types: &[TensorType], attrs: &Attributes) -> InstanceKey {
        (op.name.to_owned(), types.to_vec(), format!("{attrs:?}"))
    }

    fn entries(&self) -> MutexGuard<'_, HashMap<InstanceKey, Arc<T>>> {
        // An entry is inserted whole, so a panic elsewhere leaves the map consistent.
        self.entries.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The entry of the instance, else the one `make` makes, kept. A failure is not kept:
    /// the next call reports it again, whole. The lock is not held while `make` runs.
    pub(crate) fn get_or_try_insert_with<E>(
        &self,
        op: &OpDef,
        types: &[TensorType],
        attrs: &Attributes,
        make: impl FnOnce() -> Result<T, E>,
    ) -> Result<Arc<T>, E> {
        let key = Self::key(op, types, attrs);
        if let Some(entry) = self.entries().get(&key) {
            return Ok(Arc::clone(entry));
        }
        let entry = Arc::new(make()?);
        self.entries().insert(key, Arc::clone(&entry));
        Ok(entry)
    }

    /// Keeps `value` for the instance from now on, in place of any entry it had (a shipped
    /// kernel in place of the op's own).
    pub(crate) fn insert(
        &self,
        op: &OpDef,
        types: &[TensorType],
        attrs: &Attributes,
        value: T,
    ) -> Arc<T> {
        let entry = Arc::new(value);
        self.entries()
            .insert(Self::key(op, types, attrs), Arc::clone(&entry));
        entry
    }
}

#[cfg(test)]
mod tests {
    use pto_op::{AttrValue, DType, Shape};

    use super::*;

    #[test]
    fn instances_differ_by_op_types_and_every_bit_of_an_attribute() {
        let cache = InstanceCache::<u32>::new();
        let (add, relu) = (pto_op::ops::add::def(), pto_op::ops::relu::def());
        let f32s = |dims: &[usize]| {
            vec![TensorType {
                shape: Shape::from(dims),
                dtype: DType::F32,
            }]
        };
        let attrs = |v: f32| Attributes::from([("v".to_owned(), AttrValue::F32(v))]);
        let mut made = 0;
        let mut get = |op, types: &[TensorType], a: &Attributes| {
            *cache
                .get_or_try_insert_with(op, types, a, || {
                    made += 1;
                    Ok::<_, ()>(made)
                })
                .unwrap()
        };
        assert_eq!(get(add, &f32s(&[4]), &attrs(0.1)), 1);
        assert_eq!(
            get(add, &f32s(&[4]), &attrs(0.1)),
            1,
            "found, not made again"
        );
        assert_eq!(get(relu, &f32s(&[4]), &attrs(0.1)), 2);
        assert_eq!(get(add, &f32s(&[8]), &attrs(0.1)), 3);
        assert_eq!(
            get(
                add,
                &f32s(&[4]),
                &attrs(f32::from_bits(0.1f32.to_bits() + 1))
            ),
            4
        );
        assert_eq!(get(add, &f32s(&[4]), &attrs(-0.0)), 5);
        assert_eq!(get(add, &f32s(&[4]), &attrs(0.0)), 6);
        assert_eq!(get(add, &f32s(&[4]), &Attributes::new()), 7);
    }

    #[test]
    fn failures_are_not_kept_and_insert_replaces() {
        let cache = InstanceCache::<u32>::new();
        let (op, types, attrs) = (pto_op::ops::relu::def(), [], Attributes::new());
        let failed = cache.get_or_try_insert_with(op, &types, &attrs, || Err("no"));
        assert_eq!(failed, Err("no"));
        let made = cache.get_or_try_insert_with(op, &types, &attrs, || Ok::<_, ()>(1));
        assert_eq!(made.map(|e| *e), Ok(1));
        assert_eq!(*cache.insert(op, &types, &attrs, 2), 2);
        let found = cache.get_or_try_insert_with(op, &types, &attrs, || Ok::<_, ()>(3));
        assert_eq!(found.map(|e| *e), Ok(2));
    }
}

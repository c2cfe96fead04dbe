//! The ids of a program's entities (tiles, loop variables, globals) and the tables they
//! index.
//!
//! An id is a `u32` newtype with a private field, as cranelift's entity references: built
//! with `new` (or `from_index` where the caller counts in `usize`), read with `index` (or
//! `as_u32`). A table of values by id is an [`IdVec`], indexed by the id itself, so no
//! code converts ids to positions by hand. The serialized form of an id is its number
//! (a newtype struct), of an [`IdVec`] the sequence of its values.

use std::fmt;
use std::marker::PhantomData;
use std::ops::{Index, IndexMut};

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// An id that indexes an [`IdVec`]: a position, from 0.
pub trait EntityId: Copy {
    /// The id of position `index`.
    ///
    /// # Panics
    ///
    /// When `index` does not fit in the id's `u32`.
    fn from_index(index: usize) -> Self;

    /// The id's position.
    fn index(self) -> usize;
}

macro_rules! entity_id {
    ($(#[$meta:meta])* $name:ident, $prefix:literal) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
        pub struct $name(u32);

        impl $name {
            /// The id numbered `n`.
            pub const fn new(n: u32) -> Self {
                Self(n)
            }

            /// The id of position `index`.
            ///
            /// # Panics
            ///
            /// When `index` does not fit in a `u32`.
            pub fn from_index(index: usize) -> Self {
                match u32::try_from(index) {
                    Ok(n) => Self(n),
                    Err(_) => panic!(concat!(stringify!($name), " index {} past u32"), index),
                }
            }

            /// The id's position (its number).
            pub const fn index(self) -> usize {
                let Self(n) = self;
                n as usize
            }

            /// The id's number.
            pub const fn as_u32(self) -> u32 {
                self.0
            }
        }

        impl EntityId for $name {
            fn from_index(index: usize) -> Self {
                $name::from_index(index)
            }

            fn index(self) -> usize {
                $name::index(self)
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, concat!($prefix, "{}"), self.0)
            }
        }
    };
}

entity_id!(
    /// A tile: an SSA value of a program. Printed `%N`.
    TileId,
    "%"
);

entity_id!(
    /// A loop variable. Printed `iN`.
    VarId,
    "i"
);

entity_id!(
    /// A global tensor of a program (an op input or output), by position in
    /// [`Program::globals`](super::Program::globals). Printed `@N`.
    GlobalId,
    "@"
);

/// A table of `V`s by id `K`: a `Vec<V>` indexed by `K` (`table[id]`), whose positions
/// are ids ([`IdVec::push`], [`IdVec::iter_enumerated`]).
pub struct IdVec<K, V> {
    items: Vec<V>,
    key: PhantomData<fn(K) -> K>,
}

impl<K: EntityId, V> IdVec<K, V> {
    /// An empty table.
    pub const fn new() -> Self {
        IdVec {
            items: Vec::new(),
            key: PhantomData,
        }
    }

    /// A table of `len` copies of `value`, for ids 0 to `len - 1`.
    pub fn filled(len: usize, value: V) -> Self
    where
        V: Clone,
    {
        vec![value; len].into()
    }

    /// Appends `value`; returns its id.
    pub fn push(&mut self, value: V) -> K {
        let id = K::from_index(self.items.len());
        self.items.push(value);
        id
    }

    /// The number of entries.
    pub fn len(&self) -> usize {
        self.items.len()
    }

    /// Whether the table is empty.
    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    /// The entry of `id`, if the table has one.
    pub fn get(&self, id: K) -> Option<&V> {
        self.items.get(id.index())
    }

    /// The entry of `id`, mutably, if the table has one.
    pub fn get_mut(&mut self, id: K) -> Option<&mut V> {
        self.items.get_mut(id.index())
    }

    /// The entries in id order.
    pub fn iter(&self) -> std::slice::Iter<'_, V> {
        self.items.iter()
    }

    /// The entries in id order, mutably.
    pub fn iter_mut(&mut self) -> std::slice::IterMut<'_, V> {
        self.items.iter_mut()
    }

    /// The ids and their entries, in id order.
    pub fn iter_enumerated(&self) -> impl DoubleEndedIterator<Item = (K, &V)> + '_ {
        self.items
            .iter()
            .enumerate()
            .map(|(i, v)| (K::from_index(i), v))
    }

    /// The ids of the table, in order.
    pub fn keys(&self) -> impl DoubleEndedIterator<Item = K> + use<K, V> {
        (0..self.items.len()).map(K::from_index)
    }

    /// The entries as a slice, in id order.
    pub fn as_slice(&self) -> &[V] {
        &self.items
    }

    /// The entries as a `Vec`, in id order.
    pub fn into_vec(self) -> Vec<V> {
        self.items
    }
}

impl<K: EntityId, V> Default for IdVec<K, V> {
    fn default() -> Self {
        IdVec::new()
    }
}

impl<K, V: Clone> Clone for IdVec<K, V> {
    fn clone(&self) -> Self {
        IdVec {
            items: self.items.clone(),
            key: PhantomData,
        }
    }
}

impl<K, V: fmt::Debug> fmt::Debug for IdVec<K, V> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.items.fmt(f)
    }
}

impl<K, V: PartialEq> PartialEq for IdVec<K, V> {
    fn eq(&self, other: &Self) -> bool {
        self.items == other.items
    }
}

impl<K, V: Eq> Eq for IdVec<K, V> {}

impl<K, V> From<Vec<V>> for IdVec<K, V> {
    fn from(items: Vec<V>) -> Self {
        IdVec {
            items,
            key: PhantomData,
        }
    }
}

impl<K, V> FromIterator<V> for IdVec<K, V> {
    fn from_iter<I: IntoIterator<Item = V>>(iter: I) -> Self {
        Vec::from_iter(iter).into()
    }
}

impl<K: EntityId, V> Index<K> for IdVec<K, V> {
    type Output = V;

    fn index(&self, id: K) -> &V {
        &self.items[id.index()]
    }
}

impl<K: EntityId, V> IndexMut<K> for IdVec<K, V> {
    fn index_mut(&mut self, id: K) -> &mut V {
        &mut self.items[id.index()]
    }
}

impl<K, V> IntoIterator for IdVec<K, V> {
    type Item = V;
    type IntoIter = std::vec::IntoIter<V>;

    fn into_iter(self) -> Self::IntoIter {
        self.items.into_iter()
    }
}

impl<'a, K, V> IntoIterator for &'a IdVec<K, V> {
    type Item = &'a V;
    type IntoIter = std::slice::Iter<'a, V>;

    fn into_iter(self) -> Self::IntoIter {
        self.items.iter()
    }
}

impl<'a, K, V> IntoIterator for &'a mut IdVec<K, V> {
    type Item = &'a mut V;
    type IntoIter = std::slice::IterMut<'a, V>;

    fn into_iter(self) -> Self::IntoIter {
        self.items.iter_mut()
    }
}

impl<K, V: Serialize> Serialize for IdVec<K, V> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.items.serialize(serializer)
    }
}

impl<'de, K, V: Deserialize<'de>> Deserialize<'de> for IdVec<K, V> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Vec::deserialize(deserializer).map(IdVec::from)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_print_and_serialize_as_their_number() {
        let t = TileId::new(3);
        assert_eq!((t.to_string(), t.index(), t.as_u32()), ("%3".into(), 3, 3));
        assert_eq!(VarId::from_index(0).to_string(), "i0");
        assert_eq!(GlobalId::new(1).to_string(), "@1");
        assert_eq!(serde_json::to_string(&t).unwrap(), "3");
        assert_eq!(serde_json::from_str::<TileId>("3").unwrap(), t);
    }

    #[test]
    fn tables_are_indexed_by_id() {
        let mut table: IdVec<TileId, &str> = IdVec::new();
        let a = table.push("a");
        let b = table.push("b");
        assert_eq!((a, b), (TileId::new(0), TileId::new(1)));
        table[b] = "c";
        assert_eq!(table.get(TileId::new(2)), None);
        let pairs: Vec<_> = table.iter_enumerated().collect();
        assert_eq!(pairs, vec![(a, &"a"), (b, &"c")]);
        assert_eq!(serde_json::to_string(&table).unwrap(), r#"["a","c"]"#);
    }
}

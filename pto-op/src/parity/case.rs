//! A parity case as data: the inputs' types, the params, the seed of the inputs' values and
//! an optional tolerance; what `#[parity(..)]` declares and an `OpDef` carries.

use core::fmt;

use crate::attr::Attributes;
use crate::tensor::Tensor;
use crate::tolerance::Tolerance;
use pto_types::TensorType;

/// One parity case: the inputs' types, the params, a seed for the inputs' values and,
/// optionally, a tolerance for this case alone.
///
/// ```
/// use pto_op::parity::ParityCase;
/// use pto_op::{AttrValue, Attributes, DType, Shape, TensorType, Tolerance};
/// let case = ParityCase {
///     inputs: vec![TensorType { shape: Shape::from([4, 64]), dtype: DType::F16 }],
///     attrs: Attributes::from([("eps".to_owned(), AttrValue::F32(1e-5))]),
///     ranges: Vec::new(),
///     seed: 7,
///     tolerance: Some(Tolerance::new(2e-3, 1e-3)),
/// };
/// assert_eq!(case.to_string(), "f16[4, 64], eps=1e-5, seed 7, rtol 2e-3, atol 1e-3");
/// assert_eq!(
///     case.describe(&["x"]),
///     "x=f16[4, 64], eps=1e-5, seed 7, rtol 2e-3, atol 1e-3"
/// );
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct ParityCase {
    /// The type of each input of the op, in order.
    pub inputs: Vec<TensorType>,
    /// The params the case sets; the others take their defaults.
    pub attrs: Attributes,
    /// Per input, in order, the half-open range `[low, high)` its values are drawn from
    /// (`#[parity(w = i8[128, 64] in -128..128)]`); `None`, or an input past the end, takes
    /// [`Tensor::random`]'s range for its dtype.
    pub ranges: Vec<Option<(f64, f64)>>,
    /// The seed of the inputs' values (see [`check_parity`](super::check_parity)). A `#[parity]` case that does
    /// not set `seed` gets [`case_seed`] of its own text, so adding, removing or reordering
    /// cases leaves the inputs of every other case as they were.
    pub seed: u64,
    /// A tolerance for this case, overriding the op's; `None` uses the op's.
    pub tolerance: Option<Tolerance>,
}

impl ParityCase {
    /// The case with its inputs named, `x=f16[4, 64], gamma=f16[64], eps=1e-5, seed 7`.
    /// Inputs beyond `names` are shown by type only.
    pub fn describe(&self, names: &[&str]) -> String {
        let mut parts: Vec<String> = self
            .inputs
            .iter()
            .enumerate()
            .map(|(i, t)| {
                let range = match self.range(i) {
                    Some((low, high)) => format!(" in {low}..{high}"),
                    None => String::new(),
                };
                match names.get(i) {
                    Some(name) => format!("{name}={t}{range}"),
                    None => format!("{t}{range}"),
                }
            })
            .collect();
        parts.extend(self.attrs.iter().map(|(k, v)| format!("{k}={v}")));
        parts.push(format!("seed {}", self.seed));
        if let Some(tolerance) = self.tolerance {
            parts.push(tolerance.to_string());
        }
        parts.join(", ")
    }

    /// The range input `index`'s values are drawn from, when the case gives one.
    pub fn range(&self, index: usize) -> Option<(f64, f64)> {
        self.ranges.get(index).copied().flatten()
    }

    /// The values of input `index`: `Tensor::random(shape, dtype, seed * 1000 + index)`
    /// (wrapping), or `Tensor::random_uniform` with the same seed over the input's
    /// [`range`](ParityCase::range) when it has one, so the inputs of one case differ from
    /// each other, and cases with different seeds below 2^54 share no inputs for ops of
    /// fewer than 1000 inputs (two default seeds, 64-bit hashes, meet with negligible odds).
    pub fn input_values(&self) -> Vec<Tensor> {
        self.inputs
            .iter()
            .zip(0u64..)
            .enumerate()
            .map(|(i, (t, index))| {
                let seed = self.seed.wrapping_mul(1000).wrapping_add(index);
                match self.range(i) {
                    Some((low, high)) => {
                        Tensor::random_uniform(t.shape.clone(), t.dtype, seed, low, high)
                    }
                    None => Tensor::random(t.shape.clone(), t.dtype, seed),
                }
            })
            .collect()
    }
}

/// The seed of a `#[parity]` case that does not set `seed`: the 64-bit FNV-1a hash of
/// `case_text`, the case's inputs and params as `name=value`, sorted by name, joined by `,`,
/// without whitespace (`seed`, `rtol` and `atol` are left out, so loosening a case's
/// tolerance keeps its inputs). `#[custom_op]` writes that text; it depends on nothing but the
/// case, so the seed is stable when other cases are added, removed or reordered.
///
/// ```
/// use pto_op::parity::case_seed;
/// // #[parity(x = f16[4, 64], gamma = f16[64], eps = 1e-5)]
/// let seed = case_seed("eps=1e-5,gamma=f16[64],x=f16[4,64]");
/// assert_eq!(seed, case_seed("eps=1e-5,gamma=f16[64],x=f16[4,64]"));
/// assert_ne!(seed, case_seed("eps=1e-5,gamma=f16[64],x=f16[4,65]"));
/// assert_eq!(case_seed(""), 0xcbf2_9ce4_8422_2325); // FNV-1a's offset basis
/// ```
pub fn case_seed(case_text: &str) -> u64 {
    const OFFSET_BASIS: u64 = 0xcbf2_9ce4_8422_2325;
    const PRIME: u64 = 0x0000_0100_0000_01b3;
    case_text.bytes().fold(OFFSET_BASIS, |hash, byte| {
        (hash ^ u64::from(byte)).wrapping_mul(PRIME)
    })
}

impl fmt::Display for ParityCase {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.describe(&[]))
    }
}

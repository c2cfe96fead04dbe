//! Shape sweeps: the sizes at which an op is timed when its performance model is measured
//! against a reference (`pto accuracy`) or fitted to one (`pto calibrate`).
//!
//! The engine knows no op: each op (or its crate) registers its own sweep with
//! [`register_sweep!`](crate::register_sweep), next to the op, and the accuracy and
//! calibration commands run over every linked op that has a kernel and a sweep. A sweep is
//! an ordered list of input types, smallest first, called with the op's default params;
//! the tools split it into alternate sizes for training and held-out evaluation, so twelve
//! sizes give six of each.
//!
//! ```
//! use pto_op::sweep::{self, SweepDef};
//! pto_op::register_sweep!(DOC_ADD_SWEEP, SweepDef {
//!     op: "doc.add",
//!     sizes: || sweep::rows_cols(|r, c| vec![vec![r, c], vec![r, c]]),
//!     location: pto_op::source_location!(),
//! });
//! let sweep = sweep::find("doc.add").unwrap().unwrap();
//! assert_eq!((sweep.sizes)().len(), 12);
//! ```

use crate::dtype::DType;
use crate::op::{SourceLocation, TensorType};
use crate::registration::{DuplicateRegistration, Quoted, Registered, check_unique};
use crate::shape::Shape;

/// A registered shape sweep of one op.
#[derive(Debug)]
pub struct SweepDef {
    /// The op's name (its module's `NAME`).
    pub op: &'static str,
    /// The input types of each size, smallest first; the op's default params.
    pub sizes: fn() -> Vec<Vec<TensorType>>,
    /// Where the registration is ([`source_location!`](crate::source_location)).
    pub location: SourceLocation,
}

#[doc(hidden)]
#[linkme::distributed_slice]
pub static SWEEPS: [SweepDef];

/// Registers a shape sweep of an op (see the [module](self) documentation).
#[macro_export]
macro_rules! register_sweep {
    ($static_name:ident, $def:expr) => {
        #[$crate::__private::linkme::distributed_slice($crate::__private::SWEEPS)]
        #[linkme(crate = $crate::__private::linkme)]
        static $static_name: $crate::sweep::SweepDef = $def;
    };
}

impl Registered for SweepDef {
    type Key = Quoted;

    fn key(&self) -> Quoted {
        Quoted(self.op)
    }

    fn kind(&self) -> String {
        "shape sweep".to_owned()
    }

    fn location(&self) -> SourceLocation {
        self.location
    }

    fn rename_advice(&self) -> &'static str {
        "remove one of them (an op has one sweep)"
    }
}

/// Every linked sweep, ordered by op name.
///
/// # Errors
///
/// [`DuplicateRegistration`] when two registrations name one op, naming both places.
pub fn sweeps() -> Result<Vec<&'static SweepDef>, Box<DuplicateRegistration>> {
    // Keys are ordered by op name, so the sweeps are too.
    Ok(check_unique(&SWEEPS[..])?
        .into_values()
        .map(|at| &SWEEPS[at])
        .collect())
}

/// The sweep of `op`, if one is linked.
///
/// # Errors
///
/// [`DuplicateRegistration`] when two registrations name one op.
pub fn find(op: &str) -> Result<Option<&'static SweepDef>, Box<DuplicateRegistration>> {
    Ok(sweeps()?.into_iter().find(|s| s.op == op))
}

/// Rows x columns of row-wise ops (element-wise, normalizations, softmax), smallest
/// first: single rows (decode) to 4096 x 4096, hidden sizes of small and 7B models, and
/// sizes that are no multiple of a tile (37 x 1000, 100 x 3000).
pub const ROWS_COLS: [[usize; 2]; 12] = [
    [1, 1000],
    [8, 768],
    [16, 1024],
    [37, 1000],
    [64, 2048],
    [100, 3000],
    [128, 4096],
    [250, 4000],
    [512, 4096],
    [1000, 4096],
    [2048, 4096],
    [4096, 4096],
];

/// `m, k, n` of matrix products, by multiply-accumulates: GEMV (decode) to prefill
/// projections; 100 x 700 x 300 and 1000 x 1000 x 4000 are no multiples of a tile.
pub const MATMUL: [[usize; 3]; 12] = [
    [1, 512, 512],
    [16, 512, 512],
    [1, 4096, 4096],
    [100, 700, 300],
    [64, 768, 768],
    [128, 1024, 1024],
    [200, 1000, 1000],
    [256, 2048, 512],
    [512, 1024, 1024],
    [512, 2048, 2048],
    [1000, 1000, 4000],
    [1024, 4096, 4096],
];

/// f16 tensors of `shapes`: the sweeps' dtype.
pub fn f16(shapes: Vec<Vec<usize>>) -> Vec<TensorType> {
    shapes
        .into_iter()
        .map(|dims| TensorType {
            shape: Shape::from(dims),
            dtype: DType::F16,
        })
        .collect()
}

/// The f16 inputs of a row-wise op at each of [`ROWS_COLS`]: `inputs(rows, cols)` gives
/// the input shapes.
pub fn rows_cols(inputs: fn(usize, usize) -> Vec<Vec<usize>>) -> Vec<Vec<TensorType>> {
    ROWS_COLS.iter().map(|&[r, c]| f16(inputs(r, c))).collect()
}

/// The f16 inputs `[m, k] x [k, n]` of a matrix product at each of [`MATMUL`].
pub fn matmul() -> Vec<Vec<TensorType>> {
    MATMUL
        .iter()
        .map(|&[m, k, n]| f16(vec![vec![m, k], vec![k, n]]))
        .collect()
}

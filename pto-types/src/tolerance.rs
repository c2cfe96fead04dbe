//! How close an actual tensor must be to an expected one.

use core::fmt;
use std::collections::BTreeMap;
use std::sync::OnceLock;

use serde::{Deserialize, Serialize};

use crate::dtype::DType;

/// The allowed difference between an actual and an expected element: `actual` passes when
/// `|actual - expected| <= atol + rtol * |expected|`, the rule of `torch.testing.assert_close`.
///
/// ```
/// use pto_types::{DType, Tolerance};
/// let tol = Tolerance::for_dtype(DType::F16);
/// assert_eq!(tol, Tolerance::new(1e-3, 1e-5));
/// assert_eq!(tol.to_string(), "rtol 1e-3, atol 1e-5");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Tolerance {
    /// The allowed difference relative to `|expected|`.
    pub rtol: f64,
    /// The allowed absolute difference.
    pub atol: f64,
}

impl Tolerance {
    /// No difference allowed.
    pub const EXACT: Tolerance = Tolerance::new(0.0, 0.0);

    /// A tolerance of `rtol` relative and `atol` absolute difference.
    ///
    /// # Panics
    ///
    /// If either value is negative or NaN: such a tolerance would fail every element.
    pub const fn new(rtol: f64, atol: f64) -> Tolerance {
        assert!(
            rtol >= 0.0 && atol >= 0.0,
            "rtol and atol must be non-negative numbers"
        );
        Tolerance { rtol, atol }
    }

    /// The default tolerance for results of dtype `dtype`, the defaults of
    /// `torch.testing.assert_close`; exact for integers and bool.
    pub fn for_dtype(dtype: DType) -> Tolerance {
        // `parse_table` checks that every dtype has an entry, so the lookup cannot miss.
        *table()
            .get(&dtype)
            .expect("the tolerance table has an entry for every dtype")
    }

    /// The tolerance that accepts what either accepts: the larger rtol and the larger atol.
    ///
    /// ```
    /// use pto_types::Tolerance;
    /// let t = Tolerance::new(1e-3, 0.0).looser(Tolerance::new(0.0, 1e-5));
    /// assert_eq!(t, Tolerance::new(1e-3, 1e-5));
    /// ```
    pub fn looser(self, other: Tolerance) -> Tolerance {
        Tolerance {
            rtol: self.rtol.max(other.rtol),
            atol: self.atol.max(other.atol),
        }
    }
}

impl fmt::Display for Tolerance {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "rtol {}, atol {}", Sci(self.rtol), Sci(self.atol))
    }
}

/// Shortest scientific notation (`1e-3`, `1.3e-6`), but plain `0` for zero.
struct Sci(f64);

impl fmt::Display for Sci {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0 == 0.0 {
            f.write_str("0")
        } else {
            write!(f, "{:e}", self.0)
        }
    }
}

const TOLERANCES_JSON: &str = include_str!("../data/tolerances.json");

/// The layout of `data/tolerances.json`: a `source` note and one entry per dtype name.
#[derive(Deserialize)]
struct TolerancesFile {
    source: String,
    #[serde(flatten)]
    by_dtype: BTreeMap<DType, Tolerance>,
}

fn table() -> &'static BTreeMap<DType, Tolerance> {
    static TABLE: OnceLock<BTreeMap<DType, Tolerance>> = OnceLock::new();
    TABLE.get_or_init(|| {
        // The file is compiled in and the tests parse it, so a failure here is a build defect.
        parse_table(TOLERANCES_JSON)
            .unwrap_or_else(|e| panic!("data/tolerances.json is invalid: {e}"))
    })
}

fn parse_table(json: &str) -> Result<BTreeMap<DType, Tolerance>, String> {
    let file: TolerancesFile = serde_json::from_str(json).map_err(|e| e.to_string())?;
    if file.source.trim().is_empty() {
        return Err("`source` must say where the numbers come from".to_owned());
    }
    if let Some(missing) = DType::ALL
        .into_iter()
        .find(|d| !file.by_dtype.contains_key(d))
    {
        return Err(format!("no entry for dtype {missing}"));
    }
    if let Some((dtype, tol)) = file
        .by_dtype
        .iter()
        .find(|(_, t)| !(t.rtol >= 0.0 && t.atol >= 0.0))
    {
        return Err(format!("{dtype}: {tol} is not a non-negative tolerance"));
    }
    Ok(file.by_dtype)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_dtype_has_an_entry_with_torch_defaults() {
        let table = parse_table(TOLERANCES_JSON).expect("the shipped file parses");
        for d in DType::ALL {
            assert!(table.contains_key(&d), "no tolerance for {d}");
        }
        assert_eq!(table.len(), DType::ALL.len());
        assert_eq!(
            Tolerance::for_dtype(DType::F32),
            Tolerance::new(1.3e-6, 1e-5)
        );
        assert_eq!(Tolerance::for_dtype(DType::F16), Tolerance::new(1e-3, 1e-5));
        assert_eq!(
            Tolerance::for_dtype(DType::BF16),
            Tolerance::new(1.6e-2, 1e-5)
        );
        for d in DType::ALL.into_iter().filter(|d| !d.is_float()) {
            assert_eq!(Tolerance::for_dtype(d), Tolerance::EXACT, "{d}");
        }
    }

    #[test]
    fn bad_files_are_rejected() {
        let missing = r#"{"source": "x", "f32": {"rtol": 0, "atol": 0}}"#;
        assert_eq!(
            parse_table(missing),
            Err("no entry for dtype f16".to_owned())
        );
        let unknown = r#"{"source": "x", "f128": {"rtol": 0, "atol": 0}}"#;
        assert!(parse_table(unknown).is_err());
        let typo = r#"{"source": "x", "f32": {"rtol": 0, "atoll": 0}}"#;
        assert!(parse_table(typo).is_err());
        let no_source = TOLERANCES_JSON.replacen("\"source\"", "\"sauce\"", 1);
        assert!(parse_table(&no_source).is_err());
    }

    #[test]
    fn display_and_looser() {
        assert_eq!(Tolerance::EXACT.to_string(), "rtol 0, atol 0");
        assert_eq!(
            Tolerance::new(1.3e-6, 1e-5).to_string(),
            "rtol 1.3e-6, atol 1e-5"
        );
        let a = Tolerance::new(1e-3, 1e-7);
        let b = Tolerance::new(1e-4, 1e-5);
        assert_eq!(a.looser(b), Tolerance::new(1e-3, 1e-5));
        assert_eq!(a.looser(b), b.looser(a));
    }

    #[test]
    #[should_panic(expected = "non-negative")]
    fn negative_tolerance_panics() {
        let _ = Tolerance::new(-1.0, 0.0);
    }
}

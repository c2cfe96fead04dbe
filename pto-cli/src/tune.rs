//! `pto tune`: an op's kernel tiling searched for one shape and device on the tile
//! simulator ([`pto_backends::sim::tune`]). `std.matmul` only: its base tiles and staged
//! K-steps.

use pto_backends::sim::tune::{MATMUL, MatmulTuning, tune_matmul};
use pto_op::DType;

use crate::edge;
use crate::error::CliError;

/// Tunes `op` for `shape` (`MxKxN`) of `dtype` on the device `--device` names (else
/// `PTO_DEVICE`, else the default profile).
///
/// # Errors
///
/// [`CliError::Tune`] for an op other than `std.matmul`, a malformed shape or dtype, or a
/// failed search; [`CliError::Device`] when the profile does not load.
pub fn tune(
    op: &str,
    device: Option<&str>,
    shape: &str,
    dtype: &str,
) -> Result<MatmulTuning, CliError> {
    let fail = |message: String| CliError::Tune {
        op: op.to_owned(),
        message,
    };
    if op != MATMUL {
        return Err(fail(format!(
            "only {MATMUL} can be tuned (its base tiles and staged K-steps); got `{op}`"
        )));
    }
    let dims = shape
        .split('x')
        .map(|d| d.trim().parse::<usize>())
        .collect::<Result<Vec<_>, _>>();
    let [m, k, n] = match dims.as_deref() {
        Ok(&[m, k, n]) => [m, k, n],
        _ => {
            return Err(fail(format!(
                "the shape is MxKxN (a [M, K] @ b [K, N]), three whole numbers, got `{shape}`"
            )));
        }
    };
    let dtype: DType = dtype
        .parse()
        .map_err(|e| fail(format!("--dtype `{dtype}`: {e}")))?;
    let profile = edge::device(device)?;
    tune_matmul(&profile, [m, k, n], dtype).map_err(|e| fail(e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::tune;
    use crate::error::CliError;

    #[test]
    fn tune_prints_every_candidate_and_the_choice() {
        let tuning = tune("std.matmul", Some("ascend910b"), "1024x4096x4096", "f16").unwrap();
        let text = tuning.to_string();
        assert!(text.contains("18 candidate tilings"), "{text}");
        assert!(text.contains("(the default)"), "{text}");
        assert!(
            text.lines().last().unwrap().starts_with("chosen: "),
            "{text}"
        );
        assert_eq!(text.lines().count(), 2 + tuning.candidates.len() + 1);
    }

    #[test]
    fn tune_refuses_other_ops_and_malformed_shapes_by_name() {
        for (op, shape, dtype, expected) in [
            ("std.add", "8x8x8", "f16", "only std.matmul can be tuned"),
            ("std.matmul", "8x8", "f16", "three whole numbers, got `8x8`"),
            ("std.matmul", "8xax8", "f16", "got `8xax8`"),
            ("std.matmul", "0x8x8", "f16", "above 0, got 0x8x8"),
            ("std.matmul", "8x8x8", "f17", "--dtype `f17`"),
        ] {
            let err = tune(op, Some("ascend910b"), shape, dtype).unwrap_err();
            assert!(matches!(err, CliError::Tune { .. }), "{err}");
            let message = err.to_string();
            assert!(
                message.starts_with(&format!("pto tune {op}: ")),
                "{message}"
            );
            assert!(message.contains(expected), "{message}");
        }
    }
}

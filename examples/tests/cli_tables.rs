//! The command line's tables keep their columns aligned for names longer than any built-in
//! one: columns are sized to their content. This test binary links an op and a model of its
//! own with long names (and not the example crates, so that no other test sees them).

use pto_cli::run;
use pto_op::models::ModelDef;
use pto_op::prelude::*;
use pto_op::{Graph, Model};

/// The op's name: longer than the 22 columns the tables once reserved.
const LONG_OP: &str = "test.an_operator_with_a_rather_long_name";

/// `y = 2 x`, reference only.
#[custom_op(name = "test.an_operator_with_a_rather_long_name")]
pub mod long_named {
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
        Ok(Tensor::from_array(x.to_f32_array().mapv(|v| 2.0 * v)).cast(x.dtype()))
    }
}

/// A direct estimate, so the op is listed by `pto estimators` too.
#[op_estimator(op = "test.an_operator_with_a_rather_long_name")]
fn long_named_estimate(_info: &OpInvokeInfo, device: &DeviceProfile) -> Estimate {
    Estimate::seconds(2.0 * device.estimator.static_seconds)
}

fn build() -> Result<Model, OpError> {
    let graph = Graph::new();
    let x = graph.input("x", Shape::from([4, 8]), DType::F32);
    let doubled = long_named::apply(&x, &long_named::Params {})?;
    let y = pto_op::ops::add::apply(&doubled, &x, &Default::default())?;
    graph.output(&y);
    graph.to_model(MODEL)
}

const MODEL: &str = "a-model-with-a-name-longer-than-sixteen";

pto_op::register_model!(
    LONG_NAMED_MODEL,
    ModelDef {
        name: MODEL,
        description: "the long-named op, then std.add",
        build,
        describe: None,
    }
);

// A short name beside the long one: the descriptions must still line up.
pto_op::register_model!(
    SHORT_NAMED_MODEL,
    ModelDef {
        name: "short",
        description: "the same model under a short name",
        build,
        describe: None,
    }
);

/// Where each whitespace-separated token of a line starts, and the token.
fn tokens(line: &str) -> Vec<(usize, &str)> {
    let mut out = Vec::new();
    let mut start = None;
    for (i, c) in line.char_indices() {
        match (c.is_whitespace(), start) {
            (false, None) => start = Some(i),
            (true, Some(s)) => {
                out.push((s, &line[s..i]));
                start = None;
            }
            _ => {}
        }
    }
    if let Some(s) = start {
        out.push((s, &line[s..]));
    }
    out
}

#[test]
fn ops_listing_aligns_the_version_column() {
    let out = run(["pto", "ops"]).unwrap();
    let rows: Vec<&str> = out.lines().skip(1).collect();
    assert!(rows.iter().any(|r| r.starts_with(LONG_OP)), "{out}");
    assert!(rows.len() > 1, "{out}");
    let version_at: Vec<usize> = rows.iter().map(|r| tokens(r)[1].0).collect();
    assert!(
        version_at.iter().all(|&at| at == LONG_OP.len() + 1),
        "the version column moves: {version_at:?}\n{out}"
    );
}

#[test]
fn estimators_listing_aligns_every_column() {
    let out = run(["pto", "estimators"]).unwrap();
    let mut lines = out.lines().skip(1);
    let header = lines.next().unwrap();
    let rows: Vec<&str> = lines.collect();
    assert!(rows.iter().any(|r| r.starts_with(LONG_OP)), "{out}");
    // op, device, level, kind, override: one word per cell in the header and the rows.
    let columns: Vec<usize> = tokens(header).iter().take(5).map(|t| t.0).collect();
    for row in &rows {
        let cells: Vec<usize> = tokens(row).iter().take(5).map(|t| t.0).collect();
        assert_eq!(cells, columns, "row {row:?} is not under the header\n{out}");
    }
}

#[test]
fn models_listing_aligns_the_descriptions() {
    let out = run(["pto", "models"]).unwrap();
    let rows: Vec<&str> = out.lines().skip(1).collect();
    assert_eq!(rows.len(), 2, "{out}");
    for row in rows {
        assert_eq!(tokens(row)[1], (MODEL.len() + 1, "the"), "{out}");
    }
}

#[test]
fn estimate_report_aligns_the_op_column() {
    let out = run(["pto", "estimate", MODEL, "--device", "kirin9030"]).unwrap();
    let mut lines = out.lines().skip(1);
    let header = lines.next().unwrap();
    // The header's cells: node, op, time (us), share, bound, source.
    let bound_at = header.find("bound").unwrap();
    let time_end = header.find("time (us)").unwrap() + "time (us)".len();
    let rows: Vec<&str> = lines.take(2).collect();
    assert!(rows[0].contains(LONG_OP), "{out}");
    for row in rows {
        let cells = tokens(row);
        // node, op, time, share, bound: the time ends under the header's, the bound starts
        // under it.
        assert_eq!(cells[2].0 + cells[2].1.len(), time_end, "{row:?}\n{out}");
        assert_eq!(cells[4].0, bound_at, "{row:?}\n{out}");
    }
}

#[test]
fn compile_and_run_reports_align_the_op_column() {
    // The column after the op's, by its header: where each row must have a cell start.
    for (verb, column) in [("compile", "runs"), ("run", "kind")] {
        let out = run(["pto", verb, MODEL, "--target", "cpu"]).unwrap();
        let lines: Vec<&str> = out.lines().collect();
        let header = lines
            .iter()
            .position(|l| l.trim_start().starts_with("node"))
            .unwrap_or_else(|| panic!("no table in:\n{out}"));
        let at = lines[header].find(column).unwrap();
        let rows = &lines[header + 1..header + 3];
        assert!(rows[0].contains(LONG_OP), "{out}");
        for row in rows {
            assert!(
                tokens(row).iter().any(|t| t.0 == at),
                "`pto {verb}`: no cell under `{column}` in {row:?}\n{out}"
            );
        }
    }
}

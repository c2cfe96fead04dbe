//! The roofline plot of a model's estimate, as SVG, on log-log axes.
//!
//! The cube and the vector unit have roofs of their own, so an op's total FLOPs against one
//! ceiling mean nothing: attention's cube work would put it far above the vector ceiling.
//! Each op call is therefore one point **per compute unit (and dtype) it uses**:
//!
//! - x: that unit's FLOPs per byte of the op's global memory traffic;
//! - y: that unit's FLOPs per second of the op's estimated time.
//!
//! The op's time is at least its memory time and at least that unit's compute time, so
//! every point lies under `min(memory bandwidth x x, the unit's ceiling on its dtype)`, its
//! own roof; the point of the unit an op is bound by sits on it (below it by the static
//! cost). The marker's shape says the unit (circle cube, square vector), its colour what
//! bounds the whole op. Ops without compute (pure data movement) and direct estimates have
//! no FLOPs and are counted in the legend, not plotted.

use std::collections::BTreeSet;
use std::path::Path;

use pto_op::DType;

use crate::EstimateError;
use crate::report::{ModelReport, OpRow};
use crate::roofline::{Bound, Peaks, Unit};

const WIDTH: f64 = 980.0;
const HEIGHT: f64 = 640.0;
const LEFT: f64 = 90.0;
const RIGHT: f64 = 250.0;
const TOP: f64 = 70.0;
const BOTTOM: f64 = 70.0;
const MEMORY_COLOR: &str = "#27ae60";
const CUBE_COLOR: &str = "#c0392b";
const VECTOR_COLOR: &str = "#2980b9";
/// Ops bound by copy and instruction latencies (the traced kernel's timing), not by a
/// peak rate.
const LATENCY_COLOR: &str = "#8e44ad";
const STATIC_COLOR: &str = "#7f8c8d";

/// One unit's work in one op call, placed on the plot.
struct Point {
    intensity: f64,
    flops_per_second: f64,
    unit: Unit,
    dtype: DType,
    bound: Bound,
}

/// Whether a row has FLOPs to plot: a roofline estimate of an op with compute and traffic.
fn plotted(row: &OpRow) -> bool {
    row.seconds > 0.0 && row.bytes.unwrap_or(0) > 0 && !row.work.is_empty()
}

/// One point per op call and unit that works in it.
fn points(report: &ModelReport) -> Vec<Point> {
    report
        .ops
        .iter()
        .filter(|row| plotted(row))
        .flat_map(|row| {
            let bytes = row.bytes.unwrap_or(0) as f64;
            row.work.iter().map(move |w| Point {
                intensity: w.flops as f64 / bytes,
                flops_per_second: w.flops as f64 / row.seconds,
                unit: w.unit,
                dtype: w.dtype,
                bound: row.bound,
            })
        })
        .collect()
}

/// The plot of `report` against `peaks`.
pub fn roofline_svg(report: &ModelReport, peaks: &Peaks) -> String {
    let points = points(report);
    let plotted_calls = report.ops.iter().filter(|row| plotted(row)).count();
    // A ceiling for every unit and dtype that has a point; the f16 ones when none has.
    let mut roofs: BTreeSet<(Unit, DType)> = points.iter().map(|p| (p.unit, p.dtype)).collect();
    if roofs.is_empty() {
        roofs = [(Unit::Cube, DType::F16), (Unit::Vector, DType::F16)].into();
    }
    let ceilings: Vec<(Unit, DType, f64)> = roofs
        .into_iter()
        .map(|(unit, dtype)| (unit, dtype, peaks.flops(unit, dtype)))
        .collect();
    let memory = peaks.memory_bytes_per_second;
    let highest = ceilings.iter().map(|c| c.2).fold(0.0, f64::max);
    let decades = |values: &mut dyn Iterator<Item = f64>| {
        values.fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), v| {
            (lo.min(v.log10().floor()), hi.max(v.log10().ceil()))
        })
    };
    let (x_lo, x_hi) = decades(
        &mut points
            .iter()
            .map(|p| p.intensity)
            .chain([0.1, 10.0 * highest / memory]),
    );
    let lowest = ceilings.iter().map(|c| c.2).fold(f64::INFINITY, f64::min);
    let (y_lo, y_hi) = decades(&mut points.iter().map(|p| p.flops_per_second).chain([
        highest * 2.0,
        lowest / 10.0,
        memory * 10f64.powf(x_lo),
    ]));
    let x = |v: f64| LEFT + (v.log10() - x_lo) / (x_hi - x_lo) * (WIDTH - LEFT - RIGHT);
    let y = |v: f64| HEIGHT - BOTTOM - (v.log10() - y_lo) / (y_hi - y_lo) * (HEIGHT - TOP - BOTTOM);
    let mut svg = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{WIDTH}\" height=\"{HEIGHT}\" \
         font-family=\"sans-serif\" font-size=\"12\">\n<rect width=\"100%\" height=\"100%\" \
         fill=\"white\"/>\n<text x=\"{mid:.1}\" y=\"24\" text-anchor=\"middle\" \
         font-size=\"15\">Roofline per compute unit: model `{}` on `{}`</text>\n<text \
         x=\"{mid:.1}\" y=\"42\" text-anchor=\"middle\" fill=\"#444\">one point per op call \
         and compute unit: x = the unit's FLOPs per byte of the op's memory traffic,</text>\n\
         <text x=\"{mid:.1}\" y=\"58\" text-anchor=\"middle\" fill=\"#444\">y = the unit's \
         FLOPs per second of the op's time; each point lies under its own unit's roof, the \
         op's bound unit on it</text>\n",
        escape(&report.model),
        escape(&report.device),
        mid = WIDTH / 2.0,
    );
    // Grid and axis labels, one per decade.
    for decade in (x_lo as i32)..=(x_hi as i32) {
        let px = x(10f64.powi(decade));
        svg += &format!(
            "<line x1=\"{px:.1}\" y1=\"{TOP}\" x2=\"{px:.1}\" y2=\"{:.1}\" stroke=\"#ddd\"/>\
             <text x=\"{px:.1}\" y=\"{:.1}\" text-anchor=\"middle\">1e{decade}</text>\n",
            HEIGHT - BOTTOM,
            HEIGHT - BOTTOM + 18.0
        );
    }
    for decade in (y_lo as i32)..=(y_hi as i32) {
        let py = y(10f64.powi(decade));
        svg += &format!(
            "<line x1=\"{LEFT}\" y1=\"{py:.1}\" x2=\"{:.1}\" y2=\"{py:.1}\" stroke=\"#ddd\"/>\
             <text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\">1e{decade}</text>\n",
            WIDTH - RIGHT,
            LEFT - 6.0,
            py + 4.0
        );
    }
    svg += &format!(
        "<rect x=\"{LEFT}\" y=\"{TOP}\" width=\"{:.1}\" height=\"{:.1}\" fill=\"none\" \
         stroke=\"black\"/>\n<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\">arithmetic \
         intensity of the unit (its FLOPs per byte of the op's global memory traffic)</text>\n\
         <text transform=\"translate(22 {:.1}) rotate(-90)\" text-anchor=\"middle\">achieved \
         FLOP/s of the unit</text>\n",
        WIDTH - LEFT - RIGHT,
        HEIGHT - TOP - BOTTOM,
        LEFT + (WIDTH - LEFT - RIGHT) / 2.0,
        HEIGHT - 20.0,
        TOP + (HEIGHT - TOP - BOTTOM) / 2.0
    );
    // Roofs: min(memory * intensity, ceiling), drawn over the x range; dashed off f16.
    let (ix_lo, ix_hi) = (10f64.powf(x_lo), 10f64.powf(x_hi));
    for (unit, dtype, ceiling) in &ceilings {
        let color = unit_color(*unit);
        let dash = if *dtype == DType::F16 {
            ""
        } else {
            " stroke-dasharray=\"6 4\""
        };
        let knee = (ceiling / memory).clamp(ix_lo, ix_hi);
        svg += &format!(
            "<polyline fill=\"none\" stroke=\"{color}\" stroke-width=\"2\"{dash} \
             points=\"{:.1},{:.1} {:.1},{:.1} {:.1},{:.1}\"/>\n<text x=\"{:.1}\" y=\"{:.1}\" \
             fill=\"{color}\">{unit} {dtype} roof {ceiling:.2e} FLOP/s</text>\n",
            x(ix_lo),
            y((memory * ix_lo).min(*ceiling)),
            x(knee),
            y((memory * knee).min(*ceiling)),
            x(ix_hi),
            y(*ceiling),
            WIDTH - RIGHT + 6.0,
            y(*ceiling) + 4.0,
        );
    }
    svg += &format!(
        "<text x=\"{:.1}\" y=\"{:.1}\" fill=\"#555\">memory {:.2e} B/s</text>\n",
        x(ix_lo) + 6.0,
        y(memory * ix_lo) - 8.0,
        memory
    );
    // Calls repeat (one per layer): draw each distinct marker once.
    let mut drawn = BTreeSet::new();
    for p in &points {
        let (px, py) = (x(p.intensity), y(p.flops_per_second));
        let color = bound_color(p.bound);
        if drawn.insert((px.round() as i64, py.round() as i64, p.unit, color)) {
            svg += &marker(p.unit, px, py, color, 0.6);
            svg.push('\n');
        }
    }
    // Legend: the marker's shape is the unit, its colour the op's bound.
    let legend_x = WIDTH - RIGHT + 10.0;
    let mut ly = HEIGHT - BOTTOM - 150.0;
    let mut line = |svg: &mut String, shape: Option<(Unit, &str)>, label: &str| {
        if let Some((unit, color)) = shape {
            *svg += &marker(unit, legend_x, ly, color, 1.0);
        }
        *svg += &format!(
            "<text x=\"{:.1}\" y=\"{:.1}\">{label}</text>\n",
            legend_x + 10.0,
            ly + 4.0
        );
        ly += 16.0;
    };
    line(&mut svg, Some((Unit::Cube, "#333")), "cube work of an op");
    line(
        &mut svg,
        Some((Unit::Vector, "#333")),
        "vector work of an op",
    );
    for (bound, label) in [
        (Bound::Memory, "op memory-bound"),
        (Bound::Cube, "op cube-bound"),
        (Bound::Vector, "op vector-bound"),
        (Bound::Latency, "op latency-bound"),
        (Bound::Static, "op static-bound"),
    ] {
        line(&mut svg, Some((Unit::Cube, bound_color(bound))), label);
    }
    line(
        &mut svg,
        None,
        &format!(
            "{plotted_calls} of {} op calls plotted; the",
            report.ops.len()
        ),
    );
    line(
        &mut svg,
        None,
        &format!(
            "other {} move data only or are",
            report.ops.len() - plotted_calls
        ),
    );
    line(&mut svg, None, "direct estimates (no FLOPs)");
    svg + "</svg>\n"
}

// Writing the plot is the plot's job: the report holds the figures, this file draws them.
impl ModelReport {
    /// Writes the roofline plot ([`roofline_svg`]) to `path`, atomically.
    ///
    /// # Errors
    ///
    /// The file cannot be written.
    pub fn write_plot(&self, path: &Path, peaks: &Peaks) -> Result<(), EstimateError> {
        Ok(pto_op::fs::write_atomic(
            path,
            roofline_svg(self, peaks).as_bytes(),
        )?)
    }
}

/// A circle for cube work, a square for vector work.
fn marker(unit: Unit, px: f64, py: f64, color: &str, opacity: f64) -> String {
    match unit {
        Unit::Cube => format!(
            "<circle cx=\"{px:.1}\" cy=\"{py:.1}\" r=\"4.5\" fill=\"{color}\" \
             fill-opacity=\"{opacity}\"/>"
        ),
        Unit::Vector => format!(
            "<rect x=\"{:.1}\" y=\"{:.1}\" width=\"8\" height=\"8\" fill=\"{color}\" \
             fill-opacity=\"{opacity}\"/>",
            px - 4.0,
            py - 4.0
        ),
    }
}

fn unit_color(unit: Unit) -> &'static str {
    match unit {
        Unit::Cube => CUBE_COLOR,
        Unit::Vector => VECTOR_COLOR,
    }
}

fn bound_color(bound: Bound) -> &'static str {
    match bound {
        Bound::Memory => MEMORY_COLOR,
        Bound::Cube => CUBE_COLOR,
        Bound::Vector => VECTOR_COLOR,
        Bound::Latency => LATENCY_COLOR,
        Bound::Static | Bound::Direct => STATIC_COLOR,
    }
}

fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

#[cfg(test)]
mod tests {
    use pto_op::{
        DeviceProfile, Level, OpInvokeInfo, PerformanceProperties, PropertiesRegistration,
        SourceLocation,
    };

    use super::*;
    use crate::Estimator;
    use crate::chain::Chain;

    const TOKENS: u64 = 2048;
    const HEAD_DIM: u64 = 128;

    /// One head of flash attention: QK^T and PV on the cube in f16, the softmax on the
    /// vector unit in f32; q, k, v read and o written once.
    fn attention(_: &OpInvokeInfo) -> PerformanceProperties {
        let mut p = PerformanceProperties {
            memory_read_bytes: 3 * TOKENS * HEAD_DIM * 2,
            memory_write_bytes: TOKENS * HEAD_DIM * 2,
            ..PerformanceProperties::default()
        };
        p.compute(DType::F16).mma_ops = 2 * TOKENS * TOKENS * HEAD_DIM;
        p.compute(DType::F32).gp_ops = 8 * TOKENS * TOKENS;
        p
    }

    fn copy(info: &OpInvokeInfo) -> PerformanceProperties {
        info.memory_access_properties()
    }

    fn registration(
        op: &'static str,
        properties: fn(&OpInvokeInfo) -> PerformanceProperties,
    ) -> PropertiesRegistration {
        PropertiesRegistration {
            op,
            level: Level::User,
            overrides: false,
            source: SourceLocation {
                module_path: "tests",
                file: "plot.rs",
                line: 1,
            },
            properties,
        }
    }

    fn call(op: &str) -> OpInvokeInfo {
        let t = pto_op::TensorType {
            shape: pto_op::Shape::from([TOKENS as usize, HEAD_DIM as usize]),
            dtype: DType::F16,
        };
        OpInvokeInfo {
            op: op.to_owned(),
            inputs: vec![t.clone()],
            outputs: vec![t],
            attrs: Default::default(),
        }
    }

    #[test]
    fn every_point_lies_under_its_own_unit_s_roof_and_the_bound_unit_on_it() {
        let kirin = DeviceProfile::builtin("kirin9030").unwrap();
        let regs = [
            registration("t.attention", attention),
            registration("t.copy", copy),
        ];
        let chain = Chain::new([], [], &regs);
        let mut estimator = Estimator::new(&chain, &kirin);
        let calls = [call("t.attention"), call("t.copy")];
        let report = ModelReport::of_calls("t", &calls, &mut estimator).unwrap();
        let peaks = Peaks::of(&kirin);
        let attention = &report.ops[0];
        assert_eq!(attention.bound, Bound::Vector);
        // What the old plot did wrong: all FLOPs over the time beat the vector roof.
        let total = attention.flops.unwrap() as f64 / attention.seconds;
        assert!(total > peaks.flops(Unit::Vector, DType::F16), "{total}");

        let points = points(&report);
        assert_eq!(
            points.len(),
            2,
            "attention's cube and vector work; the copy has none"
        );
        let memory = peaks.memory_bytes_per_second;
        for p in &points {
            let roof = (memory * p.intensity).min(peaks.flops(p.unit, p.dtype));
            assert!(
                p.flops_per_second <= roof * (1.0 + 1e-9),
                "{} {}",
                p.unit,
                p.dtype
            );
        }
        let vector = points.iter().find(|p| p.unit == Unit::Vector).unwrap();
        let roof = peaks.flops(Unit::Vector, DType::F32);
        // Without the static cost, the op's time is the vector unit's: the point is on the roof.
        let compute_seconds = attention.seconds - kirin.estimator.static_seconds;
        let on_roof = vector.flops_per_second * attention.seconds / compute_seconds;
        assert!((on_roof / roof - 1.0).abs() < 1e-9, "{on_roof} vs {roof}");

        let svg = roofline_svg(&report, &peaks);
        assert!(
            svg.contains("cube f16 roof") && svg.contains("vector f32 roof"),
            "{svg}"
        );
        assert!(svg.contains("1 of 2 op calls plotted"), "{svg}");
    }
}

//! The roofline plot of a model's estimate, as SVG: each op call a point at (arithmetic
//! intensity, achieved FLOP/s), under the device's roofs (the memory slope, the cube and
//! vector ceilings), on log-log axes. Direct estimates have no counts and are left out.

use pto_op::DType;

use crate::report::ModelReport;
use crate::roofline::{Bound, Peaks};

const WIDTH: f64 = 900.0;
const HEIGHT: f64 = 600.0;
const LEFT: f64 = 90.0;
const RIGHT: f64 = 190.0;
const TOP: f64 = 50.0;
const BOTTOM: f64 = 70.0;

/// The plot of `report` against `peaks`.
pub fn roofline_svg(report: &ModelReport, peaks: &Peaks) -> String {
    let points: Vec<(f64, f64, Bound)> = report
        .ops
        .iter()
        .filter_map(|row| {
            let (flops, bytes) = (row.flops? as f64, row.bytes? as f64);
            (flops > 0.0 && bytes > 0.0 && row.seconds > 0.0)
                .then(|| (flops / bytes, flops / row.seconds, row.bound))
        })
        .collect();
    let cube = 2.0 * peaks.cube(DType::F16);
    let vector = peaks.vector(DType::F16);
    let memory = peaks.memory_bytes_per_second;
    let decades = |values: &mut dyn Iterator<Item = f64>| {
        values.fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), v| {
            (lo.min(v.log10().floor()), hi.max(v.log10().ceil()))
        })
    };
    let (x_lo, x_hi) = decades(
        &mut points
            .iter()
            .map(|p| p.0)
            .chain([0.1, 10.0 * cube / memory]),
    );
    let (y_lo, y_hi) = decades(
        &mut points
            .iter()
            .map(|p| p.1)
            .chain([cube * 2.0, memory * 10f64.powf(x_lo)]),
    );
    let x = |v: f64| LEFT + (v.log10() - x_lo) / (x_hi - x_lo) * (WIDTH - LEFT - RIGHT);
    let y = |v: f64| HEIGHT - BOTTOM - (v.log10() - y_lo) / (y_hi - y_lo) * (HEIGHT - TOP - BOTTOM);
    let mut svg = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{WIDTH}\" height=\"{HEIGHT}\" \
         font-family=\"sans-serif\" font-size=\"12\">\n<rect width=\"100%\" height=\"100%\" \
         fill=\"white\"/>\n<text x=\"{}\" y=\"25\" text-anchor=\"middle\" font-size=\"15\">\
         Roofline: model `{}` on `{}` ({} op calls plotted)</text>\n",
        WIDTH / 2.0,
        escape(&report.model),
        escape(&report.device),
        points.len()
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
         intensity (FLOP per byte of global memory)</text>\n<text transform=\"translate(22 \
         {:.1}) rotate(-90)\" text-anchor=\"middle\">achieved FLOP/s</text>\n",
        WIDTH - LEFT - RIGHT,
        HEIGHT - TOP - BOTTOM,
        LEFT + (WIDTH - LEFT - RIGHT) / 2.0,
        HEIGHT - 20.0,
        TOP + (HEIGHT - TOP - BOTTOM) / 2.0
    );
    // Roofs: min(memory * intensity, ceiling), drawn over the x range.
    let (ix_lo, ix_hi) = (10f64.powf(x_lo), 10f64.powf(x_hi));
    for (label, ceiling, color) in [
        ("cube f16", cube, "#c0392b"),
        ("vector f16", vector, "#2980b9"),
    ] {
        let knee = (ceiling / memory).clamp(ix_lo, ix_hi);
        svg += &format!(
            "<polyline fill=\"none\" stroke=\"{color}\" stroke-width=\"2\" points=\"{:.1},{:.1} \
             {:.1},{:.1} {:.1},{:.1}\"/>\n<text x=\"{:.1}\" y=\"{:.1}\" fill=\"{color}\">{label} \
             {:.2e} FLOP/s</text>\n",
            x(ix_lo),
            y((memory * ix_lo).min(ceiling)),
            x(knee),
            y((memory * knee).min(ceiling)),
            x(ix_hi),
            y(ceiling),
            WIDTH - RIGHT + 6.0,
            y(ceiling) + 4.0,
            ceiling
        );
    }
    svg += &format!(
        "<text x=\"{:.1}\" y=\"{:.1}\" fill=\"#555\">memory {:.2e} B/s</text>\n",
        x(ix_lo) + 6.0,
        y(memory * ix_lo) - 8.0,
        memory
    );
    for (ix, flops, bound) in &points {
        let color = match bound {
            Bound::Cube => "#c0392b",
            Bound::Vector => "#2980b9",
            Bound::Memory => "#27ae60",
            Bound::Latency => "#8e44ad",
            Bound::Static | Bound::Direct => "#7f8c8d",
        };
        svg += &format!(
            "<circle cx=\"{:.1}\" cy=\"{:.1}\" r=\"4\" fill=\"{color}\" fill-opacity=\"0.6\"/>\n",
            x(*ix),
            y(*flops)
        );
    }
    let legend_x = WIDTH - RIGHT + 6.0;
    for (i, (label, color)) in [
        ("memory-bound op", "#27ae60"),
        ("cube-bound op", "#c0392b"),
        ("vector-bound op", "#2980b9"),
        ("static-bound op", "#7f8c8d"),
    ]
    .iter()
    .enumerate()
    {
        let ly = HEIGHT - BOTTOM - 70.0 + 16.0 * i as f64;
        svg += &format!(
            "<circle cx=\"{:.1}\" cy=\"{ly:.1}\" r=\"4\" fill=\"{color}\"/><text x=\"{:.1}\" \
             y=\"{:.1}\">{label}</text>\n",
            legend_x + 4.0,
            legend_x + 12.0,
            ly + 4.0
        );
    }
    svg + "</svg>\n"
}

fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

//! The UB plan of the Ascend C lowering (`pto_op::kernel::ub_plan`) and the buffer check of
//! the simulator and the estimator (`pto_op::kernel::buffers`) read one liveness analysis
//! and one position numbering (`pto_op::kernel::liveness`), and agree on every kernel of the
//! examples: every linked kernel's parity cases and every registered shape sweep (the std
//! ops' and the examples'), traced as the simulator traces them for kirin9030, kirinx90 and
//! ascend910b. They agree on
//!
//! - the positions: the UB plan's count (`ub_plan::span`) is the check's;
//! - the live ranges: every buffer the check counts lives from the UB plan's definition of
//!   its tiles to their last use in the UB plan (over the tiles that share it: an
//!   accumulating matmul's result and its accumulator, a carried tile and its init), a
//!   loop's results from the position after the loop, and every tile the UB plan defines
//!   before the end is in exactly one buffer;
//! - the peaks: each level's single-buffered working set recomputed from the UB plan's
//!   live ranges (each buffer at its tile's bytes at the level's alignment, a row
//!   reduction's tmp tile at its position) peaks where and as high as the check's.

use std::collections::BTreeSet;

use pto_backends::sim::Sim;
use pto_op::kernel::buffers::BufferUse;
use pto_op::kernel::ir::{Inst, MemLevel, TileId};
use pto_op::kernel::row_reduce::RowReduce;
use pto_op::kernel::vector_split::vector_cores_sharing;
use pto_op::kernel::{ValidProgram, ub_plan};
use pto_op::{Attributes, DeviceProfile, OpDef, TensorType};
// Links the example ops (and pto-team-b's) into this test.
use pto_examples as _;

/// Every (op, inputs, attrs) to check: the parity cases of every linked kernel and the
/// sizes of every registered sweep (default attrs), as `same_program.rs` enumerates them.
fn instances() -> Vec<(&'static OpDef, Vec<TensorType>, Attributes)> {
    let mut ops = pto_op::registry::ops().expect("the registry");
    ops.sort_by_key(|op| op.name);
    let mut out = Vec::new();
    for op in ops.iter().filter(|op| op.kernel.is_some()) {
        for case in (op.parity_cases)() {
            out.push((*op, case.inputs.clone(), case.attrs.clone()));
        }
    }
    for sweep in pto_op::sweep::sweeps().expect("unique sweeps") {
        let op = pto_op::registry::find(sweep.op).expect("a sweep's op is linked");
        for inputs in (sweep.sizes)() {
            out.push((op, inputs, Attributes::new()));
        }
    }
    out
}

/// The tiles that are some loop's results.
fn loop_results(program: &ValidProgram) -> BTreeSet<TileId> {
    let mut results = BTreeSet::new();
    Inst::visit(&program.body, &mut 0, &mut |_, inst| {
        if let Inst::Loop { results: r, .. } = inst {
            results.extend(r.iter().copied());
        }
    });
    results
}

/// What the kernels checked hold, so that the agreement is not vacuous.
#[derive(Default)]
struct Seen {
    kernels: usize,
    with_loops: usize,
    shared_buffers: usize,
    reductions: usize,
}

/// The disagreements between the UB plan and the buffer check on `program`, one line each.
fn disagreements(
    call: &str,
    program: &ValidProgram,
    profile: &DeviceProfile,
    seen: &mut Seen,
) -> Vec<String> {
    let mut out = Vec::new();
    let plan = ub_plan::plan(program, profile);
    let buffers = BufferUse::of(program, profile);
    let positions = buffers.liveness().positions();
    let n = positions.len();
    if ub_plan::span(&program.body) != n {
        out.push(format!(
            "{call}: the UB plan has {} positions, the check {n}",
            ub_plan::span(&program.body)
        ));
    }
    // The UB plan's live range of each tile, by the check's rule for loop results.
    let results = loop_results(program);
    let planned = |t: TileId| -> Option<(usize, usize)> {
        let def = plan.def[t]?;
        let start = if results.contains(&t) { def + 1 } else { def };
        Some((start, plan.last_use[t].max(start)))
    };
    // A buffer's range in the UB plan: from the first definition of its tiles to their
    // last use.
    let hull = |tiles: &[TileId]| {
        tiles
            .iter()
            .try_fold(None, |hull: Option<(usize, usize)>, t| {
                let (s, e) = planned(*t)?;
                Some(Some(hull.map_or((s, e), |(hs, he)| (hs.min(s), he.max(e)))))
            })
    };
    let mut counted = BTreeSet::new();
    for range in buffers.ranges() {
        let hull = hull(&range.tiles).flatten();
        if hull != Some((range.start, range.end)) {
            out.push(format!(
                "{call}: the buffer of {:?} lives over {}..={} in the check, {hull:?} in the \
                 UB plan",
                range.tiles, range.start, range.end
            ));
        }
        for t in &range.tiles {
            if !counted.insert(*t) {
                out.push(format!("{call}: {t} is in two buffers"));
            }
        }
        seen.shared_buffers += usize::from(range.tiles.len() > 1);
    }
    for slot in 0..program.tiles.len() {
        let t = TileId::from_index(slot);
        if planned(t).is_some_and(|(start, _)| start < n) && !counted.contains(&t) {
            out.push(format!("{call}: {t} is in no buffer of the check"));
        }
    }
    // Each level's working set recomputed from the UB plan's ranges.
    let reductions: Vec<(usize, u64)> = positions
        .iter()
        .enumerate()
        .filter(|(_, p)| !p.loop_end)
        .filter_map(|(at, p)| {
            let reduce = RowReduce::of(program, p.inst, profile)?;
            let align = profile.alignment.get(MemLevel::Ub).unwrap_or(1).max(1);
            let cores = vector_cores_sharing(profile, program) as u64;
            Some((
                at,
                (reduce.tmp_bytes as u64).div_ceil(align) * align * cores,
            ))
        })
        .collect();
    seen.reductions += usize::from(!reductions.is_empty());
    let single = buffers.working_sets(&BTreeSet::new());
    for level in MemLevel::ON_CORE {
        let mut sets = vec![0u64; n];
        for range in buffers.ranges() {
            let Some(ty) = program.tile(range.tile).filter(|ty| ty.level == level) else {
                continue;
            };
            let Some(Some((start, end))) = hull(&range.tiles) else {
                continue;
            };
            let align = profile.alignment.get(level).unwrap_or(1).max(1);
            let bytes = (ty.bytes() as u64).div_ceil(align) * align;
            for set in &mut sets[start..=end.min(n - 1)] {
                *set += bytes;
            }
        }
        if level == MemLevel::Ub {
            for (at, bytes) in &reductions {
                sets[*at] += bytes;
            }
        }
        // The first position of the highest working set.
        let recomputed = sets
            .iter()
            .enumerate()
            .max_by(|a, b| a.1.cmp(b.1).then(b.0.cmp(&a.0)))
            .map_or((0, 0), |(at, bytes)| (*bytes, at));
        if recomputed != single.peak(level) {
            out.push(format!(
                "{call}: {level:?} peaks at {:?} (bytes, position) in the check, at \
                 {recomputed:?} from the UB plan's live ranges",
                single.peak(level)
            ));
        }
    }
    seen.kernels += 1;
    seen.with_loops += usize::from(!buffers.loops().is_empty());
    out
}

fn agree_on(profile_name: &str) {
    let profile = DeviceProfile::builtin(profile_name).expect("a built-in profile");
    let sim = Sim::new(profile.clone());
    let mut seen = Seen::default();
    let mut differ = Vec::new();
    for (op, inputs, attrs) in instances() {
        // A kernel that does not cover the instance has nothing to plan.
        let Ok(program) = sim.program(op, &inputs, &attrs) else {
            continue;
        };
        let call = format!("{profile_name} {}", op.call_text(&inputs, &attrs));
        differ.extend(disagreements(&call, &program, &profile, &mut seen));
    }
    assert!(differ.is_empty(), "{}", differ.join("\n"));
    assert!(seen.kernels > 50, "only {} kernels", seen.kernels);
    assert!(
        seen.with_loops > 10 && seen.shared_buffers > 0 && seen.reductions > 0,
        "{} kernels with loops, {} shared buffers, {} with row reductions",
        seen.with_loops,
        seen.shared_buffers,
        seen.reductions
    );
}

#[test]
fn the_ub_plan_and_the_buffer_check_agree_on_kirin9030() {
    agree_on("kirin9030");
}

#[test]
fn the_ub_plan_and_the_buffer_check_agree_on_kirinx90() {
    agree_on("kirinx90");
}

#[test]
fn the_ub_plan_and_the_buffer_check_agree_on_ascend910b() {
    agree_on("ascend910b");
}

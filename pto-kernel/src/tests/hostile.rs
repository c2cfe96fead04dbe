//! Hostile kernel texts: each is refused with a clear error, without a crash, a stack
//! overflow, an allocation sized by an id, or time quadratic in a line's length.

use std::cell::Cell;

use super::super::ir::{GlobalDecl, GlobalRole, Index, Inst, MemLevel, Program, TileType};
use super::super::text::{CHARS_COUNTED_FOR_COLUMNS, ParseError, parse};
use super::super::validate::{MAX_INDEX_DEPTH, MAX_LOOP_DEPTH, Rule};
use crate::dtype::DType;

/// The header and one copied block, with `OFFSET` as the load's row offset.
const COPY: &str = "kernel t grid 2
global @0 x: f32[4, 8] input
global @1 y: f32[4, 8] output
%0: f32[4, 8]@ub = load @0[OFFSET, 0] pad 0.0
store @1[0, 0], %0
";

fn refused(text: &str) -> String {
    match parse(text) {
        Ok(program) => panic!("accepted a hostile text:\n{program}"),
        Err(e) => e.to_string(),
    }
}

fn with_offset(offset: &str) -> String {
    COPY.replace("OFFSET", offset)
}

#[test]
fn huge_ids_are_renumbered_without_allocating() {
    // The text's numbers are looked up, never sized by: the largest ids parse as %0, @0
    // and i0.
    let huge = "kernel t grid 1\nglobal @4294967295 y: f32[4] output\n\
                loop i4294967295 in 0..2 {\n\
                %4294967295: f32[4]@ub = full 1.0\n\
                store @4294967295[i4294967295 * 0], %4294967295\n\
                }\n";
    let program = parse(huge).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        program.to_string(),
        "kernel t grid 1\nglobal @0 y: f32[4] output\nloop i0 in 0..2 {\n  \
         %0: f32[4]@ub = full 1.0\n  store @0[i0 * 0], %0\n}\n"
    );
    // A use is looked up too.
    let used = with_offset("0").replace("], %0", "], %4294967295");
    assert_eq!(
        refused(&used),
        "line 5, column 17: tile %4294967295 is used but no line above defines it"
    );
    // A tile id past u32 is a range error.
    let wide = with_offset("0").replace("%0: f32", "%99999999999: f32");
    assert_eq!(
        refused(&wide),
        "line 4, column 2: a tile `%N` `99999999999` is out of range"
    );
}

#[test]
fn more_variables_than_loops_are_refused() {
    // A program value with more variables than loops is refused before anything is sized
    // by `vars`.
    let program = Program {
        op: "t".into(),
        grid: 1,
        globals: vec![].into(),
        tiles: vec![].into(),
        vars: u32::MAX,
        body: vec![],
    };
    let error = program.validate().unwrap_err();
    assert_eq!(
        *error.rule,
        Rule::TooManyVars {
            vars: u32::MAX,
            loops: 0
        }
    );
}

#[test]
fn deep_parentheses_are_refused_at_the_limit() {
    let deep = format!("{}0{}", "(".repeat(10_000), ")".repeat(10_000));
    let message = refused(&with_offset(&deep));
    assert_eq!(
        message,
        format!(
            "line 4, column {}: the index expression nests more than {MAX_INDEX_DEPTH} deep",
            28 + MAX_INDEX_DEPTH
        )
    );
    // min/max calls nest the same way.
    let calls = format!("{}0{}", "min(0, ".repeat(5_000), ")".repeat(5_000));
    assert!(
        refused(&with_offset(&calls)).contains("nests more than"),
        "{calls}"
    );
    // Just under the limit is fine.
    let fine = format!(
        "{}0{}",
        "(".repeat(MAX_INDEX_DEPTH),
        ")".repeat(MAX_INDEX_DEPTH)
    );
    assert!(parse(&with_offset(&fine)).is_ok());
}

#[test]
fn long_flat_sums_are_refused_at_the_limit() {
    let flat = format!("0{}", "+1".repeat(20_000));
    let message = refused(&with_offset(&flat));
    assert!(
        message.starts_with("line 4, column ")
            && message.ends_with(&format!("nests more than {MAX_INDEX_DEPTH} deep")),
        "{message}"
    );
    // The longest sum allowed parses and evaluates.
    let longest = format!("0{}", "+0".repeat(MAX_INDEX_DEPTH));
    assert!(parse(&with_offset(&longest)).is_ok());
}

#[test]
fn deep_loops_are_refused_at_the_limit() {
    let nest = |depth: usize| {
        let mut text = String::from("kernel t grid 1\nglobal @0 y: f32[4] output\n");
        for i in 0..depth {
            text += &format!("loop i{i} in 0..1 {{\n");
        }
        text += "%0: f32[4]@ub = full 1.0\nstore @0[0], %0\n";
        text += &"}\n".repeat(depth);
        text
    };
    assert_eq!(
        refused(&nest(700)),
        format!(
            "line {}, column 1: loops nest {} deep: at most {MAX_LOOP_DEPTH} are allowed",
            MAX_LOOP_DEPTH + 3,
            MAX_LOOP_DEPTH + 1
        )
    );
    assert!(parse(&nest(MAX_LOOP_DEPTH)).is_ok());
}

/// A program with one output and a store at `offset`, built as a value (not parsed).
fn store_at(offset: Index, body_around: impl FnOnce(Inst) -> Vec<Inst>, vars: u32) -> Program {
    let tile = TileType {
        shape: vec![4],
        dtype: DType::F32,
        level: MemLevel::Ub,
    };
    let store = Inst::Store {
        dst: super::super::ir::GlobalId::new(0),
        offsets: vec![offset],
        src: super::super::ir::TileId::new(0),
    };
    let mut body = vec![Inst::Full {
        dst: super::super::ir::TileId::new(0),
        value: 1.0,
    }];
    body.extend(body_around(store));
    Program {
        op: "t".into(),
        grid: 1,
        globals: vec![GlobalDecl {
            name: "y".into(),
            shape: vec![4],
            dtype: DType::F32,
            role: GlobalRole::Output,
        }]
        .into(),
        tiles: vec![tile].into(),
        vars,
        body,
    }
}

#[test]
fn validation_of_deep_values_uses_bounded_stack() {
    // A 20k-term flat sum and 700 nested loops built as values (not parsed): validation
    // refuses them on a thread with a small stack. The values themselves are built and
    // dropped (recursively, by the compiler's drop glue) on a thread with a large one.
    let outer = std::thread::Builder::new().stack_size(256 << 20);
    let handle = outer
        .spawn(|| {
            let mut sum = Index::Const(0);
            for _ in 0..20_000 {
                sum = Index::Add(Box::new(sum), Box::new(Index::Const(1)));
            }
            let flat = store_at(sum, |s| vec![s], 0);
            let mut nested = vec![Inst::Full {
                dst: super::super::ir::TileId::new(0),
                value: 1.0,
            }];
            for var in (0..700).rev() {
                nested = vec![Inst::Loop {
                    var: super::super::ir::VarId::new(var),
                    count: 1,
                    init: vec![],
                    params: vec![],
                    body: nested,
                    yields: vec![],
                    results: vec![],
                }];
            }
            let deep = store_at(Index::Const(0), |s| [nested, vec![s]].concat(), 700);
            let rules = std::thread::scope(|scope| {
                std::thread::Builder::new()
                    .stack_size(2 << 20)
                    .spawn_scoped(scope, || {
                        [&flat, &deep]
                            .map(|p| *super::super::validate::validate(p).unwrap_err().rule)
                    })
                    .expect("spawn")
                    .join()
                    .expect("validation overflowed a 2 MiB stack")
            });
            assert_eq!(rules[0], Rule::IndexTooDeep);
            assert_eq!(
                rules[1],
                Rule::LoopTooDeep {
                    depth: MAX_LOOP_DEPTH + 1
                }
            );
        })
        .expect("spawn");
    handle.join().expect("the deep values were handled");
}

#[test]
fn index_overflow_is_refused_in_validation() {
    let cases = [
        (
            "-9223372036854775808 / -1",
            "`/` of a value in [-9223372036854775808, -9223372036854775808] and one in [-1, -1]",
        ),
        (
            "-9223372036854775808 % -1",
            "`%` of a value in [-9223372036854775808, -9223372036854775808] and one in [-1, -1]",
        ),
        // grid 2: pid is 0 or 1.
        (
            "9223372036854775807 + pid",
            "`+` of a value in [9223372036854775807, 9223372036854775807] and one in [0, 1]",
        ),
        (
            "pid * 4611686018427387904 * 2",
            "`*` of a value in [0, 4611686018427387904] and one in [2, 2]",
        ),
        (
            "-9223372036854775807 - 2",
            "`-` of a value in [-9223372036854775807, -9223372036854775807] and one in [2, 2]",
        ),
        (
            "(-9223372036854775807 - 1) / (pid - 1)",
            "`/` of a value in [-9223372036854775808, -9223372036854775808] and one in [-1, 0]",
        ),
    ];
    for (offset, what) in cases {
        let message = refused(&with_offset(offset));
        assert_eq!(
            message,
            format!(
                "line 4: op `t`: inst 0 (load): index arithmetic can overflow: {what} does not \
                 fit in an i64"
            ),
            "{offset}"
        );
    }
    // Loop variables range over their loop's count.
    let looped = "kernel t grid 1\nglobal @0 y: f32[4] output\n\
                  %0: f32[4]@ub = full 1.0\n\
                  loop i0 in 0..3 {\n\
                  store @0[i0 * 4611686018427387904], %0\n\
                  }\n";
    assert!(
        refused(looped).contains("`*` of a value in [0, 2] and one in [4611686018427387904"),
        "{}",
        refused(looped)
    );
    // Large values that stay in range are fine.
    assert!(
        parse(&with_offset(
            "pid * 4611686018427387903 / 2 - 4611686018427387903"
        ))
        .is_ok()
    );
    assert!(parse(&with_offset("(-9223372036854775807 - 1) / (pid + 1)")).is_ok());
}

#[test]
fn huge_tiles_and_globals_are_refused() {
    let tile = with_offset("0").replace("%0: f32[4, 8]@ub", "%0: f32[4294967296, 4294967296]@ub");
    assert_eq!(
        refused(&tile),
        "line 4: op `t`: inst 0 (load): tile %0 f32[4294967296, 4294967296]@ub: the tile is \
         larger than 4294967296 bytes"
    );
    let global = with_offset("0").replace("y: f32[4, 8]", "y: f32[4611686018427387905, 16]");
    assert_eq!(
        refused(&global),
        "line 3: op `t`: global @1 `y`: f32[4611686018427387905, 16] is too large to address"
    );
}

#[test]
fn a_one_megabyte_line_parses_in_linear_time() {
    // 350k dims of 1: every token asks for its column. (Quadratic, this took 12 s.)
    let line = |dims: usize| {
        let dims = vec!["1"; dims].join(", ");
        format!("kernel t grid 1\nglobal @0 x: f32[{dims}] input\n")
    };
    // Counted, not timed: the characters the parser walks to know its columns.
    let counted = |text: &str| {
        let before = CHARS_COUNTED_FOR_COLUMNS.with(Cell::get);
        let parsed = parse(text);
        assert!(parsed.is_ok(), "{parsed:?}");
        CHARS_COUNTED_FOR_COLUMNS.with(Cell::get) - before
    };
    let text = line(350_000);
    assert!(text.len() > 1 << 20);
    let (small, large) = (counted(&line(35_000)), counted(&text));
    // Linear: ten times the text costs ten times the counting, and never more than the
    // text's length (quadratic, each of the 350k tokens counted from the line's start:
    // about 2 * 10^11 characters).
    assert!(large <= 10 * small + 64, "{small} {large}");
    assert!(
        large <= text.len(),
        "{large} characters counted for {} bytes",
        text.len()
    );
    let dims = vec!["1"; 350_000].join(", ");
    // An error at the end of such a line still names its column.
    let bad = text.replace("] input", "] inptu");
    match parse(&bad) {
        Err(ParseError::Syntax { line, column, .. }) => {
            assert_eq!((line, column), (2, dims.len() + 20))
        }
        other => panic!("{other:?}"),
    }
}

/// A copy kernel of `grid` block programs whose body is wrapped in `loops` (each `(var,
/// count)`, outermost first).
fn copy_in_loops(grid: &str, loops: &[u64]) -> String {
    let mut text = format!(
        "kernel t grid {grid}\nglobal @0 x: f32[4, 8] input\nglobal @1 y: f32[4, 8] output\n"
    );
    for (var, count) in loops.iter().enumerate() {
        text += &format!("loop i{var} in 0..{count} {{\n");
    }
    text += "%0: f32[4, 8]@ub = load @0[0, 0] pad 0.0\nstore @1[0, 0], %0\n";
    text += &"}\n".repeat(loops.len());
    text
}

#[test]
fn a_huge_grid_is_over_the_work_budget() {
    let budget = super::super::validate::DEFAULT_WORK_BUDGET;
    for grid in ["18446744073709551615", "4294967296"] {
        let message = refused(&copy_in_loops(grid, &[]));
        let work = if grid == "4294967296" {
            "12884901888".to_owned()
        } else {
            format!("more than {}", u64::MAX)
        };
        assert_eq!(
            message,
            format!(
                "line 1: op `t`: the kernel does too much work: grid {grid} x 3 \
                 instruction(s) per block program is {work} instruction executions, over the \
                 kernel work budget of {budget} (PTO_WORK_BUDGET=N raises it on the `pto` \
                 command line, pto_kernel::validate::set_work_budget in a program)"
            )
        );
    }
}

#[test]
fn a_huge_loop_is_named_in_the_work_error() {
    // The loop at fault is the innermost one whose work alone is over the budget, located
    // at its line and instruction.
    let message = refused(&copy_in_loops("2", &[3, u64::MAX]));
    assert!(
        message.starts_with(&format!(
            "line 5: op `t`: inst 0.0 (loop): the kernel does too much work: loop i1 in \
             0..{} x 3 instruction(s) per iteration x 6 run(s) of the loop (the grid times \
             the loops around it) is more than {} instruction executions",
            u64::MAX,
            u64::MAX
        )),
        "{message}"
    );
    // Many loops none of which is over the budget alone: the grid is named.
    let program = parse(&copy_in_loops("4", &[1000])).expect("a small kernel");
    let again = program.into_program();
    // 4 x (1 + 1000 x (1 + 2)) = 12,004 executions.
    assert_eq!(
        again.clone().validate_within(12_004).map(|p| p.work()),
        Ok(12_004)
    );
    let error = again.validate_within(11_999).unwrap_err();
    assert_eq!(error.path, vec![0], "{error}");
    assert!(
        error
            .to_string()
            .contains("loop i0 in 0..1000 x 3 instruction(s) per iteration x 4"),
        "{error}"
    );
}

#[test]
fn work_is_counted_per_iteration_and_over_the_grid() {
    let program = parse(&copy_in_loops("3", &[2, 5])).expect("a small kernel");
    // grid 3 x (1 + 2 x (1 + 5 x (1 + 2))) = 3 x 33.
    assert_eq!(program.work(), 99);
    // A loop that never runs costs nothing, whatever it holds: one block program, 1.
    let never = parse(&copy_in_loops("1", &[0, u64::MAX])).expect("a loop of 0 iterations");
    assert_eq!(never.work(), 1);
}

/// Found by the mutation fuzzer (`fuzz_mutation.rs`, case seed 0xd3a168b8fe5ad8d8 of
/// stream 77): a kernel text cut after its globals, `grid 2147483648` over no instruction,
/// had work 0 and ran 2^31 empty block programs on the simulator (minutes). A block
/// program now counts 1.
#[test]
fn a_huge_grid_of_empty_programs_is_over_the_work_budget() {
    let text = "kernel t grid 2147483648\nglobal @0 x: f32[64, 128] input\n";
    let message = refused(text);
    assert!(
        message.contains(
            "grid 2147483648 x 1 instruction(s) per block program is 2147483648 instruction \
             executions, over the kernel work budget"
        ),
        "{message}"
    );
    let small = parse("kernel t grid 4\nglobal @0 x: f32[64, 128] input\n").expect("valid");
    assert_eq!(small.work(), 4);
}

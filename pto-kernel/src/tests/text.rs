//! The text form: printing, parsing back, and the errors of bad text.

use super::super::ir::{Index, Inst, Program, VarId};
use super::super::text::{ParseError, parse};
use super::{causal_attention, generate, matmul_k_loop, rms_norm};

fn round_trip(program: &Program) {
    let text = program.to_string();
    let parsed = match parse(&text) {
        Ok(parsed) => parsed,
        Err(e) => panic!("{e}\n{text}"),
    };
    assert_eq!(&parsed, program, "{text}");
    assert_eq!(parsed.to_string(), text);
}

#[test]
fn traced_kernels_round_trip() -> Result<(), crate::error::OpError> {
    for program in [rms_norm()?, matmul_k_loop()?, causal_attention()?] {
        round_trip(&program);
    }
    Ok(())
}

#[test]
fn a_batched_matmul_round_trips() -> Result<(), crate::error::OpError> {
    use crate::{Kernel, dtype::DType, shape::Shape};
    let mut k = Kernel::new("t.batch_matmul");
    let a = k.input("a", Shape::from([2, 3, 40, 64]), DType::F16);
    let b = k.input("b", Shape::from([3, 64, 24]), DType::F16);
    let y = k.output("y", Shape::from([2, 3, 40, 24]), DType::F16);
    super::super::cube::batched_matmul(&mut k, &a, &b, &y)?;
    let program = k.finish()?;
    round_trip(&program);
    Ok(())
}

#[test]
fn rms_norm_prints_as_documented() -> Result<(), crate::error::OpError> {
    assert_eq!(
        rms_norm()?.to_string(),
        "kernel demo.rms_norm grid 4
global @0 x: f16[32, 64] input
global @1 gamma: f16[64] input
global @2 y: f16[32, 64] output
%0: f16[8, 64]@ub = load @0[pid * 8, 0] pad 0.0
%1: f32[8, 64]@ub = cast %0
%2: f32[8, 64]@ub = unary square %1
%3: f32[8, 1]@ub = reduce mean %2 axis 1
%4: f32[8, 1]@ub = binary add %3, 1e-6
%5: f32[8, 1]@ub = unary rsqrt %4
%6: f16[64]@ub = load @1[0] pad 0.0
%7: f32[64]@ub = cast %6
%8: f32[8, 64]@ub = binary mul %1, %5
%9: f32[8, 64]@ub = binary mul %8, %7
%10: f16[8, 64]@ub = cast %9
store @2[pid * 8, 0], %10
"
    );
    Ok(())
}

#[test]
fn loops_print_their_carried_tiles_and_results() -> Result<(), crate::error::OpError> {
    let text = matmul_k_loop()?.to_string();
    assert!(
        text.contains(
            "loop i0 in 0..3 carry(%5: f32[32, 32]@l0c = %4) {\n  \
             %6: f16[32, 32]@l1 = load @0[pid * 32, (i0 + 1) * 32] pad 0.0\n"
        ),
        "{text}"
    );
    assert!(
        text.contains("  yield %10\n} -> (%11: f32[32, 32]@l0c)\n"),
        "{text}"
    );
    Ok(())
}

#[test]
fn generated_programs_round_trip() {
    let mut instructions = 0;
    let mut loops = 0;
    for seed in 0..600 {
        let program = generate::program(seed);
        instructions += count(&program.body, &mut loops);
        round_trip(&program);
    }
    // The generator must reach deep enough to mean something.
    assert!(
        instructions > 600 * 10 && loops > 300,
        "{instructions} {loops}"
    );
}

fn count(body: &[Inst], loops: &mut usize) -> usize {
    body.iter()
        .map(|inst| match inst {
            Inst::Loop { body, .. } => {
                *loops += 1;
                1 + count(body, loops)
            }
            _ => 1,
        })
        .sum()
}

#[test]
fn index_expressions_keep_their_tree() {
    let var = |v| Box::new(Index::Var(VarId::new(v)));
    let c = |v| Box::new(Index::Const(v));
    let cases = [
        (
            Index::Sub(var(0), Box::new(Index::Sub(var(0), c(-3)))),
            "i0 - (i0 - -3)",
        ),
        (
            // (i0 + 1) * i64::MIN would overflow for i0 = 1, which validation refuses.
            Index::Mul(Box::new(Index::Add(var(0), c(1))), c(i64::MIN / 2)),
            "(i0 + 1) * -4611686018427387904",
        ),
        (
            Index::Max(var(0), c(i64::MIN)),
            "max(i0, -9223372036854775808)",
        ),
        (
            Index::Div(var(0), Box::new(Index::Rem(var(0), c(4)))),
            "i0 / (i0 % 4)",
        ),
        (
            Index::Min(
                Box::new(Index::Add(Box::new(Index::ProgramId), c(2))),
                Box::new(Index::Max(var(0), c(0))),
            ),
            "min(pid + 2, max(i0, 0))",
        ),
    ];
    for (index, expected) in cases {
        let text = format!(
            "kernel t grid 1\nglobal @0 y: f32[4] output\n\
             %0: f32[1]@ub = full 1.0\n\
             loop i0 in 0..2 {{\n  store @0[{expected}], %0\n}}\n"
        );
        let program = parse(&text).unwrap_or_else(|e| panic!("{e}\n{text}"));
        let Inst::Loop { body, .. } = &program.body[1] else {
            panic!("{text}");
        };
        assert_eq!(
            body[0],
            Inst::Store {
                dst: super::super::ir::GlobalId::new(0),
                offsets: vec![index],
                src: super::super::ir::TileId::new(0),
            }
        );
        assert_eq!(program.to_string(), text);
    }
}

#[test]
fn non_finite_scalars_read_back() {
    let text = "kernel t grid 1\nglobal @0 y: f32[4] output\n\
                %0: f32[4]@ub = full NaN\n\
                %1: f32[4]@ub = binary max %0, -inf\n\
                %2: f32[4]@ub = binary min %1, inf\n\
                store @0[0], %2\n";
    let program = parse(text).unwrap_or_else(|e| panic!("{e}"));
    assert!(matches!(program.body[0], Inst::Full { value, .. } if value.is_nan()));
    assert_eq!(program.to_string(), text);
}

fn syntax_error(text: &str) -> (usize, usize, String) {
    match parse(text) {
        Err(ParseError::Syntax {
            line,
            column,
            message,
        }) => (line, column, message),
        other => panic!("expected a syntax error, got {other:?}"),
    }
}

const COPY: &str = "kernel t grid 1
global @0 x: f32[4, 8] input
global @1 y: f32[4, 8] output
// one block, copied
%0: f32[4, 8]@ub = load @0[0, 0] pad 0.0
store @1[0, 0], %0
";

#[test]
fn typos_are_reported_with_line_and_column() {
    assert!(parse(COPY).is_ok());
    let cases = [
        (
            COPY.replace("f32[4, 8]@ub", "f32[4, 8]@bu"),
            (
                5,
                15,
                "unknown memory level `bu`: expected one of ub, l1, l0a, l0b, l0c",
            ),
        ),
        (
            COPY.replace("pad 0.0", "pad zero"),
            (5, 38, "expected a number, got `zero`"),
        ),
        (
            COPY.replace("@1[0, 0]", "@1[0 0]"),
            (6, 12, "expected `]`, got `0],`"),
        ),
        (
            COPY.replace("f32[4, 8] input", "f23[4, 8] input"),
            (
                2,
                14,
                "unknown dtype `f23`: expected one of f32, f16, bf16, i32, i64, i8, u8, bool, i16, u16, \
             u32, u64, f64, f8e4m3fn, f8e4m3fnuz, f8e5m2, f8e5m2fnuz, f8e8m0, f4e2m1, i4, u4, i2, u2",
            ),
        ),
        (
            COPY.replace("store @1[0, 0], %0", "store @1[0, 0], %1"),
            (6, 17, "tile %1 is used but no line above defines it"),
        ),
        (
            COPY.replace("[0, 0] pad", "[pid * q, 0] pad"),
            (
                5,
                34,
                "unknown index term `q`: expected an integer, pid, iN, min or max",
            ),
        ),
        (format!("{COPY}}}\n"), (7, 1, "`}` without a loop to close")),
    ];
    for (text, (line, column, message)) in cases {
        assert_eq!(
            syntax_error(&text),
            (line, column, message.to_owned()),
            "{text}"
        );
    }
}

#[test]
fn rule_violations_name_the_line_and_instruction() {
    let text = COPY.replace(
        "global @1 y: f32[4, 8] output",
        "global @1 y: f16[4, 8] output",
    );
    assert_eq!(
        parse(&text).unwrap_err().to_string(),
        "line 6: op `t`: inst 1 (store): output `y` is f16, but the tile is f32[4, 8]@ub: \
         cast the tile to f16 first"
    );
    let looped = "kernel t grid 1\nglobal @0 y: f32[4] output\n\
                  %0: f32[4]@ub = full 0.0\n\
                  loop i0 in 0..2 carry(%1: f32[4]@ub = %0) {\n\
                  %2: f32[4]@ub = binary add %1, 1.0\n\
                  %3: f32[4]@ub = unary exp %9\n\
                  yield %2\n\
                  } -> (%4: f32[4]@ub)\n";
    assert_eq!(
        parse(looped).unwrap_err().to_string(),
        "line 6, column 27: tile %9 is used but no line above defines it"
    );
    let storage_only = COPY.replace("x: f32[4, 8] input", "x: f4e2m1[4, 8] input");
    assert!(
        parse(&storage_only)
            .unwrap_err()
            .to_string()
            .starts_with("line 2: op `t`: global @0 `x` is f4e2m1"),
        "a program-wide rule names the global's line"
    );
    let storage_only_tile = COPY.replace(
        "store @1[0, 0], %0",
        "%7: f8e5m2[4, 8]@ub = cast %0\nstore @1[0, 0], %0",
    );
    assert!(
        parse(&storage_only_tile)
            .unwrap_err()
            .to_string()
            .starts_with("line 6: op `t`: tile %1 is f8e5m2"),
        "a program-wide rule names the tile's line, and the tile as renumbered"
    );
    let scoped = looped.replace("unary exp %9\n", "unary exp %2\n") + "store @0[i0], %2\n";
    assert_eq!(
        parse(&scoped).unwrap_err().to_string(),
        "line 9: op `t`: inst 2 (store): loop variable i0 is used outside its loop"
    );
}

/// `text` with every tile, global and loop variable number `n` replaced by `f(n)`.
fn renumbered(text: &str, f: impl Fn(char, u32) -> u32) -> String {
    let mut out = String::new();
    let mut chars = text.chars().peekable();
    let mut previous = ' ';
    while let Some(c) = chars.next() {
        out.push(c);
        let prefix = matches!(c, '%' | '@') || (c == 'i' && !previous.is_ascii_alphanumeric());
        let mut digits = String::new();
        while let Some(d) = chars.peek().filter(|d| prefix && d.is_ascii_digit()) {
            digits.push(*d);
            chars.next();
        }
        // (`i32[..` is a dtype, not a loop variable.)
        match digits.parse() {
            Ok(n) if !(c == 'i' && chars.peek() == Some(&'[')) => out += &f(c, n).to_string(),
            _ => out += &digits,
        }
        previous = c;
    }
    out
}

#[test]
fn ids_with_gaps_and_out_of_order_parse_and_print_dense() -> Result<(), crate::error::OpError> {
    for program in [rms_norm()?, matmul_k_loop()?, causal_attention()?] {
        let text = program.to_string();
        // Descending, with gaps: %0 %1 %2 become %900 %893 %886, i0 i1 i50 i53, @0 @1 @9 @8.
        let scrambled = renumbered(&text, |prefix, n| match prefix {
            '%' => 900 - 7 * n,
            'i' => 50 + 3 * n,
            _ => 9 - n,
        });
        assert_ne!(scrambled, text);
        let parsed = parse(&scrambled).unwrap_or_else(|e| panic!("{e}\n{scrambled}"));
        assert_eq!(parsed, program, "{scrambled}");
        assert_eq!(parsed.to_string(), text);
    }
    Ok(())
}

#[test]
fn deleting_an_instruction_leaves_a_gap_that_parses() {
    let text = "kernel t grid 1
global @0 x: f32[4, 8] input
global @1 y: f32[4, 8] output
%0: f32[4, 8]@ub = load @0[0, 0] pad 0.0
%1: f32[4, 8]@ub = unary exp %0
%2: f32[4, 8]@ub = binary add %0, 1.0
store @1[0, 0], %2
";
    let edited = text.replace("%1: f32[4, 8]@ub = unary exp %0\n", "");
    let parsed = parse(&edited).unwrap_or_else(|e| panic!("{e}\n{edited}"));
    assert_eq!(
        parsed.to_string(),
        edited.replace("%2", "%1"),
        "printed with dense ids"
    );
}

#[test]
fn a_second_definition_names_both_lines() {
    let twice = COPY.replace(
        "store @1[0, 0], %0",
        "%1: f32[4, 8]@ub = unary exp %0\n%0: f32[4, 8]@ub = unary exp %1\nstore @1[0, 0], %0",
    );
    assert_eq!(
        syntax_error(&twice),
        (
            7,
            1,
            "tile %0 is defined twice: first on line 5, again on line 7".to_owned()
        )
    );
    let global = COPY.replace("global @1 y", "global @0 y");
    assert_eq!(
        syntax_error(&global),
        (
            3,
            8,
            "global @0 is defined twice: first on line 2, again on line 3".to_owned()
        )
    );
    let loops = "kernel t grid 1\nglobal @0 y: f32[4] output\n\
                 loop i3 in 0..2 {\n}\n\
                 loop i3 in 0..2 {\n\
                 %0: f32[4]@ub = full 1.0\n\
                 store @0[i3], %0\n\
                 }\n";
    assert_eq!(
        syntax_error(loops),
        (
            5,
            6,
            "loop variable i3 is defined twice: first on line 3, again on line 5".to_owned()
        )
    );
}

#[test]
fn a_use_above_its_definition_is_refused_at_the_use() {
    // Out of order is fine for numbers, not for lines: a tile is defined above its uses.
    let early = "kernel t grid 1
global @0 y: f32[4] output
%1: f32[4]@ub = unary exp %0
%0: f32[4]@ub = full 1.0
store @0[0], %1
";
    assert_eq!(
        syntax_error(early),
        (
            3,
            27,
            "tile %0 is used but no line above defines it".to_owned()
        )
    );
    let var = COPY.replace("@1[0, 0]", "@1[0, i7]");
    assert_eq!(
        syntax_error(&var),
        (
            6,
            13,
            "loop variable i7 is used but no loop line above defines it".to_owned()
        )
    );
    let global = COPY.replace("load @0", "load @5");
    assert_eq!(
        syntax_error(&global),
        (5, 25, "global @5 is used but never declared".to_owned())
    );
}

#[test]
fn ordering_logic_and_reshape_round_trip_and_print_as_documented()
-> Result<(), crate::error::OpError> {
    use crate::{Kernel, dtype::DType, shape::Shape};
    let mut k = Kernel::new("t.order");
    let x = k.input("x", Shape::from([8, 64]), DType::F16);
    let s = k.input("s", Shape::from([8]), DType::F16);
    let v = k.output("v", Shape::from([8, 4]), DType::F16);
    let i = k.output("i", Shape::from([8, 4]), DType::I32);
    let a = k.output("a", Shape::from([8, 1]), DType::I32);
    let t = k.load(&x, [0, 0], [8, 64])?;
    let column = k.load_reshaped(&s, [0], [8, 1])?;
    let keep = t.gt(&column) & !t.eq(0.0) | t.lt(-1.0);
    let masked = crate::Tile::select(&keep, &t, f64::NEG_INFINITY);
    let (values, indices) = masked.top_k(4);
    k.store(&v, [0, 0], &values)?;
    k.store(&i, [0, 0], &indices)?;
    k.store(&a, [0, 0], &masked.argmax(-1))?;
    let program = k.finish()?;
    round_trip(&program);
    let text = program.to_string();
    for line in [
        "%2: f16[8, 1]@ub = reshape %1",
        "%4: bool[8, 64]@ub = compare eq %0, 0.0",
        "%5: bool[8, 64]@ub = not %4",
        "%6: bool[8, 64]@ub = logic and %3, %5",
        "%8: bool[8, 64]@ub = logic or %6, %7",
        "%10: f16[8, 4]@ub, %11: i32[8, 4]@ub = topk %9 k 4",
        "%12: i32[8, 1]@ub = argreduce max %9 axis 1",
    ] {
        assert!(text.contains(line), "{line} missing from\n{text}");
    }
    Ok(())
}

#[test]
fn topk_lines_define_two_tiles_and_others_one() {
    let head =
        "kernel t grid 1\nglobal @0 x: f32[2, 8] input\n%0: f32[2, 8]@ub = load @0[0, 0] pad 0.0\n";
    let (line, column, message) = syntax_error(&format!("{head}%1: f32[2, 4]@ub = topk %0 k 4\n"));
    assert_eq!((line, column), (4, 20));
    assert!(message.starts_with("topk defines two tiles"), "{message}");
    let (line, column, message) = syntax_error(&format!(
        "{head}%1: f32[2, 8]@ub, %2: f32[2, 8]@ub = cast %0\n"
    ));
    assert_eq!((line, column), (4, 38));
    assert_eq!(message, "`cast` defines one tile: only `topk` defines two");
    let bad_k = parse(&format!(
        "{head}%1: f32[2, 9]@ub, %2: i32[2, 9]@ub = topk %0 k 9\n"
    ))
    .unwrap_err()
    .to_string();
    assert!(
        bad_k.contains("line 4") && bad_k.contains("topk takes 1 to 8 element(s)"),
        "{bad_k}"
    );
}

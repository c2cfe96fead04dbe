//! The text form of a kernel program: the kernel file authors read and edit.
//!
//! `Display` for [`Program`] prints it (`print.rs`); [`parse`] reads it back (`parse.rs`),
//! checks it with [`validate`](super::validate::validate) and returns an equal program. One item per line;
//! blank lines and lines starting with `//` are ignored; indentation is free.
//!
//! ```text
//! kernel demo.rms_norm grid 4
//! global @0 x: f16[32, 64] input
//! global @1 gamma: f16[64] input
//! global @2 y: f16[32, 64] output
//! %0: f16[8, 64]@ub = load @0[pid * 8, 0] pad 0.0
//! %1: f32[8, 64]@ub = cast %0
//! %2: f32[8, 64]@ub = binary mul %1, %1
//! %3: f32[8, 1]@ub = reduce mean %2 axis 1
//! %4: f32[8, 1]@ub = binary add %3, 1e-6
//! loop i0 in 0..4 carry(%5: f32[8, 1]@ub = %4) {
//!   %6: f32[8, 1]@ub = unary exp %5
//!   yield %6
//! } -> (%7: f32[8, 1]@ub)
//! store @2[pid * 8, 0], %7
//! ```
//!
//! Grammar (`[..]` optional, `{..}` repeated, `|` alternatives):
//!
//! ```text
//! program   = "kernel" NAME "grid" INT NL {global NL} {stmt NL}
//! global    = "global" "@"INT NAME ":" DTYPE "[" [INT {"," INT}] "]" ("input" | "output")
//! stmt      = def | topk | store | loop
//! def       = TILE ":" type "=" op
//! topk      = TILE ":" type "," TILE ":" type "=" "topk" TILE "k" INT   (values, indices)
//! type      = DTYPE "[" [INT {"," INT}] "]" "@" LEVEL          (LEVEL: ub l1 l0a l0b l0c)
//! op        = "load" "@"INT offsets "pad" SCALAR
//!           | "full" SCALAR
//!           | "iota" "axis" INT "start" index
//!           | "unary" UNARY TILE
//!           | "binary" BINARY operand "," operand
//!           | "compare" CMP operand "," operand
//!           | "select" TILE "," operand "," operand
//!           | "cast" TILE
//!           | "reduce" REDUCE TILE "axis" INT
//!           | "argreduce" ("max" | "min") TILE "axis" INT             (i32 indices)
//!           | "logic" ("and" | "or") TILE "," TILE                    (bool tiles)
//!           | "not" TILE
//!           | "reshape" TILE                    (the shape is the defined tile's)
//!           | "move" TILE
//!           | "extract" TILE "[" [INT {"," INT}] "]"
//!           | "matmul" TILE "," TILE ["acc" TILE] ["transpose_b"]
//! store     = "store" "@"INT offsets "," TILE
//! loop      = "loop" VAR "in" "0.." INT ["carry(" carried {"," carried} ")"] "{" NL
//!             {stmt NL} ["yield" TILE {"," TILE} NL]
//!             "}" ["->" "(" TILE ":" type {"," TILE ":" type} ")"]
//! carried   = TILE ":" type "=" TILE
//! offsets   = "[" [index {"," index}] "]"
//! operand   = TILE | SCALAR
//! index     = term {("+" | "-") term}
//! term      = atom {("*" | "/" | "%") atom}                    (floor division, remainder)
//! atom      = INT | "pid" | VAR | "min(" index "," index ")" | "max(" index "," index ")"
//!           | "(" index ")"
//! UNARY: neg abs exp ln sqrt rsqrt recip square relu tanh sigmoid gelu silu sin cos
//!        floor ceil erf exp2 log2
//! BINARY: add sub mul div max min pow rem mod    (rem: sign of the dividend, as C fmod;
//!         mod: sign of the divisor, as Python %)
//! TILE = "%"INT   VAR = "i"INT   INT: decimal, negative allowed in indices
//! SCALAR: an f64 as Rust prints it with `{:?}` (`1e-6`, `-inf`, `NaN`), so it reads back
//!         exactly
//! NAME: letters, digits, `_`, `.` and `-`; any other name is a quoted string with `\"`,
//!       `\\` and `\u{..}` escapes
//! ```
//!
//! Tile (`%N`), global (`@N`) and loop variable (`iN`) numbers are names: a text may use
//! any numbers, in any order and with gaps, as long as each is defined once (a tile where
//! its type is given, including loop params and results; a global by its `global` line; a
//! variable by its `loop` line) above its uses. [`parse`] numbers each kind densely in order
//! of definition, and the printer prints those numbers, so a printed program reads back to
//! itself and a parsed text prints renumbered. The number of loop variables is the number
//! of loops and tile types are given where tiles are defined, so the text holds exactly the
//! program. That holds for valid programs; an invalid one prints as well as it can (a tile
//! without a type as `<no type>`, a loop's carried tiles paired up to the shorter of
//! `params` and `init`), for messages and debugging.

mod parse;
#[cfg(test)]
pub(crate) use parse::CHARS_COUNTED_FOR_COLUMNS;
mod print;

pub use parse::{ParseError, parse};
pub use print::inst_line;

#[cfg(doc)]
use super::ir::Program;

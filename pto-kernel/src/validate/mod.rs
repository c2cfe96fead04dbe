//! Validation of kernel programs: the typing rules of the tile language.
//!
//! [`validate`] checks a whole [`Program`](crate::ir::Program); the builder applies the same
//! per-instruction rules (`typing.rs`) while it traces, so a kernel author sees an error at
//! the call that broke a rule, and a hand-edited text kernel is held to exactly the same
//! rules when it is parsed.
//!
//! The files, by job: `rules.rs` (what a broken rule is: [`Rule`], [`ValidationError`], the
//! limits), `checker.rs` (walking a program: [`validate`]), `index.rs` (what an index may
//! name and the values it can reach), `typing.rs` (the type rule of each instruction, which
//! the checker and the tracing builder share), `valid_program.rs` (the [`ValidProgram`]
//! only validation makes), `work.rs` (the work budget).
//!
//! The rules:
//! - every tile is defined by exactly one instruction, before it is used; tiles defined in a
//!   loop body (and the loop's params) are not visible after the loop, only its `results`;
//!   every tile in [`Program::tiles`](crate::ir::Program::tiles) is defined and every loop
//!   variable `0..vars` is defined by exactly one loop, and is used only inside it;
//! - loads go from GM to UB or L1, with the global's dtype and rank; stores go from UB or
//!   L0C to an output global of the same dtype and rank; offsets have the global's rank;
//! - vector instructions (`full`, `iota`, `unary`, `binary`, `compare`, `select`, `cast`,
//!   `reduce`) read and write UB; element-wise operands have one dtype and shapes that
//!   broadcast (numpy rules) to the result's shape; transcendental functions (also sin,
//!   cos, erf, exp2, log2), `floor`, `ceil`, `pow` and `mean` need a float dtype; `rem`
//!   and `mod` take integers and floats; arithmetic is not defined on bool;
//! - moves: L1 -> L0A, L1 -> L0B, UB -> L1, L0C -> UB (may convert to a float dtype),
//!   L0C -> L1, with the same shape;
//! - matmul: `a` f16/bf16/f32 `[m, k]` in L0A, `b` of the same dtype `[k, n]` (`[n, k]`
//!   when `transpose_b`) in L0B, result and accumulator f32 `[m, n]` in L0C;
//! - L0A/L0B/L0C tiles are rank 2 with dims that are multiples of 16 (the cube fractal);
//! - every tile has dims of at least 1; index divisions by the constant 0 are errors (a
//!   symbolic divisor is allowed; where it is 0, [`Index::eval`](crate::ir::Index::eval)
//!   gives 0);
//! - limits that keep hostile programs from crashing the tools: loops nest at most
//!   [`MAX_LOOP_DEPTH`] deep, index expressions at most [`MAX_INDEX_DEPTH`] deep, no index
//!   can overflow an `i64` for any program id in `0..grid` and loop-variable values in
//!   `0..count` (checked with interval arithmetic), a tile holds at most [`MAX_TILE_BYTES`]
//!   and a global's byte size fits in an `isize`; `vars` is at most the number of loops;
//! - the program's work, the instructions it executes over the whole grid, is within the
//!   work budget ([`work`]: [`DEFAULT_WORK_BUDGET`] unless [`set_work_budget`] says
//!   otherwise), so no grid or loop count makes a consumer run for ever.

mod checker;
pub(crate) mod index;
mod rules;
pub(crate) mod typing;
mod valid_program;
pub mod work;

pub use checker::{validate, validate_within};
pub use rules::{
    CUBE_FRACTAL, MAX_INDEX_DEPTH, MAX_LOOP_DEPTH, MAX_TILE_BYTES, Rule, ValidationError, describe,
};
pub use valid_program::ValidProgram;
pub use work::{DEFAULT_WORK_BUDGET, set_work_budget, work_budget};

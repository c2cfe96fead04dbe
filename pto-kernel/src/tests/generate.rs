//! A deterministic generator of random valid programs, traced through the builder, for
//! property tests of the text form.

use crate::dtype::DType;
use crate::error::OpError;
use crate::shape::Shape;
use crate::tensor::SplitMix64;

use super::super::ValidProgram;
use super::super::ir::MemLevel;
use super::super::validate::typing::broadcast;
use super::super::{Global, Idx, Kernel, Tile};

/// Test-case picking over pto-op's one seeded generator.
pub(super) struct Rng(SplitMix64);

impl Rng {
    pub(super) fn new(seed: u64) -> Rng {
        Rng(SplitMix64::new(seed))
    }

    fn next(&mut self) -> u64 {
        self.0.next_u64()
    }

    /// A number in `0..n` (`n` > 0).
    fn below(&mut self, n: usize) -> usize {
        self.0.below(n)
    }

    fn range(&mut self, lo: usize, hi: usize) -> usize {
        lo + self.below(hi - lo + 1)
    }

    fn chance(&mut self, percent: usize) -> bool {
        self.below(100) < percent
    }

    fn pick<T: Clone>(&mut self, items: &[T]) -> T {
        items[self.below(items.len())].clone()
    }
}

const FLOATS: [DType; 3] = [DType::F32, DType::F16, DType::BF16];

/// Scalars that stress the text form: signed zero, extremes, infinities, subnormals.
fn scalar(rng: &mut Rng) -> f64 {
    match rng.below(12) {
        0 => 0.0,
        1 => -0.0,
        2 => f64::INFINITY,
        3 => f64::NEG_INFINITY,
        4 => 1e-6,
        5 => 0.1,
        6 => f64::MAX,
        7 => 5e-324,
        8 => -1.5,
        9 => 1e300,
        // Any finite f64, from its bits.
        _ => loop {
            let v = f64::from_bits(rng.next());
            if v.is_finite() {
                break v;
            }
        },
    }
}

fn shape(rng: &mut Rng, rank: usize) -> Vec<usize> {
    (0..rank).map(|_| rng.range(1, 24)).collect()
}

fn idx(rng: &mut Rng, vars: &[Idx], depth: usize) -> Idx {
    if depth == 0 || rng.chance(35) {
        return match rng.below(3) {
            0 => Idx::from(rng.range(0, 200) as i64 - 50),
            1 => Idx::program_id(),
            _ if vars.is_empty() => Idx::program_id(),
            _ => rng.pick(vars),
        };
    }
    let a = idx(rng, vars, depth - 1);
    let b = idx(rng, vars, depth - 1);
    // Divisors are never the constant 0: a positive constant or a symbol shifted by 1.
    let divisor = |rng: &mut Rng| {
        if rng.chance(50) {
            Idx::from(rng.range(1, 9))
        } else {
            Idx::program_id() + 1
        }
    };
    match rng.below(7) {
        0 => a + b,
        1 => a - b,
        2 => a * b,
        3 => a / divisor(rng),
        4 => a % divisor(rng),
        5 => a.min(b),
        _ => a.max(b),
    }
}

fn offsets(rng: &mut Rng, vars: &[Idx], rank: usize) -> Vec<Idx> {
    (0..rank).map(|_| idx(rng, vars, 3)).collect()
}

/// The tiles a block can use: UB values and L0C accumulators.
#[derive(Clone, Default)]
struct Pool {
    ub: Vec<Tile>,
    l0c: Vec<Tile>,
}

struct Env {
    globals: Vec<Global>,
    outputs: Vec<Global>,
}

/// A random valid program; `seed` picks it.
pub(super) fn program(seed: u64) -> ValidProgram {
    let mut rng = Rng::new(seed);
    let names = ["gen.op", "gen.op-2", "ns.a_b.c", "odd \"name\" \\ \u{7} é"];
    let mut k = Kernel::new(rng.pick(&names));
    let mut globals = Vec::new();
    let mut outputs = Vec::new();
    for i in 0..rng.range(1, 3) {
        let rank = rng.range(1, 3);
        let dtype = rng.pick(&[DType::F32, DType::F16, DType::BF16, DType::I32]);
        let dims = shape(&mut rng, rank);
        globals.push(k.input(&format!("in{i}"), Shape::new(dims), dtype));
    }
    for i in 0..rng.range(1, 2) {
        let rank = rng.range(1, 3);
        let dtype = rng.pick(&FLOATS);
        let dims = shape(&mut rng, rank);
        let out = k.output(&format!("out{i}"), Shape::new(dims), dtype);
        globals.push(out.clone());
        outputs.push(out);
    }
    let grid = rng.range(1, 8);
    let env = Env { globals, outputs };
    let traced = k
        .grid(grid)
        .and_then(|()| block(&mut k, &mut rng, &env, &[], &mut Pool::default(), 0));
    let result = traced.and_then(|()| k.finish());
    match result {
        Ok(program) => program,
        Err(e) => panic!("seed {seed}: the generator made an invalid kernel: {e}"),
    }
}

fn block(
    k: &mut Kernel,
    rng: &mut Rng,
    env: &Env,
    vars: &[Idx],
    pool: &mut Pool,
    depth: usize,
) -> Result<(), OpError> {
    let count = rng.range(2, if depth == 0 { 16 } else { 8 });
    for _ in 0..count {
        step(k, rng, env, vars, pool, depth)?;
    }
    Ok(())
}

/// A UB tile of the pool that is not bool, or a fresh one.
fn numeric(k: &mut Kernel, rng: &mut Rng, pool: &Pool) -> Tile {
    let candidates: Vec<&Tile> = pool
        .ub
        .iter()
        .filter(|t| t.dtype() != DType::Bool)
        .collect();
    if candidates.is_empty() || rng.chance(10) {
        let rank = rng.range(1, 3);
        let dims = shape(rng, rank);
        let dtype = rng.pick(&FLOATS);
        k.full(dims, dtype, scalar(rng))
    } else {
        rng.pick(&candidates).clone()
    }
}

/// An operand for `a`: a scalar, `a`, a reduction of `a`, or a pool tile that broadcasts.
fn partner(rng: &mut Rng, pool: &Pool, a: &Tile) -> Option<Tile> {
    match rng.below(4) {
        0 => None,
        1 => Some(a.clone()),
        2 if !a.shape().is_empty() => {
            let axis = rng.below(a.shape().len()) as isize;
            Some(a.sum(axis))
        }
        2 => Some(a.clone()),
        _ => pool
            .ub
            .iter()
            .rfind(|t| t.dtype() == a.dtype() && broadcast(t.shape(), a.shape()).is_some())
            .cloned(),
    }
}

fn step(
    k: &mut Kernel,
    rng: &mut Rng,
    env: &Env,
    vars: &[Idx],
    pool: &mut Pool,
    depth: usize,
) -> Result<(), OpError> {
    match rng.below(12) {
        0 => {
            let global = rng.pick(&env.globals);
            let rank = global.shape().rank();
            let dims = shape(rng, rank);
            let at = offsets(rng, vars, rank);
            if rng.chance(20) {
                k.load_padded(&global, at, dims, MemLevel::L1, scalar(rng))?;
            } else {
                let tile = k.load_padded(&global, at, dims, MemLevel::Ub, scalar(rng))?;
                pool.ub.push(tile);
            }
        }
        1 => {
            let rank = rng.range(0, 3);
            let dims = shape(rng, rank);
            let dtype = rng.pick(&[DType::F32, DType::F16, DType::I32, DType::Bool]);
            let value = match dtype {
                DType::Bool => rng.below(2) as f64,
                DType::I32 => rng.range(0, 100) as f64 - 50.0,
                _ => scalar(rng),
            };
            pool.ub.push(k.full(dims, dtype, value));
        }
        2 => {
            let rank = rng.range(1, 3);
            let dims = shape(rng, rank);
            let axis = rng.below(2 * rank) as isize - rank as isize;
            let start = idx(rng, vars, 2);
            let dtype = rng.pick(&[DType::I32, DType::F32]);
            pool.ub.push(k.iota(dims, axis, start, dtype));
        }
        3 => {
            let a = numeric(k, rng, pool);
            let t = if a.dtype().is_float() {
                match rng.below(13) {
                    0 => a.neg(),
                    1 => a.abs(),
                    2 => a.exp(),
                    3 => a.ln(),
                    4 => a.sqrt(),
                    5 => a.rsqrt(),
                    6 => a.recip(),
                    7 => a.square(),
                    8 => a.relu(),
                    9 => a.tanh(),
                    10 => a.sigmoid(),
                    11 => a.gelu(),
                    _ => a.silu(),
                }
            } else {
                match rng.below(4) {
                    0 => -&a,
                    1 => a.abs(),
                    2 => a.square(),
                    _ => a.relu(),
                }
            };
            pool.ub.push(t);
        }
        4 => {
            let a = numeric(k, rng, pool);
            let t = match (partner(rng, pool, &a), rng.below(6)) {
                (Some(b), 0) => &a + &b,
                (Some(b), 1) => &b - a,
                (Some(b), 2) => a * b,
                (Some(b), 3) => &a / b,
                (Some(b), 4) => a.max(&b),
                (Some(b), _) => a.min(b),
                (None, 0) => &a + scalar(rng),
                (None, 1) => 2.5f32 - &a,
                (None, 2) => a * (scalar(rng) as f32),
                (None, 3) => 1.0 / a,
                (None, 4) => a.max(scalar(rng)),
                (None, _) => a.min(-3),
            };
            pool.ub.push(t);
        }
        5 | 6 => {
            let a = numeric(k, rng, pool);
            let cond = match (partner(rng, pool, &a), rng.below(6)) {
                (Some(b), 0) => a.lt(&b),
                (Some(b), 1) => a.le(b),
                (Some(b), 2) => a.gt(&b),
                (Some(b), 3) => a.ge(&b),
                (Some(b), 4) => a.eq(&b),
                (Some(b), _) => a.ne(&b),
                (None, op) => [a.lt(0.5), a.ge(scalar(rng)), a.ne(1)][op % 3].clone(),
            };
            let picked = match rng.below(3) {
                0 => Tile::select(&cond, &a, scalar(rng)),
                1 => Tile::select(&cond, scalar(rng), a.clone()),
                _ => Tile::select(&cond, &a, a.neg()),
            };
            if rng.chance(30) {
                pool.ub.push(!&cond | &(&cond & &a.ne(0.0)));
            }
            pool.ub.push(cond);
            pool.ub.push(picked);
        }
        7 => {
            let a = numeric(k, rng, pool);
            let dtype = rng.pick(&[DType::F32, DType::F16, DType::BF16, DType::I32, DType::Bool]);
            pool.ub.push(a.cast(dtype));
        }
        8 => {
            let a = numeric(k, rng, pool);
            let rank = a.shape().len() as isize;
            if rank > 0 {
                let axis = rng.below(2 * rank as usize) as isize - rank;
                let t = match rng.below(8) {
                    0 => a.sum(axis),
                    1 => a.max_axis(axis),
                    2 => a.min_axis(axis),
                    3 => a.argmax(axis),
                    4 => a.argmin(axis),
                    5 => {
                        // A top-k of 1 to all of the row.
                        let last = a.shape().last().copied().unwrap_or(1);
                        let (values, indices) = a.top_k(rng.range(1, last));
                        pool.ub.push(values);
                        indices
                    }
                    6 => a.reshape([a.shape().iter().product::<usize>()]),
                    _ if a.dtype().is_float() => a.mean(axis),
                    _ => a.sum(axis),
                };
                pool.ub.push(t);
            }
        }
        9 => {
            let out = rng.pick(&env.outputs);
            let rank = out.shape().rank();
            let ready = pool.ub.iter().rfind(|t| t.shape().len() == rank);
            let tile = match ready {
                Some(t) if t.dtype() == out.dtype() => t.clone(),
                Some(t) => t.cast(out.dtype()),
                None => {
                    let dims = shape(rng, rank);
                    k.full(dims, out.dtype(), 1.0)
                }
            };
            let at = offsets(rng, vars, rank);
            k.store(&out, at, &tile)?;
        }
        10 => {
            let (m, kk, n) = (
                16 * rng.range(1, 2),
                16 * rng.range(1, 3),
                16 * rng.range(1, 2),
            );
            let dtype = rng.pick(&FLOATS);
            let transpose_b = rng.chance(50);
            let a = k.full([m, kk], dtype, scalar(rng)).to_l1();
            let b_dims = if transpose_b { [n, kk] } else { [kk, n] };
            let b = match env
                .globals
                .iter()
                .find(|g| g.dtype() == dtype && g.shape().rank() == 2)
            {
                Some(g) if rng.chance(50) => {
                    let at = offsets(rng, vars, 2);
                    k.load_l1(g, at, b_dims)?
                }
                _ => k.full(b_dims, dtype, scalar(rng)).to_l1(),
            };
            let acc = pool.l0c.iter().find(|t| t.shape() == [m, n]).cloned();
            let c = k.matmul(&a, &b, acc.as_ref(), transpose_b)?;
            match rng.below(3) {
                0 => pool.ub.push(c.to_ub(rng.pick(&FLOATS))),
                1 => {
                    c.to_l1();
                }
                _ => {}
            }
            pool.l0c.push(c);
        }
        _ if depth < 2 => {
            let mut init: Vec<Tile> = (0..rng.range(0, 3))
                .map(|_| numeric(k, rng, pool))
                .collect();
            if let Some(acc) = pool.l0c.last().filter(|_| rng.chance(50)) {
                init.push(acc.clone());
            }
            let count = rng.range(0, 5);
            let results = k.fold(count, &init, |k, i, carried| {
                let mut inner = pool.clone();
                for c in carried {
                    match c.level() {
                        MemLevel::L0C => inner.l0c.push(c.clone()),
                        _ => inner.ub.push(c.clone()),
                    }
                }
                let mut vars = vars.to_vec();
                vars.push(i);
                block(k, rng, env, &vars, &mut inner, depth + 1)?;
                let all: Vec<&Tile> = inner.ub.iter().chain(&inner.l0c).collect();
                Ok(carried
                    .iter()
                    .map(|c| {
                        let same: Vec<&Tile> =
                            all.iter().copied().filter(|t| t.ty() == c.ty()).collect();
                        rng.pick(&same).clone()
                    })
                    .collect())
            })?;
            for r in results {
                match r.level() {
                    MemLevel::L0C => pool.l0c.push(r),
                    _ => pool.ub.push(r),
                }
            }
        }
        _ => {}
    }
    Ok(())
}

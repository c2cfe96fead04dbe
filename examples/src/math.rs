//! Example ops on the tile language's math functions: rotary position embedding (RoPE)
//! with `sin`, `cos`, `floor` and `pow`, and one element-wise op per function family
//! (`demo.unary_math`, `demo.binary_math`) whose parity cases cover every function.

use pto_op::kernel::Idx;
use pto_op::prelude::*;

/// Bytes of f32 working data one row tile aims for (as `pto_op::kernel::rows` does).
const ROW_TILE_F32_BYTES: usize = 16 * 1024;

/// Rows per tile for rows of `cols` elements: a tile of f32 stays near 16 KiB.
fn rows_per_tile(rows: usize, cols: usize) -> usize {
    (ROW_TILE_F32_BYTES / (cols.max(1) * DType::F32.size_bytes())).clamp(1, rows.clamp(1, 64))
}

/// An error for param `param` of op `op`.
fn param_error(op: &str, param: &str, problem: String) -> OpError {
    OpError::Param {
        op: op.to_owned(),
        param: param.to_owned(),
        problem,
    }
}

/// Runs `body(k, r0)` for every row tile of a `[rows, cols]` tensor, `r0` the tile's first
/// row: the grid is the device's core count (at most one program per tile) and each
/// program strides over the tiles, `pid`, `pid + grid`, ...; tiles past the end are
/// masked away by the loads and stores.
fn for_each_row_tile(
    k: &mut Kernel,
    rows: usize,
    tile_rows: usize,
    body: impl Fn(&mut Kernel, Idx) -> Result<(), OpError>,
) -> Result<(), OpError> {
    let tiles = rows.div_ceil(tile_rows);
    let grid = k.core_count().clamp(1, tiles.max(1));
    k.grid(grid)?;
    let pid = k.program_id();
    k.fold(tiles.div_ceil(grid), &[], |k, i, _| {
        body(k, (pid + i * grid) * tile_rows)?;
        Ok(Vec::new())
    })?;
    Ok(())
}

/// Rotary position embedding, rotate-half form, of `x: [tokens, d]` (`d` even): token `t`
/// is at position `p = t mod seq_len` (`seq_len = 0`: one sequence, `p = t`), pair `i`
/// (`0 <= i < d/2`) turns by `theta = p * base^(-2i/d)`:
/// `y[:i] = x[:i] cos - x[i + d/2] sin`, `y[i + d/2] = x[i + d/2] cos + x[:i] sin`.
/// Float dtypes, which `y` keeps; computed in f32.
#[custom_op(name = "demo.rope", params(base: f32 = 10000.0, seq_len: i64 = 0))]
pub mod rope {
    use super::*;

    #[infer_shape]
    fn infer_shape(x: &Shape, p: &Params) -> Result<Shape, OpError> {
        x.expect_rank("x", 2)?;
        if x.last()? % 2 != 0 {
            return Err(OpError::input(
                "x",
                format!("the last axis of {x} must be even: it holds pairs"),
            ));
        }
        if p.seq_len < 0 {
            return Err(param_error(
                NAME,
                "seq_len",
                format!("expected 0 (one sequence) or a length, got {}", p.seq_len),
            ));
        }
        Ok(x.clone())
    }

    #[infer_dtype]
    fn infer_dtype(x: DType, _p: &Params) -> Result<DType, OpError> {
        match x.is_float() {
            true => Ok(x),
            false => Err(OpError::input(
                "x",
                format!("expected f32, f16 or bf16, got {x}"),
            )),
        }
    }

    #[reference]
    fn reference(x: &Tensor, p: &Params) -> Result<Tensor, OpError> {
        let x32 = x.to_f32_array();
        let (tokens, d) = (x32.shape()[0], x32.shape()[1]);
        let half = d / 2;
        let seq_len = usize::try_from(p.seq_len).unwrap_or(0);
        let step = (-2.0 / d as f64) as f32;
        let mut y = x32.clone();
        for t in 0..tokens {
            let position = if seq_len > 0 { t % seq_len } else { t } as f32;
            for i in 0..half {
                let theta = position * p.base.powf(i as f32 * step);
                let (sin, cos) = (theta.sin(), theta.cos());
                let (x1, x2) = (x32[[t, i]], x32[[t, i + half]]);
                y[[t, i]] = x1 * cos - x2 * sin;
                y[[t, i + half]] = x2 * cos + x1 * sin;
            }
        }
        Ok(Tensor::from_array(y).cast(x.dtype()))
    }

    #[parity(x = f32[64, 128])]
    #[parity(x = f32[37, 64], seq_len = 16)]
    #[parity(x = f32[100, 32], base = 500.0, seq_len = 25)]
    #[parity(x = f16[64, 128])]
    #[parity(x = f16[37, 64], seq_len = 16)]
    #[parity(x = f16[100, 32], base = 500.0, seq_len = 25)]
    #[kernel]
    fn kernel(k: &mut Kernel, x: &Global, y: &Global, p: &Params) -> Result<(), OpError> {
        let (tokens, d) = x.dims2()?;
        let half = d / 2;
        // Sized by whole rows: the two halves, their sin and cos and the products are
        // live together, and must fit the Ascend C UB plan as well as the simulator's.
        let bt = rows_per_tile(tokens, d);
        let seq_len = p.seq_len as f32;
        for_each_row_tile(k, tokens, bt, |k, r0| {
            // Positions: the token index, wrapped per sequence with floor (no casts).
            let token = k.iota([bt, 1], 0, r0, DType::F32);
            let position = if p.seq_len > 0 {
                &token - (&token / seq_len).floor() * seq_len
            } else {
                token
            };
            // Inverse frequencies base^(-2i/d), then the angles.
            let pair = k.iota([1, half], 1, 0, DType::F32);
            let inv_freq = (pair * (-2.0 / d as f64)).exp_base(p.base);
            let theta = position * inv_freq;
            let (sin, cos) = (theta.sin(), theta.cos());
            let x1 = k.load(x, (r0, 0), [bt, half])?.cast(DType::F32);
            let x2 = k.load(x, (r0, half), [bt, half])?.cast(DType::F32);
            let y1 = &x1 * &cos - &x2 * &sin;
            let y2 = x2 * cos + x1 * sin;
            k.store(y, (r0, 0), &y1.cast(y.dtype()))?;
            k.store(y, (r0, half), &y2.cast(y.dtype()))
        })
    }
}

/// The functions of [`unary_math`].
#[derive(Clone, Copy)]
enum UnaryFn {
    Sin,
    Cos,
    Floor,
    Ceil,
    Erf,
    Exp2,
    Log2,
}

impl UnaryFn {
    const NAMES: [(&str, UnaryFn); 7] = [
        ("sin", UnaryFn::Sin),
        ("cos", UnaryFn::Cos),
        ("floor", UnaryFn::Floor),
        ("ceil", UnaryFn::Ceil),
        ("erf", UnaryFn::Erf),
        ("exp2", UnaryFn::Exp2),
        ("log2", UnaryFn::Log2),
    ];

    fn parse(func: &str) -> Result<UnaryFn, OpError> {
        UnaryFn::NAMES
            .iter()
            .find(|(name, _)| *name == func)
            .map(|(_, f)| *f)
            .ok_or_else(|| {
                let names: Vec<&str> = UnaryFn::NAMES.iter().map(|(n, _)| *n).collect();
                param_error(
                    unary_math::NAME,
                    "func",
                    format!("expected one of {}, got {func:?}", names.join(", ")),
                )
            })
    }

    /// The CPU reference of one element.
    fn eval(self, v: f32) -> f32 {
        match self {
            UnaryFn::Sin => v.sin(),
            UnaryFn::Cos => v.cos(),
            UnaryFn::Floor => v.floor(),
            UnaryFn::Ceil => v.ceil(),
            UnaryFn::Erf => pto_op::ops::math::erf(f64::from(v)) as f32,
            UnaryFn::Exp2 => v.exp2(),
            UnaryFn::Log2 => v.log2(),
        }
    }

    /// The tile function.
    fn tile(self, t: &Tile) -> Tile {
        match self {
            UnaryFn::Sin => t.sin(),
            UnaryFn::Cos => t.cos(),
            UnaryFn::Floor => t.floor(),
            UnaryFn::Ceil => t.ceil(),
            UnaryFn::Erf => t.erf(),
            UnaryFn::Exp2 => t.exp2(),
            UnaryFn::Log2 => t.log2(),
        }
    }
}

/// `y = func(x * scale + shift)` element-wise on `x: [rows, cols]`, `func` one of `sin`,
/// `cos`, `floor`, `ceil`, `erf`, `exp2`, `log2`. Float dtypes, which `y` keeps;
/// computed in f32. The grid is the device's core count.
#[custom_op(
    name = "demo.unary_math",
    params(func: String = "sin", scale: f32 = 1.0, shift: f32 = 0.0)
)]
pub mod unary_math {
    use super::*;

    #[infer_shape]
    fn infer_shape(x: &Shape, p: &Params) -> Result<Shape, OpError> {
        UnaryFn::parse(&p.func)?;
        x.expect_rank("x", 2)?;
        Ok(x.clone())
    }

    #[infer_dtype]
    fn infer_dtype(x: DType, _p: &Params) -> Result<DType, OpError> {
        match x.is_float() {
            true => Ok(x),
            false => Err(OpError::input(
                "x",
                format!("expected f32, f16 or bf16, got {x}"),
            )),
        }
    }

    #[reference]
    fn reference(x: &Tensor, p: &Params) -> Result<Tensor, OpError> {
        let f = UnaryFn::parse(&p.func)?;
        let y = x.to_f32_array().mapv(|v| f.eval(v * p.scale + p.shift));
        Ok(Tensor::from_array(y).cast(x.dtype()))
    }

    #[parity(x = f32[40, 96], func = "sin", scale = 4.0)]
    #[parity(x = f16[40, 96], func = "sin", scale = 4.0)]
    #[parity(x = f32[40, 96], func = "cos", scale = 4.0)]
    #[parity(x = f16[40, 96], func = "cos", scale = 4.0)]
    #[parity(x = f32[33, 70], func = "floor", scale = 4.0)]
    #[parity(x = f16[33, 70], func = "floor", scale = 4.0)]
    #[parity(x = f32[33, 70], func = "ceil", scale = 4.0)]
    #[parity(x = f16[33, 70], func = "ceil", scale = 4.0)]
    #[parity(x = f32[40, 96], func = "erf", scale = 3.0)]
    #[parity(x = f16[40, 96], func = "erf", scale = 3.0)]
    #[parity(x = f32[40, 96], func = "exp2", scale = 4.0)]
    #[parity(x = f16[40, 96], func = "exp2", scale = 4.0)]
    #[parity(x = f32[40, 96], func = "log2", shift = 2.0)]
    #[parity(x = f16[40, 96], func = "log2", shift = 2.0)]
    #[kernel]
    fn kernel(k: &mut Kernel, x: &Global, y: &Global, p: &Params) -> Result<(), OpError> {
        let f = UnaryFn::parse(&p.func)?;
        let (rows, cols) = x.dims2()?;
        let bt = rows_per_tile(rows, cols);
        for_each_row_tile(k, rows, bt, |k, r0| {
            let xt = k.load(x, (r0, 0), [bt, cols])?.cast(DType::F32);
            let yt = f.tile(&(xt * p.scale + p.shift));
            k.store(y, (r0, 0), &yt.cast(y.dtype()))
        })
    }
}

/// The functions of [`binary_math`].
#[derive(Clone, Copy)]
enum BinaryFn {
    Pow,
    Rem,
    Mod,
}

impl BinaryFn {
    fn parse(func: &str) -> Result<BinaryFn, OpError> {
        match func {
            "pow" => Ok(BinaryFn::Pow),
            "rem" => Ok(BinaryFn::Rem),
            "mod" => Ok(BinaryFn::Mod),
            other => Err(param_error(
                binary_math::NAME,
                "func",
                format!("expected one of pow, rem, mod, got {other:?}"),
            )),
        }
    }

    /// The CPU reference of one element pair.
    fn eval(self, a: f32, b: f32) -> f32 {
        match self {
            BinaryFn::Pow => a.powf(b),
            BinaryFn::Rem => a % b,
            BinaryFn::Mod => pto_op::ops::math::floor_mod(a, b),
        }
    }

    /// The tile function.
    fn tile(self, a: &Tile, b: &Tile) -> Tile {
        match self {
            BinaryFn::Pow => a.pow(b),
            BinaryFn::Rem => a % b,
            BinaryFn::Mod => a.modulo(b),
        }
    }
}

/// `y = func(a * a_scale + a_shift, b * b_scale + b_shift)` element-wise on `a`, `b` of one
/// shape `[rows, cols]`, `func` one of `pow` (`a^b`), `rem` (truncated remainder, the
/// sign of `a`, as Rust's `%`) and `mod` (floored remainder, the sign of `b`, as Python's
/// `%`). Float dtypes, which `y` keeps; computed in f32.
#[custom_op(
    name = "demo.binary_math",
    params(
        func: String = "pow",
        a_scale: f32 = 1.0,
        a_shift: f32 = 0.0,
        b_scale: f32 = 1.0,
        b_shift: f32 = 0.0
    )
)]
pub mod binary_math {
    use super::*;

    #[infer_shape]
    fn infer_shape(a: &Shape, b: &Shape, p: &Params) -> Result<Shape, OpError> {
        BinaryFn::parse(&p.func)?;
        a.expect_rank("a", 2)?;
        b.expect_eq("b", a)?;
        Ok(a.clone())
    }

    #[infer_dtype]
    fn infer_dtype(a: DType, b: DType, _p: &Params) -> Result<DType, OpError> {
        if !a.is_float() {
            return Err(OpError::input(
                "a",
                format!("expected f32, f16 or bf16, got {a}"),
            ));
        }
        if b != a {
            return Err(OpError::input(
                "b",
                format!("expected dtype {a} (that of a), got {b}"),
            ));
        }
        Ok(a)
    }

    #[reference]
    fn reference(a: &Tensor, b: &Tensor, p: &Params) -> Result<Tensor, OpError> {
        let f = BinaryFn::parse(&p.func)?;
        let a32 = a.to_f32_array().mapv(|v| v * p.a_scale + p.a_shift);
        let b32 = b.to_f32_array().mapv(|v| v * p.b_scale + p.b_shift);
        let y = ndarray::Zip::from(&a32)
            .and(&b32)
            .map_collect(|&x, &y| f.eval(x, y));
        Ok(Tensor::from_array(y).cast(a.dtype()))
    }

    #[parity(a = f32[40, 96], b = f32[40, 96], func = "pow", a_shift = 2.0, b_scale = 3.0)]
    #[parity(a = f16[40, 96], b = f16[40, 96], func = "pow", a_shift = 2.0, b_scale = 3.0)]
    #[parity(a = f32[33, 70], b = f32[33, 70], func = "rem", a_scale = 8.0, b_scale = 3.0)]
    #[parity(a = f16[33, 70], b = f16[33, 70], func = "rem", a_scale = 8.0, b_scale = 3.0)]
    #[parity(a = f32[33, 70], b = f32[33, 70], func = "mod", a_scale = 8.0, b_scale = 3.0)]
    #[parity(a = f16[33, 70], b = f16[33, 70], func = "mod", a_scale = 8.0, b_scale = 3.0)]
    #[kernel]
    fn kernel(
        k: &mut Kernel,
        a: &Global,
        b: &Global,
        y: &Global,
        p: &Params,
    ) -> Result<(), OpError> {
        let f = BinaryFn::parse(&p.func)?;
        let (rows, cols) = a.dims2()?;
        let bt = rows_per_tile(rows, cols);
        for_each_row_tile(k, rows, bt, |k, r0| {
            let at = k.load(a, (r0, 0), [bt, cols])?.cast(DType::F32) * p.a_scale + p.a_shift;
            let b_tile = k.load(b, (r0, 0), [bt, cols])?.cast(DType::F32) * p.b_scale + p.b_shift;
            k.store(y, (r0, 0), &f.tile(&at, &b_tile).cast(y.dtype()))
        })
    }
}

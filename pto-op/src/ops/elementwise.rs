//! Element-wise standard ops: arithmetic with numpy broadcasting, and activations.

use ndarray::{ArrayD, ArrayViewD, IxDyn};

use super::checks::{expect_dtype_of, expect_float, kernel_unsupported, param_error};
use super::math::{ERFC_COEFFICIENTS, gelu_erf, gelu_tanh};
use crate::kernel::rows::{RowTiles, elementwise_tiles};
use crate::prelude::*;

/// The output shape of a binary op: the numpy broadcast of `a` and `b`.
pub(super) fn broadcast_shapes(a: &Shape, b: &Shape) -> Result<Shape, OpError> {
    a.broadcast(b).map_err(|_| {
        OpError::input(
            "b",
            format!(
                "shape {b} does not broadcast with a of shape {a}: aligned from the last axis, \
                 each pair of dims must be equal or one of them 1"
            ),
        )
    })
}

/// The dtype of a binary arithmetic op: `a`'s, which `b` must share; a float or an integer.
fn arithmetic_dtype(a: DType, b: DType) -> Result<DType, OpError> {
    if !(a.is_float() || a.is_integer()) {
        return Err(OpError::input(
            "a",
            format!("expected a float or an integer dtype, got {a}"),
        ));
    }
    expect_dtype_of("b", b, "a", a)?;
    Ok(a)
}

/// The elements of an integer tensor, exactly, as i128.
pub(super) fn integers_i128(t: &Tensor) -> Result<ArrayD<i128>, OpError> {
    Ok(match t.dtype() {
        DType::U64 => t.view::<u64>()?.mapv(i128::from),
        _ => t.cast(DType::I64).view::<i64>()?.mapv(i128::from),
    })
}

/// The range of an integer dtype.
pub(super) fn integer_range(dtype: DType) -> (i128, i128) {
    match dtype {
        DType::I8 => (i8::MIN.into(), i8::MAX.into()),
        DType::U8 => (0, u8::MAX.into()),
        DType::I16 => (i16::MIN.into(), i16::MAX.into()),
        DType::U16 => (0, u16::MAX.into()),
        DType::I32 => (i32::MIN.into(), i32::MAX.into()),
        DType::U32 => (0, u32::MAX.into()),
        DType::U64 => (0, u64::MAX.into()),
        _ => (i64::MIN.into(), i64::MAX.into()),
    }
}

/// An integer tensor of `dtype` from values within its range.
pub(super) fn from_i128(values: ArrayD<i128>, dtype: DType) -> Tensor {
    match dtype {
        DType::U64 => Tensor::from_array(values.mapv(|v| v as u64)),
        _ => Tensor::from_array(values.mapv(|v| v as i64)).cast(dtype),
    }
}

/// One of the four arithmetic operations.
#[derive(Debug, Clone, Copy)]
enum Arith {
    Add,
    Sub,
    Mul,
    Div,
}

impl Arith {
    fn float(self, x: f32, y: f32) -> f32 {
        match self {
            Arith::Add => x + y,
            Arith::Sub => x - y,
            Arith::Mul => x * y,
            Arith::Div => x / y,
        }
    }

    /// Integer arithmetic in i128; `None` on overflow or division by zero.
    fn integer(self, x: i128, y: i128) -> Option<i128> {
        match self {
            Arith::Add => x.checked_add(y),
            Arith::Sub => x.checked_sub(y),
            Arith::Mul => x.checked_mul(y),
            Arith::Div => x.checked_div(y),
        }
    }

    fn double(self, x: f64, y: f64) -> f64 {
        match self {
            Arith::Add => x + y,
            Arith::Sub => x - y,
            Arith::Mul => x * y,
            Arith::Div => x / y,
        }
    }

    fn symbol(self) -> char {
        match self {
            Arith::Add => '+',
            Arith::Sub => '-',
            Arith::Mul => '*',
            Arith::Div => '/',
        }
    }

    fn tile(self, x: Tile, y: Tile) -> Tile {
        match self {
            Arith::Add => x + y,
            Arith::Sub => x - y,
            Arith::Mul => x * y,
            Arith::Div => x / y,
        }
    }
}

/// `f` applied to the elements of `a` and `b` broadcast together, in row-major order.
fn zip_broadcast<T: Copy, U>(
    a: ArrayViewD<'_, T>,
    b: ArrayViewD<'_, T>,
    mut f: impl FnMut(T, T) -> Result<U, OpError>,
) -> Result<ArrayD<U>, OpError> {
    let shape = broadcast_shapes(&Shape::from(a.shape()), &Shape::from(b.shape()))?;
    let dims = IxDyn(shape.dims());
    let not_broadcast = || OpError::input("b", format!("does not broadcast to {shape}"));
    let a = a.broadcast(dims.clone()).ok_or_else(not_broadcast)?;
    let b = b.broadcast(dims.clone()).ok_or_else(not_broadcast)?;
    let values = a
        .iter()
        .zip(b.iter())
        .map(|(x, y)| f(*x, *y))
        .collect::<Result<Vec<U>, OpError>>()?;
    ArrayD::from_shape_vec(dims, values)
        .map_err(|e| OpError::invalid(format!("broadcast result of shape {shape}: {e}")))
}

/// The reference of a binary arithmetic op: floats in f32 (f64 in f64), integers exactly
/// with overflow and division by zero reported.
fn arithmetic_reference(a: &Tensor, b: &Tensor, op: Arith) -> Result<Tensor, OpError> {
    let dtype = a.dtype();
    if dtype == DType::F64 {
        let y = zip_broadcast(a.view::<f64>()?, b.view::<f64>()?, |x, y| {
            Ok(op.double(x, y))
        })?;
        return Ok(Tensor::from_array(y));
    }
    if dtype.is_float() {
        let (mut a32, b32) = (a.to_f32_array(), b.to_f32_array());
        if broadcast_shapes(&a.shape(), &b.shape())? == a.shape() {
            // `b` broadcasts to `a`: compute in place in `a`'s copy, no third array.
            a32.zip_mut_with(&b32, |x, &y| *x = op.float(*x, y));
            return Ok(Tensor::from_f32_array(a32, dtype));
        }
        let y = zip_broadcast(a32.view(), b32.view(), |x, y| Ok(op.float(x, y)))?;
        return Ok(Tensor::from_f32_array(y, dtype));
    }
    let (a128, b128) = (integers_i128(a)?, integers_i128(b)?);
    let (low, high) = integer_range(dtype);
    let fits = |v: i128| (low..=high).contains(&v);
    let y = zip_broadcast(a128.view(), b128.view(), |x, y| {
        op.integer(x, y).filter(|&v| fits(v)).ok_or_else(|| {
            let problem = match (op, y) {
                (Arith::Div, 0) => "division by zero".to_owned(),
                _ => format!("overflows {dtype}"),
            };
            OpError::input("b", format!("{x} {} {y}: {problem}", op.symbol()))
        })
    })?;
    Ok(from_i128(y, dtype))
}

/// The tile of `x` that meets the output row tile `tiles` when `x` broadcasts to the
/// output: its size-1 dims are loaded once (offset 0), the others follow the output tile.
pub(super) fn load_broadcast(
    k: &mut Kernel,
    x: &Global,
    tiles: &RowTiles,
) -> Result<Tile, OpError> {
    let dims = x.shape().dims();
    let skipped = tiles.shape.len().checked_sub(dims.len()).ok_or_else(|| {
        OpError::input(
            x.name(),
            format!("shape {} has a higher rank than the output", x.shape()),
        )
    })?;
    if dims.is_empty() {
        return Err(kernel_unsupported(
            k.op(),
            &format!("input `{}`", x.name()),
            "the kernel needs rank >= 1, got a scalar: reshape it to [1]",
        ));
    }
    let (offsets, shape): (Vec<Idx>, Vec<usize>) = dims
        .iter()
        .enumerate()
        .map(|(axis, &dim)| match dim {
            1 => (Idx::from(0), 1),
            _ => (tiles.offsets[skipped + axis], tiles.shape[skipped + axis]),
        })
        .unzip();
    k.load(x, offsets, shape)
}

/// `t` as `dtype`: `t` itself when it has that dtype already. A cast to its own dtype would
/// copy the tile (the Ascend C lowering gives the copy a buffer of its own).
pub(super) fn cast_to(t: Tile, dtype: DType) -> Tile {
    match t.dtype() == dtype {
        true => t,
        false => t.cast(dtype),
    }
}

/// The kernel of a binary arithmetic op: row tiles of the output, each input loaded
/// broadcast to the tile (any numpy broadcast), floats computed in f32.
fn arithmetic_kernel(
    k: &mut Kernel,
    name: &str,
    live_tiles: usize,
    a: &Global,
    b: &Global,
    y: &Global,
    op: Arith,
) -> Result<(), OpError> {
    let dtype = y.dtype();
    if matches!(dtype, DType::F64 | DType::U32 | DType::U64) {
        return Err(kernel_unsupported(
            name,
            "input `a`",
            format!(
                "the kernel computes in f32, which does not hold every {dtype} value: {dtype} \
                 arithmetic runs on the cpu target"
            ),
        ));
    }
    if matches!(op, Arith::Div) && !dtype.is_float() {
        return Err(kernel_unsupported(
            name,
            "input `a`",
            format!(
                "the kernel divides floats only, got {dtype}: integer division runs on the \
                 cpu target"
            ),
        ));
    }
    let tiles = elementwise_tiles(k, y, live_tiles)?;
    let mut at = load_broadcast(k, a, &tiles)?;
    let mut bt = load_broadcast(k, b, &tiles)?;
    if dtype.is_float() {
        at = cast_to(at, DType::F32);
        bt = cast_to(bt, DType::F32);
    }
    let result = cast_to(op.tile(at, bt), dtype);
    k.store(y, tiles.offsets, &result)
}

broadcast_binary_op! {
    /// y = a + b, numpy broadcasting.
    ///
    /// `a` and `b` share one dtype (a float or an integer type; cast one otherwise), which `y`
    /// keeps. Floats are added in f32 (f64 in f64); integers exactly, and a result out of the dtype's range
    /// is an error.
    "std.add",
    add,
    dtype: arithmetic_dtype,
    reference: |a, b| arithmetic_reference(a, b, Arith::Add),
    kernel: |k, a, b, y| arithmetic_kernel(k, NAME, LIVE_TILES, a, b, y, Arith::Add),
    live_tiles: 4,
}

broadcast_binary_op! {
    /// y = a - b, numpy broadcasting.
    ///
    /// `a` and `b` share one dtype (a float or an integer type; cast one otherwise), which `y`
    /// keeps. Floats are subtracted in f32 (f64 in f64); integers exactly, and a result out of the dtype's
    /// range is an error.
    "std.sub",
    sub,
    dtype: arithmetic_dtype,
    reference: |a, b| arithmetic_reference(a, b, Arith::Sub),
    kernel: |k, a, b, y| arithmetic_kernel(k, NAME, LIVE_TILES, a, b, y, Arith::Sub),
    live_tiles: 4,
}

broadcast_binary_op! {
    /// y = a * b, numpy broadcasting.
    ///
    /// `a` and `b` share one dtype (a float or an integer type; cast one otherwise), which `y`
    /// keeps. Floats are multiplied in f32 (f64 in f64); integers exactly, and a result out of the dtype's
    /// range is an error.
    "std.mul",
    mul,
    dtype: arithmetic_dtype,
    reference: |a, b| arithmetic_reference(a, b, Arith::Mul),
    kernel: |k, a, b, y| arithmetic_kernel(k, NAME, LIVE_TILES, a, b, y, Arith::Mul),
    live_tiles: 4,
}

broadcast_binary_op! {
    /// y = a / b, numpy broadcasting.
    ///
    /// `a` and `b` share one dtype (a float or an integer type; cast one otherwise), which `y`
    /// keeps. Floats are divided in f32, f64 in f64 (IEEE: x / 0 is infinite); integers truncate toward
    /// zero, as in ONNX, and division by zero is an error. The kernel divides floats only.
    "std.div",
    div,
    dtype: arithmetic_dtype,
    reference: |a, b| arithmetic_reference(a, b, Arith::Div),
    kernel: |k, a, b, y| arithmetic_kernel(k, NAME, LIVE_TILES, a, b, y, Arith::Div),
    live_tiles: 4,
}

/// The reference of a float activation: `f` on each element in f32.
pub(super) fn activation_reference(x: &Tensor, f: impl Fn(f32) -> f32) -> Tensor {
    let mut y = x.to_f32_array();
    y.mapv_inplace(f);
    Tensor::from_f32_array(y, x.dtype())
}

/// The kernel of a float activation: element-wise tiles sized for `live_tiles` live f32
/// tiles, `f` on each tile in f32.
pub(super) fn activation_kernel(
    k: &mut Kernel,
    x: &Global,
    y: &Global,
    live_tiles: usize,
    f: impl Fn(&Tile) -> Tile,
) -> Result<(), OpError> {
    let tiles = elementwise_tiles(k, x, live_tiles)?;
    let xt = cast_to(k.load(x, tiles.offsets.clone(), &tiles.shape)?, DType::F32);
    k.store(y, tiles.offsets, &cast_to(f(&xt), y.dtype()))
}

float_unary_op! {
    /// y = max(x, 0), element-wise. Float dtypes, which `y` keeps.
    "std.relu",
    relu,
    // Not `v.max(0.0)`, which gives 0 for NaN: ONNX Relu propagates NaN.
    reference: |v| if v < 0.0 { 0.0 } else { v },
    kernel: Tile::relu,
    live_tiles: 2,
}

float_unary_op! {
    /// y = 1 / (1 + exp(-x)), element-wise. Float dtypes, which `y` keeps; computed in f32.
    "std.sigmoid",
    sigmoid,
    reference: |v| 1.0 / (1.0 + (-v).exp()),
    kernel: Tile::sigmoid,
    live_tiles: 2,
}

float_unary_op! {
    /// y = x * sigmoid(x) (SiLU, swish), element-wise. Float dtypes, which `y` keeps; computed
    /// in f32.
    "std.silu",
    silu,
    reference: |v| v / (1.0 + (-v).exp()),
    kernel: Tile::silu,
    live_tiles: 3,
}

/// The two forms of GELU, as ONNX Gelu's `approximate` attribute names them: what
/// `std.gelu`'s param selects (public for what runs the op, such as the cpu target's fast
/// path).
#[derive(Debug, Clone, Copy)]
pub enum GeluForm {
    /// `x * Phi(x)`, with the normal CDF through erf.
    Erf,
    /// The tanh approximation.
    Tanh,
}

impl GeluForm {
    /// The form `std.gelu`'s param `approximate` names: `"none"` (erf) or `"tanh"`.
    ///
    /// # Errors
    ///
    /// Any other name, as a param error of `std.gelu`.
    pub fn parse(approximate: &str) -> Result<GeluForm, OpError> {
        match approximate {
            "none" => Ok(GeluForm::Erf),
            "tanh" => Ok(GeluForm::Tanh),
            other => Err(param_error(
                gelu::NAME,
                "approximate",
                format!("expected \"none\" (erf form) or \"tanh\", got {other:?}"),
            )),
        }
    }
}

/// `x * Phi(x)` on an f32 tile, with `Phi(x) = erfc(-x / sqrt 2) / 2` through the formula of
/// [`super::math::erfc_nonnegative`] on `|x| / sqrt 2`, mirrored for negative `x`.
fn gelu_erf_tile(x: &Tile) -> Tile {
    let z = x.abs() * core::f64::consts::FRAC_1_SQRT_2;
    let t = (&z * 0.5 + 1.0).recip();
    // Horner's rule, from the highest coefficient down.
    let mut poly = &t * ERFC_COEFFICIENTS[9] + ERFC_COEFFICIENTS[8];
    for c in ERFC_COEFFICIENTS[..8].iter().rev() {
        poly = poly * &t + *c;
    }
    // erfc(|x| / sqrt 2) / 2: the tail probability beyond |x|.
    let tail = t * (poly - z.square()).exp() * 0.5;
    let phi = Tile::select(&x.ge(0.0), tail.neg() + 1.0, &tail);
    x * phi
}

/// y = gelu(x), element-wise, as ONNX Gelu: `approximate = "none"` is the exact form
/// `x * Phi(x)` (Phi the normal CDF, through erf), `"tanh"` the tanh approximation
/// `0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))`. Float dtypes, which `y` keeps;
/// computed in f32.
#[custom_op(name = "std.gelu", params(approximate: String = "none"))]
pub mod gelu {
    use super::*;

    /// Row tiles (f32) the erf form's kernel keeps live in UB at once, on the simulator and
    /// in its Ascend C lowering: what its column chunks are sized for
    /// ([`crate::kernel::rows::elementwise_tiles`]).
    pub const ERF_LIVE_TILES: usize = 5;

    /// The same for the tanh form.
    pub const TANH_LIVE_TILES: usize = 3;

    #[infer_shape]
    fn infer_shape(x: &Shape, p: &Params) -> Result<Shape, OpError> {
        GeluForm::parse(&p.approximate)?;
        Ok(x.clone())
    }

    #[infer_dtype]
    fn infer_dtype(x: DType, _p: &Params) -> Result<DType, OpError> {
        expect_float("x", x)
    }

    #[reference]
    fn reference(x: &Tensor, p: &Params) -> Result<Tensor, OpError> {
        Ok(match GeluForm::parse(&p.approximate)? {
            GeluForm::Erf => activation_reference(x, gelu_erf),
            GeluForm::Tanh => activation_reference(x, gelu_tanh),
        })
    }

    #[kernel]
    fn kernel(k: &mut Kernel, x: &Global, y: &Global, p: &Params) -> Result<(), OpError> {
        match GeluForm::parse(&p.approximate)? {
            GeluForm::Erf => activation_kernel(k, x, y, ERF_LIVE_TILES, gelu_erf_tile),
            GeluForm::Tanh => activation_kernel(k, x, y, TANH_LIVE_TILES, Tile::gelu),
        }
    }
}

crate::register_sweep!(
    ADD_SWEEP,
    crate::sweep::SweepDef {
        op: add::NAME,
        sizes: || crate::sweep::rows_cols(|r, c| vec![vec![r, c], vec![r, c]]),
        location: crate::source_location!(),
    }
);

crate::register_sweep!(
    GELU_SWEEP,
    crate::sweep::SweepDef {
        op: gelu::NAME,
        sizes: || crate::sweep::rows_cols(|r, c| vec![vec![r, c]]),
        location: crate::source_location!(),
    }
);

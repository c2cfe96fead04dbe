//! Fast CPU paths: kernels an op registers for the `cpu` target beside its reference, and
//! the thread knob they share.
//!
//! An op's `#[reference]` is the ground truth: plain, allocating, one thread. A graph run on
//! the CPU spends its time in a few ops (matrix products, softmax, norms, activations), so
//! an op may also register a [`CpuKernelDef`] with [`register_cpu_kernel!`](crate::register_cpu_kernel): at compile
//! time its `prepare` looks at the node's input types and params and either declines
//! (`Ok(None)`: the reference runs) or returns a [`CpuKernel`] that writes the node's
//! outputs into buffers the runtime owns and reuses from run to run (no allocation per
//! node). A fast path's results match the reference within the op's tolerance, which the
//! op's parity tests check.
//!
//! Kernels split large work over [`threads`] threads in fixed pieces (a piece never depends
//! on the thread count), so results are bit-identical whatever the number of threads:
//! [`set_threads`]`(1)` gives the single-threaded runs benchmarks compare against, and the
//! default is every core. The library reads no environment; the command line sets the
//! knob from `PTO_CPU_THREADS`. The pieces run on this thread and on worker threads kept
//! for the whole process ([`for_each_piece`]), so an op does not pay for starting threads.

use core::fmt;
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::attr::Attributes;
use crate::error::OpError;
use crate::op::{OpDef, SourceLocation, TensorType};
use crate::tensor::{Comparison, Tensor};

mod pool;

#[cfg(target_arch = "x86_64")]
pub(crate) mod matmul_avx512;

/// A prepared fast path of one node: its input types and params were accepted at compile
/// time, so a run only computes.
pub trait CpuKernel: fmt::Debug + Send + Sync {
    /// Writes the node's outputs into `outputs`: tensors of the node's output types whose
    /// elements are unspecified (reused buffers). Every element must be written.
    ///
    /// # Errors
    ///
    /// Inputs that do not have the types the kernel was prepared for, or a value error of
    /// the op (as its reference would report it).
    fn run(&self, inputs: &[&Tensor], outputs: &mut [Tensor]) -> Result<(), OpError>;
}

/// What preparing a fast path gives: a kernel, or `None` to decline (the reference runs).
pub type PreparedCpuKernel = Result<Option<Box<dyn CpuKernel>>, OpError>;

/// Prepares a fast path for a node of the op from its input types and params.
pub type PrepareCpuKernelFn = fn(inputs: &[TensorType], attrs: &Attributes) -> PreparedCpuKernel;

/// A fast CPU path of one op, registered with [`register_cpu_kernel!`](crate::register_cpu_kernel).
#[derive(Debug)]
pub struct CpuKernelDef {
    /// The op's name.
    pub op: &'static str,
    /// Accepts or declines a node, by its input types and params.
    pub prepare: PrepareCpuKernelFn,
    /// Where it is registered.
    pub source: SourceLocation,
}

#[doc(hidden)]
#[linkme::distributed_slice]
pub static CPU_KERNELS: [CpuKernelDef];

/// Registers a fast CPU path (one per op): `register_cpu_kernel!(STATIC_NAME, op_name,
/// prepare)` with `prepare` a [`PrepareCpuKernelFn`].
///
/// ```ignore
/// pto_op::register_cpu_kernel!(MY_OP_CPU, my_op::NAME, prepare_my_op);
/// ```
#[macro_export]
macro_rules! register_cpu_kernel {
    ($static_name:ident, $op:expr, $prepare:expr) => {
        #[$crate::__private::linkme::distributed_slice($crate::__private::CPU_KERNELS)]
        #[linkme(crate = $crate::__private::linkme)]
        static $static_name: $crate::cpu::CpuKernelDef = $crate::cpu::CpuKernelDef {
            op: $op,
            prepare: $prepare,
            source: $crate::source_location!(),
        };
    };
}

/// The fast path of `op` for a node with `inputs` and `attrs`, if one is registered and
/// accepts it.
///
/// # Errors
///
/// Two fast paths registered for one op (naming both places), or params the fast path
/// cannot read.
pub fn prepare(op: &str, inputs: &[TensorType], attrs: &Attributes) -> PreparedCpuKernel {
    let mut found = CPU_KERNELS.iter().filter(|def| def.op == op);
    let Some(def) = found.next() else {
        return Ok(None);
    };
    if let Some(other) = found.next() {
        return Err(OpError::Unsupported {
            op: op.to_owned(),
            message: format!(
                "two CPU fast paths are registered for the op, at {} and at {}: link one",
                def.source, other.source
            ),
        });
    }
    (def.prepare)(inputs, attrs)
}

/// The f32 elements of a unary op's input and output.
///
/// # Errors
///
/// Not one input and one output, or not f32.
pub fn unary_f32<'a>(
    inputs: &[&'a Tensor],
    outputs: &'a mut [Tensor],
) -> Result<(&'a [f32], &'a mut [f32]), OpError> {
    match (inputs, outputs) {
        ([x], [y]) => Ok((x.as_slice::<f32>()?, y.as_slice_mut::<f32>()?)),
        (inputs, outputs) => Err(arity(inputs.len(), outputs.len(), 1)),
    }
}

/// A binary op's f32 elements: `a`, `b` and the output `y`.
pub type BinaryF32<'a> = (&'a [f32], &'a [f32], &'a mut [f32]);

/// The f32 elements of a binary op's inputs and output.
///
/// # Errors
///
/// Not two inputs and one output, or not f32.
pub fn binary_f32<'a>(
    inputs: &[&'a Tensor],
    outputs: &'a mut [Tensor],
) -> Result<BinaryF32<'a>, OpError> {
    match (inputs, outputs) {
        ([a, b], [y]) => Ok((
            a.as_slice::<f32>()?,
            b.as_slice::<f32>()?,
            y.as_slice_mut::<f32>()?,
        )),
        (inputs, outputs) => Err(arity(inputs.len(), outputs.len(), 2)),
    }
}

fn arity(inputs: usize, outputs: usize, expected: usize) -> OpError {
    OpError::invalid(format!(
        "a fast path prepared for {expected} input(s) and 1 output was run with {inputs} \
         input(s) and {outputs} output(s)"
    ))
}

/// How the second operand of [`matmul`] is stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layout {
    /// `b` (depth x n) row-major.
    RowMajor,
    /// `b`'s transpose (n x depth) row-major: `a @ b^T` of a stored `b^T`, as in `q k^T`.
    Transposed,
}

/// The kernels a [`matmul`] can run on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum MatmulKernel {
    /// AVX-512F (x86-64), for a row-major `b` only: `b` read where it lies, not packed
    /// per call, so nothing is allocated; the depth is summed in order, one fused
    /// multiply-add at a time.
    Avx512,
    /// The `gemm` crate: any layout and CPU; it packs `b` per call, into a buffer it
    /// allocates.
    GemmCrate,
}

impl MatmulKernel {
    /// The kernel [`matmul`] runs for an m x depth by depth x n product with `b` stored
    /// as `b_layout` on this CPU: the AVX-512 one where it can (a row-major `b`, a CPU with
    /// AVX-512F) and where it is the faster, else the `gemm` crate.
    ///
    /// Faster, as measured (CPU time of one thread, AMD EPYC with AVX-512): with few rows
    /// the `gemm` crate's copy of `b` per call costs more than it saves (32 x 4096 @ 4096 x
    /// 11008: 45 ms against 55; 48 x 2048 @ 2048 x 5632: 15 against 16), with more rows it
    /// pays (64 rows: 20 against 17; 128 x 2048 @ 2048 x 5632: 35 against 30); a `b` that
    /// stays in cache is not worth copying at any size (64 x 64 @ 64 x 64: 4.6 us against
    /// 5.1).
    ///
    /// ```
    /// use pto_op::cpu::{Layout, MatmulKernel};
    /// let kernel = MatmulKernel::for_product(Layout::Transposed, (32, 4096, 4096));
    /// assert_eq!(kernel, MatmulKernel::GemmCrate);
    /// ```
    pub fn for_product(b_layout: Layout, (m, depth, n): (usize, usize, usize)) -> Self {
        /// Rows up to which the AVX-512 kernel is the faster for any `b`.
        const FEW_ROWS: usize = 48;
        /// Elements of a `b` that stays in L2 (256 KiB of f32).
        const CACHED_B: usize = 1 << 16;
        let faster = m <= FEW_ROWS || depth.saturating_mul(n) <= CACHED_B;
        if b_layout == Layout::RowMajor && faster && Self::Avx512.available() {
            Self::Avx512
        } else {
            Self::GemmCrate
        }
    }

    /// Whether this CPU runs the kernel.
    pub fn available(self) -> bool {
        match self {
            #[cfg(target_arch = "x86_64")]
            Self::Avx512 => matmul_avx512::available(),
            #[cfg(not(target_arch = "x86_64"))]
            Self::Avx512 => false,
            Self::GemmCrate => true,
        }
    }
}

/// `y = a @ b` in f32: `a` m x depth row-major, `b` depth x n stored as `b_layout` says,
/// `y` m x n row-major, on [`MatmulKernel::for_product`], over [`threads`] threads in
/// pieces of 256 output columns (fixed by `n` alone).
///
/// ```
/// use pto_op::cpu::{Layout, matmul};
/// let (a, b) = ([1.0f32, 2.0, 3.0, 4.0], [1.0f32, 0.0, 0.0, 1.0]);
/// let mut y = [0.0f32; 4];
/// matmul(&a, &b, Layout::Transposed, (2, 2, 2), &mut y).unwrap();
/// assert_eq!(y, [1.0, 2.0, 3.0, 4.0]);
/// ```
///
/// # Errors
///
/// Slices of other lengths than the dims say.
pub fn matmul(
    a: &[f32],
    b: &[f32],
    b_layout: Layout,
    dims: (usize, usize, usize),
    y: &mut [f32],
) -> Result<(), OpError> {
    crate::ops::matmul_f32(a, b, b_layout == Layout::Transposed, dims, y)
}

/// [`matmul`] on a kernel of the caller's choice, for tests and benchmarks: a CPU with
/// AVX-512 can still run the `gemm` crate's path.
///
/// ```
/// use pto_op::cpu::{Layout, MatmulKernel, matmul_on};
/// let (a, b) = ([1.0f32, 2.0, 3.0, 4.0], [0.0f32, 1.0, 1.0, 0.0]);
/// let mut y = [0.0f32; 4];
/// matmul_on(MatmulKernel::GemmCrate, &a, &b, Layout::RowMajor, (2, 2, 2), &mut y).unwrap();
/// assert_eq!(y, [2.0, 1.0, 4.0, 3.0]);
/// ```
///
/// # Errors
///
/// Slices of other lengths than the dims say, or a kernel that this CPU cannot run
/// ([`MatmulKernel::available`]) or that does not take `b_layout`.
pub fn matmul_on(
    kernel: MatmulKernel,
    a: &[f32],
    b: &[f32],
    b_layout: Layout,
    dims: (usize, usize, usize),
    y: &mut [f32],
) -> Result<(), OpError> {
    crate::ops::matmul_f32_on(kernel, a, b, b_layout == Layout::Transposed, dims, y)
}

/// Runs `def`'s fast path and its reference on `inputs` and compares each output with the
/// op's tolerance for its dtype; `None` when no fast path accepts the inputs. The fast path
/// writes over outputs filled with NaN, so an element it leaves out fails the comparison.
/// For an op's tests: a fast path stays within tolerance of its reference.
///
/// ```
/// use pto_op::{Attributes, DType, Tensor};
/// let x = Tensor::random([4, 100], DType::F32, 1);
/// let def = pto_op::ops::softmax::def();
/// let comparisons = pto_op::cpu::compare_with_reference(def, &[&x], &Attributes::new())
///     .unwrap()
///     .expect("std.softmax has an f32 fast path");
/// assert!(comparisons.iter().all(|c| c.passed()));
/// ```
///
/// # Errors
///
/// The reference or the fast path failing, or params the fast path cannot read.
pub fn compare_with_reference(
    def: &OpDef,
    inputs: &[&Tensor],
    attrs: &Attributes,
) -> Result<Option<Vec<Comparison>>, OpError> {
    let types: Vec<TensorType> = inputs.iter().map(|t| t.tensor_type()).collect();
    let Some(kernel) = prepare(def.name, &types, attrs)? else {
        return Ok(None);
    };
    let expected = def.run_reference(inputs, attrs)?;
    let mut outputs: Vec<Tensor> = def
        .infer(&types, attrs)?
        .into_iter()
        .map(|t| Tensor::from_f64_fn(t.shape, t.dtype, |_| f64::NAN))
        .collect();
    kernel.run(inputs, &mut outputs)?;
    outputs
        .iter()
        .zip(&expected)
        .map(|(actual, expected)| {
            actual
                .compare(expected, def.tolerance(expected.dtype()))
                .map_err(OpError::from)
        })
        .collect::<Result<Vec<_>, _>>()
        .map(Some)
}

/// 0: not set by [`set_threads`] (the environment or the core count decides).
static THREADS: AtomicUsize = AtomicUsize::new(0);

/// Sets the number of threads fast paths use, for the whole process (at least 1).
///
/// ```
/// pto_op::cpu::set_threads(1);
/// assert_eq!(pto_op::cpu::threads(), 1);
/// ```
pub fn set_threads(threads: usize) {
    THREADS.store(threads.max(1), Ordering::Relaxed);
}

/// The number of threads fast paths use: what [`set_threads`] set, else every core.
pub fn threads() -> usize {
    match THREADS.load(Ordering::Relaxed) {
        0 => std::thread::available_parallelism().map_or(1, usize::from),
        n => n,
    }
}

/// Work (in multiply-adds or element operations) below which a job stays on one thread:
/// handing parts to the kept worker threads costs some microseconds (waking a thread that
/// waits), and more on a busy machine, so a job must be worth much more than that.
pub const PARALLEL_MIN_WORK: usize = 1 << 18;

/// Rows of `row` elements per piece of a row-wise job: some 16 K elements, at least one row.
pub fn rows_per_piece(row: usize) -> usize {
    ((1 << 14) / row.max(1)).max(1)
}

/// Runs `job(piece)` for every piece in `0..pieces`, on up to [`threads`] threads when
/// `work` (the whole job's) reaches [`PARALLEL_MIN_WORK`]: this one and workers kept for
/// the whole process (started by the first job that needs them, not per call). Pieces are
/// handed out in order from a shared counter; what a piece computes never depends on the
/// thread that runs it, so results do not depend on the number of threads.
pub fn for_each_piece(pieces: usize, work: usize, job: impl Fn(usize) + Sync) {
    let threads = threads().min(pieces);
    if threads <= 1 || work < PARALLEL_MIN_WORK {
        (0..pieces).for_each(job);
        return;
    }
    let next = AtomicUsize::new(0);
    pool::run(threads - 1, &|_| {
        loop {
            let piece = next.fetch_add(1, Ordering::Relaxed);
            if piece >= pieces {
                break;
            }
            job(piece);
        }
    });
}

/// Runs `job(index, chunk)` for each `chunk_len`-element chunk of `data` (the last may be
/// shorter), on up to [`threads`] threads (as [`for_each_piece`]) when `work` reaches
/// [`PARALLEL_MIN_WORK`]. The chunks are fixed by `chunk_len` alone, so results do not
/// depend on the number of threads.
pub fn for_each_chunk<T: Send>(
    data: &mut [T],
    chunk_len: usize,
    work: usize,
    job: impl Fn(usize, &mut [T]) + Sync,
) {
    let chunk_len = chunk_len.max(1);
    let pieces = data.len().div_ceil(chunk_len);
    let threads = threads().min(pieces);
    if threads <= 1 || work < PARALLEL_MIN_WORK {
        data.chunks_mut(chunk_len)
            .enumerate()
            .for_each(|(i, c)| job(i, c));
        return;
    }
    // Contiguous runs of chunks per thread, balanced to within one chunk: part `p` is
    // chunks `p * per_thread..`, run by whichever thread takes part `p`.
    let per_thread = pieces.div_ceil(threads);
    let parts: Vec<std::sync::Mutex<Option<&mut [T]>>> = data
        .chunks_mut(per_thread * chunk_len)
        .map(|part| std::sync::Mutex::new(Some(part)))
        .collect();
    pool::run(parts.len() - 1, &|p| {
        let part = parts[p]
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take();
        if let Some(part) = part {
            part.chunks_mut(chunk_len)
                .enumerate()
                .for_each(|(i, c)| job(p * per_thread + i, c));
        }
    });
}

/// Row kernels in f32 for fast paths: written so the compiler vectorizes them (several
/// independent accumulators, no branches in the element loops).
pub mod rows {
    /// Independent partial sums per reduction: enough for the compiler to keep a few vector
    /// registers busy.
    const LANES: usize = 16;

    /// `exp(x)` in f32 (Cephes' `expf`: a degree-6 polynomial on `x - n ln 2`, scaled by
    /// `2^n`), within a few ulp of the correctly rounded value; 0 below -86.9 (where the
    /// true value is below 2^-125), infinity above 88.72, NaN for NaN.
    ///
    /// ```
    /// use pto_op::cpu::rows::exp;
    /// for x in [-20.0f32, -1.0, 0.0, 0.5, 3.0, 80.0] {
    ///     assert!((exp(x) - x.exp()).abs() <= x.exp() * 3e-7);
    /// }
    /// assert_eq!(exp(-1e9), 0.0);
    /// assert!(exp(f32::NAN).is_nan());
    /// ```
    #[inline]
    pub fn exp(x: f32) -> f32 {
        const LOG2_E: f32 = core::f32::consts::LOG2_E;
        const LN2_HI: f32 = 0.693_359_4;
        const LN2_LO: f32 = -2.121_944_4e-4;
        const LOW: f32 = -86.9;
        const HIGH: f32 = 88.722_84;
        // Adding and subtracting 1.5 * 2^23 rounds to the nearest integer without a call
        // to `floor` (which baseline x86-64 has no instruction for), so the loop vectorizes.
        const ROUND: f32 = 12_582_912.0;
        let clamped = x.clamp(LOW, HIGH);
        let n = (clamped * LOG2_E + ROUND) - ROUND;
        let r = clamped - n * LN2_HI - n * LN2_LO;
        let mut p = 1.987_569_1e-4_f32;
        p = p * r + 1.398_199_9e-3;
        p = p * r + 8.333_452e-3;
        p = p * r + 4.166_579_6e-2;
        p = p * r + 1.666_666_5e-1;
        p = p * r + 0.5;
        let e = p * r * r + r + 1.0;
        // 2^n for n in -125..=128, as 2^(n - 1) * 2 so that n = 128 has exponent bits.
        let n = n as i32;
        let scale = f32::from_bits(((n - 1 + 127) as u32) << 23);
        let y = e * scale * 2.0;
        let y = if x < LOW { 0.0 } else { y };
        let y = if x > HIGH { f32::INFINITY } else { y };
        if x.is_nan() { x } else { y }
    }

    /// The sum of `values`, in 16 interleaved partial sums.
    #[inline]
    pub fn sum(values: &[f32]) -> f32 {
        fold(values, 0.0, |acc, v| acc + v, |a, b| a + b)
    }

    /// The sum of squares of `values`.
    #[inline]
    pub fn sum_of_squares(values: &[f32]) -> f32 {
        fold(values, 0.0, |acc, v| acc + v * v, |a, b| a + b)
    }

    /// The largest of `values` (NaN if one is NaN; -infinity for none).
    #[inline]
    pub fn max(values: &[f32]) -> f32 {
        let m = fold(
            values,
            f32::NEG_INFINITY,
            |acc, v| if v > acc { v } else { acc },
            |a, b| if b > a { b } else { a },
        );
        if values.iter().any(|v| v.is_nan()) {
            f32::NAN
        } else {
            m
        }
    }

    fn fold(
        values: &[f32],
        init: f32,
        step: impl Fn(f32, f32) -> f32,
        merge: impl Fn(f32, f32) -> f32,
    ) -> f32 {
        let mut acc = [init; LANES];
        let mut chunks = values.chunks_exact(LANES);
        for chunk in &mut chunks {
            for (a, &v) in acc.iter_mut().zip(chunk) {
                *a = step(*a, v);
            }
        }
        let mut total = acc.into_iter().fold(init, &merge);
        for &v in chunks.remainder() {
            total = step(total, v);
        }
        total
    }

    /// `row = softmax(row)`: `exp(x - max) / sum`, with [`exp`].
    pub fn softmax(row: &mut [f32]) {
        let max = max(row);
        for v in row.iter_mut() {
            *v = exp(*v - max);
        }
        let sum = sum(row);
        for v in row.iter_mut() {
            *v /= sum;
        }
    }

    /// `y = x * rsqrt(mean(x^2) + eps) * gamma` over one row.
    pub fn rms_norm(x: &[f32], gamma: &[f32], eps: f32, y: &mut [f32]) {
        let inv = 1.0 / (sum_of_squares(x) / x.len() as f32 + eps).sqrt();
        for ((y, &x), &g) in y.iter_mut().zip(x).zip(gamma) {
            *y = x * inv * g;
        }
    }

    /// `y = (x - mean) * rsqrt(var + eps) * gamma + beta` over one row (biased variance).
    pub fn layer_norm(x: &[f32], gamma: &[f32], beta: &[f32], eps: f32, y: &mut [f32]) {
        let n = x.len() as f32;
        let mean = sum(x) / n;
        for (y, &x) in y.iter_mut().zip(x) {
            *y = x - mean;
        }
        let inv = 1.0 / (sum_of_squares(y) / n + eps).sqrt();
        for ((y, &g), &b) in y.iter_mut().zip(gamma).zip(beta) {
            *y = *y * inv * g + b;
        }
    }

    /// `x * sigmoid(x)`, with [`exp`].
    #[inline]
    pub fn silu(x: f32) -> f32 {
        x / (1.0 + exp(-x))
    }

    /// `1 / (1 + exp(-x))`, with [`exp`].
    #[inline]
    pub fn sigmoid(x: f32) -> f32 {
        1.0 / (1.0 + exp(-x))
    }
}

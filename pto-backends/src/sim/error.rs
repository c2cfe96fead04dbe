//! [`SimError`], the error of simulating a program, which every part of the simulator
//! returns.

use pto_op::kernel::buffers::BufferOverflow;
use pto_op::{BackendError, OpError};

/// An error of simulating a program.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SimError {
    /// An on-core buffer's working set exceeds its capacity.
    #[error("{0}")]
    BufferOverflow(Box<BufferOverflow>),
    /// The UB the program's Ascend C kernel reserves on one vector core (its queues, its
    /// `VECCALC` pool with the instructions' temporaries, the reductions' work buffer: what
    /// the lowering checks) exceeds the profile's UB, though the live tiles fit.
    #[error(
        "op `{op}`: its kernel reserves {needed} bytes of UB on each vector core ({detail}), \
         over the {device} limit of {limit} bytes"
    )]
    KernelUb {
        /// The op.
        op: String,
        /// The bytes reserved.
        needed: u64,
        /// The device profile's name.
        device: String,
        /// UB's capacity.
        limit: u64,
        /// The buffers reserved.
        detail: String,
    },
    /// The number of inputs differs from the program's input globals.
    #[error("op `{op}`: the program reads {expected} input(s), got {actual}")]
    InputCount {
        /// The op.
        op: String,
        /// The number of input globals.
        expected: usize,
        /// The number of tensors given.
        actual: usize,
    },
    /// An input's shape or dtype differs from its global's declaration.
    #[error("op `{op}`: input `{global}`: the program expects {what} {expected}, got {actual}")]
    InputMismatch {
        /// The op.
        op: String,
        /// The global's name.
        global: String,
        /// `shape` or `dtype`.
        what: String,
        /// The declared value.
        expected: String,
        /// The given value.
        actual: String,
    },
    /// The program uses something the simulator or the device profile does not support.
    #[error("op `{op}`: {message}")]
    Unsupported {
        /// The op.
        op: String,
        /// What is unsupported, with the instruction where there is one.
        message: String,
    },
    /// An index of the program does not fit in an `i64` when it runs (a validated program
    /// never overflows; this guards the arithmetic all the same).
    #[error("op `{op}`: {source}")]
    IndexOverflow {
        /// The op.
        op: String,
        /// The overflowing step.
        #[source]
        source: pto_op::kernel::ir::IndexOverflow,
    },
    /// An integer instruction whose exact result is outside its dtype, or an integer
    /// `div`, `rem` or `mod` by zero: the error the CPU reference raises for the same
    /// values (the simulator holds integers exactly and never wraps or saturates a result).
    #[error("op `{op}`: inst {inst} ({mnemonic} of {dtype}): {detail}")]
    IntegerArithmetic {
        /// The op.
        op: String,
        /// The instruction's number, in program order with loop bodies after their loop.
        inst: usize,
        /// Its mnemonic.
        mnemonic: String,
        /// The dtype of its result.
        dtype: pto_op::DType,
        /// The operands and what went wrong (`2147483647 + 1 = 2147483648 overflows i32`).
        detail: String,
    },
    /// A count of the whole op that does not fit in a `u64` (its cycles on a core, a
    /// pipe's busy cycles, its instructions): the simulator never saturates a count.
    #[error(
        "op `{op}` on {device}: its {what} ({value}) do not fit in a 64-bit count: the \
         profile's rates or the kernel's grid and loops are far beyond any device's"
    )]
    CycleOverflow {
        /// The op.
        op: String,
        /// The device profile's name.
        device: String,
        /// What overflows (`cycles of a core`, `instructions`).
        what: String,
        /// Its value, or the product that overflows.
        value: String,
    },
    /// A trace could not be written.
    #[error("writing {path}: {message}")]
    Io {
        /// The file.
        path: String,
        /// The system's message.
        message: String,
    },
}

impl SimError {
    /// The error as an [`OpError`] of op `op`: [`OpError::Backend`] with this error as its
    /// source and message; `unsupported` for overflows and unsupported programs (the
    /// kernel does not fit the device).
    pub fn into_op_error(self, op: &str) -> OpError {
        OpError::Backend {
            op: op.to_owned(),
            unsupported: matches!(
                self,
                SimError::BufferOverflow(_)
                    | SimError::KernelUb { .. }
                    | SimError::Unsupported { .. }
            ),
            source: BackendError::new(self),
        }
    }
}

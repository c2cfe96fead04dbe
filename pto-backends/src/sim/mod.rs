//! The tile simulator: runs a kernel's IR on real data over the whole grid, checks every
//! on-core buffer against a device profile, and models cycles per pipe.
//!
//! - [`exec`]: functional execution, rounding every tile to its dtype.
//! - [`memory`]: working sets per buffer, overflow errors, double-buffering decisions.
//! - [`schedule`]: the timing model and the [`SimReport`].
//! - [`trace`]: Chrome trace-event timelines.
//! - [`tune`]: `std.matmul`'s tiling searched on the simulator (`pto tune`).
//! - [`SimError`] (`error.rs`): what any of them reports.
//!
//! [`Simulator`] runs a [`ValidProgram`] directly; [`Sim`] is the `sim` execution target, which
//! traces an op's kernel and runs it.

mod error;
pub mod exec;
pub mod memory;
pub mod schedule;
pub mod trace;
pub mod tune;

use std::sync::Arc;

use pto_op::__private::linkme;
use pto_op::kernel::ValidProgram;
use pto_op::target::TargetDef;
use pto_op::{
    Attributes, DeviceError, DeviceProfile, Execution, Executor, Lowering, OpDef, OpError,
    SimulatedTime, Tensor, TensorType,
};

use crate::cpu::Cpu;
use crate::instances::InstanceCache;

pub use error::SimError;
pub use memory::{LoopBuffering, MemoryPlan};
// The buffer check's overflow, which the simulator reports as its own.
pub use pto_op::kernel::buffers::BufferOverflow;
pub use schedule::{SimReport, Timeline};
pub use trace::{ChromeTrace, PipeEventArgs};

/// How a [`Simulator`] runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SimOptions {
    /// Build a Chrome trace of the run.
    pub trace: bool,
    /// Allow double buffering of loops whose doubled working set fits (see [`memory`]).
    pub double_buffering: bool,
    /// The most pipe events a trace holds (see [`trace`]).
    pub trace_event_limit: usize,
}

impl Default for SimOptions {
    /// No trace, double buffering allowed, 200 000 trace events at most.
    fn default() -> SimOptions {
        SimOptions {
            trace: false,
            double_buffering: true,
            trace_event_limit: 200_000,
        }
    }
}

/// The result of simulating one program.
#[derive(Debug, Clone, PartialEq)]
pub struct SimRun {
    /// The output globals, in order.
    pub outputs: Vec<Tensor>,
    /// Cycles, pipes, buffers.
    pub report: SimReport,
    /// The timeline, when [`SimOptions::trace`] is set.
    pub trace: Option<ChromeTrace>,
}

/// Simulates kernel programs on one device profile.
///
/// ```
/// use pto_backends::sim::{SimOptions, Simulator};
/// use pto_op::kernel::ir::*;
/// use pto_op::{DType, DeviceProfile, Tensor};
///
/// // y = 2x over [64], one block program.
/// let global = |name: &str, role| GlobalDecl { name: name.into(), shape: vec![64], dtype: DType::F16, role };
/// let tile = TileType { shape: vec![64], dtype: DType::F16, level: MemLevel::Ub };
/// let program = Program {
///     op: "doc.double".into(),
///     grid: 1,
///     globals: vec![global("x", GlobalRole::Input), global("y", GlobalRole::Output)].into(),
///     tiles: vec![tile.clone(), tile].into(),
///     vars: 0,
///     body: vec![
///         Inst::Load { dst: TileId::new(0), src: GlobalId::new(0), offsets: vec![Index::Const(0)], pad: 0.0 },
///         Inst::Binary { dst: TileId::new(1), op: BinaryOp::Mul, lhs: Operand::Tile(TileId::new(0)), rhs: Operand::Scalar(2.0) },
///         Inst::Store { dst: GlobalId::new(1), offsets: vec![Index::Const(0)], src: TileId::new(1) },
///     ],
/// };
/// let sim = Simulator::new(DeviceProfile::builtin("kirin9030").unwrap(), SimOptions::default());
/// let x = Tensor::random([64], DType::F16, 1);
/// let run = sim.run(&program.validate().unwrap(), &[&x]).unwrap();
/// assert_eq!(run.outputs[0].to_f64_vec(), x.to_f64_vec().iter().map(|v| 2.0 * v).collect::<Vec<_>>());
/// assert!(run.report.cycles > 0);
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct Simulator {
    /// The device simulated.
    pub profile: DeviceProfile,
    /// How it runs.
    pub options: SimOptions,
}

impl Simulator {
    /// A simulator of `profile`.
    pub fn new(profile: DeviceProfile, options: SimOptions) -> Simulator {
        Simulator { profile, options }
    }

    /// The timing of `program` without executing it: the same [`SimReport`] as
    /// [`Simulator::run`] gives (durations depend on tile types only, never on data), at the
    /// cost of the schedule alone.
    ///
    /// # Errors
    ///
    /// A [`SimError`] naming the op: a buffer overflow or an unsupported program.
    pub fn time(&self, program: &ValidProgram) -> Result<SimReport, SimError> {
        let plan = memory::plan(program, &self.profile, self.options.double_buffering)?;
        let timeline = schedule::schedule(program, &self.profile, &plan, 0)?;
        schedule::report(program, &self.profile, &plan, &timeline)
    }

    /// Checks `program`'s buffers, schedules it and executes it on `inputs`.
    ///
    /// # Errors
    ///
    /// A [`SimError`] naming the op: a buffer overflow, inputs that do not match the
    /// program's input globals, an unsupported program, an instruction failing on its data.
    pub fn run(&self, program: &ValidProgram, inputs: &[&Tensor]) -> Result<SimRun, SimError> {
        let plan = memory::plan(program, &self.profile, self.options.double_buffering)?;
        let event_limit = if self.options.trace {
            self.options.trace_event_limit
        } else {
            0
        };
        let timeline = schedule::schedule(program, &self.profile, &plan, event_limit)?;
        let report = schedule::report(program, &self.profile, &plan, &timeline)?;
        let outputs = exec::execute(program, inputs)?;
        let trace = self.options.trace.then(|| {
            trace::chrome_trace(
                program,
                &self.profile,
                &timeline,
                self.options.trace_event_limit,
            )
        });
        Ok(SimRun {
            outputs,
            report,
            trace,
        })
    }
}

#[linkme::distributed_slice(pto_op::__private::TARGETS)]
#[linkme(crate = pto_op::__private::linkme)]
static SIM_TARGET: TargetDef = TargetDef {
    name: "sim",
    description: "the tile simulator: each op's #[kernel] on a device profile (default kirin9030)",
    make: |device| Box::new(Sim::on(device)),
    source: pto_op::source_location!(),
};

/// The profile the `sim` target simulates when its configuration names none.
pub const DEFAULT_DEVICE: &str = "kirin9030";

/// The `sim` execution target: traces each op's kernel into a [`ValidProgram`] and runs it on
/// the [`Simulator`], checked against the op's description. Each call returns its
/// simulated time ([`Executor::execute`]) or its whole report ([`Sim::call`]); ops without
/// a kernel fall back to the CPU reference ([`Executor::fallback`]).
///
/// ```
/// use pto_backends::sim::Sim;
/// use pto_op::{DeviceProfile, Executor};
/// let sim = Sim::new(DeviceProfile::builtin("ascend910b").unwrap());
/// assert_eq!(sim.target(), "sim");
/// assert_eq!(sim.profile().unwrap().name, "ascend910b");
/// ```
#[derive(Debug)]
pub struct Sim {
    simulator: Result<Simulator, DeviceError>,
    /// Traced (or shipped) programs by op instance.
    programs: InstanceCache<ValidProgram>,
}

impl Sim {
    /// The target on `profile`, with default [`SimOptions`].
    pub fn new(profile: DeviceProfile) -> Sim {
        Sim::with_options(profile, SimOptions::default())
    }

    /// The target on `profile` with `options`.
    pub fn with_options(profile: DeviceProfile, options: SimOptions) -> Sim {
        Sim {
            simulator: Ok(Simulator::new(profile, options)),
            programs: InstanceCache::new(),
        }
    }

    /// The target on `device`, else on the built-in [`DEFAULT_DEVICE`]: what the `sim`
    /// target of a [`pto_op::target::TargetConfig`] makes. Should the default profile not
    /// load, every call fails with that error.
    pub fn on(device: Option<&DeviceProfile>) -> Sim {
        match device {
            Some(profile) => Sim::new(profile.clone()),
            None => Sim {
                simulator: DeviceProfile::builtin(DEFAULT_DEVICE)
                    .map(|p| Simulator::new(p, SimOptions::default())),
                programs: InstanceCache::new(),
            },
        }
    }

    /// The device profile, or why the default one did not load.
    pub fn profile(&self) -> Result<&DeviceProfile, &DeviceError> {
        self.simulator.as_ref().map(|s| &s.profile)
    }

    fn simulator(&self, op: &OpDef) -> Result<&Simulator, OpError> {
        self.simulator.as_ref().map_err(|e| OpError::Unsupported {
            op: op.name.to_owned(),
            message: format!("the sim target has no device profile: {e}"),
        })
    }

    /// Runs one call of `op` on the simulator: its outputs, checked against the op's rules,
    /// its [`SimReport`], and its trace when the options ask for one. The traced kernel is
    /// cached, as for [`Executor::execute`].
    ///
    /// # Errors
    ///
    /// The op's shape rules, its kernel's trace, or the simulator's error; `Unsupported`
    /// when the op has no kernel or the target has no device profile.
    pub fn call(
        &self,
        op: &'static OpDef,
        inputs: &[&Tensor],
        attrs: &Attributes,
    ) -> Result<SimRun, OpError> {
        let simulator = self.simulator(op)?;
        let types: Vec<TensorType> = inputs.iter().map(|t| t.tensor_type()).collect();
        let expected = op.infer(&types, attrs)?;
        let program = self.program(op, &types, attrs)?;
        let run = simulator
            .run(&program, inputs)
            .map_err(|e| e.into_op_error(op.name))?;
        op.check_outputs("kernel", &expected, &run.outputs)?;
        Ok(run)
    }

    /// The simulated timing of one call of `op`, without executing it (see
    /// [`Simulator::time`]); the traced kernel is cached like [`Executor::execute`]'s.
    ///
    /// # Errors
    ///
    /// The op's shape rules, its kernel's trace, or the simulator's error; `Unsupported`
    /// when the op has no kernel or the target has no device profile.
    pub fn time_call(
        &self,
        op: &'static OpDef,
        inputs: &[TensorType],
        attrs: &Attributes,
    ) -> Result<SimReport, OpError> {
        let simulator = self.simulator(op)?;
        op.infer(inputs, attrs)?;
        let program = self.program(op, inputs, attrs)?;
        simulator
            .time(&program)
            .map_err(|e| e.into_op_error(op.name))
    }

    /// Runs `program` for the calls of `op` on `types` with `attrs` from now on, in place of
    /// the op's traced kernel (a shipped kernel), after checking that it fits the device's
    /// buffers.
    ///
    /// # Errors
    ///
    /// The simulator's error (a buffer overflow, an unsupported program), naming the op.
    pub fn use_program(
        &self,
        op: &'static OpDef,
        types: &[TensorType],
        attrs: &Attributes,
        program: ValidProgram,
    ) -> Result<SimReport, OpError> {
        let report = self
            .simulator(op)?
            .time(&program)
            .map_err(|e| e.into_op_error(op.name))?;
        self.programs.insert(op, types, attrs, program);
        Ok(report)
    }

    /// The program the calls of `op` on `types` with `attrs` run (cached): the one given to
    /// [`Sim::use_program`], else the op's kernel traced for the profile
    /// ([`OpDef::trace_kernel_for`], as the Ascend C lowering and the estimator trace it);
    /// without a profile, for one core and no known buffers.
    ///
    /// # Errors
    ///
    /// The trace's error.
    pub fn program(
        &self,
        op: &'static OpDef,
        types: &[TensorType],
        attrs: &Attributes,
    ) -> Result<Arc<ValidProgram>, OpError> {
        self.programs
            .get_or_try_insert_with(op, types, attrs, || match &self.simulator {
                Ok(s) => op.trace_kernel_for(types, attrs, &s.profile),
                Err(_) => op.trace_kernel_on(types, attrs, pto_op::kernel::UNKNOWN_DEVICE_CORES),
            })
    }
}

impl Sim {
    /// The buffer check a run of `program` starts with ([`Simulator::run`]), at compile
    /// time: a kernel whose tiles do not fit the device's buffers is refused when the model
    /// compiles, with the error its run would give, not when it runs.
    fn check_buffers(&self, op: &OpDef, program: &ValidProgram) -> Result<(), OpError> {
        match &self.simulator {
            Ok(s) => memory::plan(program, &s.profile, s.options.double_buffering)
                .map(|_| ())
                .map_err(|e| e.into_op_error(op.name)),
            Err(_) => Ok(()),
        }
    }
}

impl Executor for Sim {
    fn target(&self) -> &str {
        "sim"
    }

    /// [`Sim::call`]'s outputs, with the simulated time of the call: the kernel's on the
    /// device, as a profiler times it ([`SimReport::cycles`]); its launch is in the report
    /// ([`SimReport::launch_cycles`], [`SimReport::total_seconds`]).
    fn execute(
        &self,
        op: &'static OpDef,
        inputs: &[&Tensor],
        attrs: &Attributes,
    ) -> Result<Execution, OpError> {
        let run = self.call(op, inputs, attrs)?;
        Ok(Execution {
            outputs: run.outputs,
            simulated: Some(SimulatedTime {
                cycles: run.report.cycles,
                seconds: run.report.seconds,
            }),
        })
    }

    /// Traces and caches the kernel; [`Lowering::NoKernel`] for an op without one,
    /// [`Lowering::Declined`] with the kernel's reason when it does not cover the instance.
    fn prepare(
        &self,
        op: &'static OpDef,
        inputs: &[TensorType],
        attrs: &Attributes,
    ) -> Result<Lowering, OpError> {
        op.infer(inputs, attrs)?;
        if op.kernel.is_none() {
            return Ok(Lowering::NoKernel);
        }
        match self.program(op, inputs, attrs) {
            Ok(program) => {
                self.check_buffers(op, &program)?;
                Ok(Lowering::Kernel { grid: program.grid })
            }
            // The kernel does not cover these inputs or params (softmax off the last axis, a
            // batched matmul): the op runs on the fallback, and the kernel's reason is said.
            Err(OpError::Unsupported { message, .. }) => Ok(Lowering::Declined { reason: message }),
            Err(e) => Err(e),
        }
    }

    fn device_profile(&self) -> Option<&DeviceProfile> {
        self.profile().ok()
    }

    fn runs_programs(&self) -> bool {
        true
    }

    /// Runs `program` for these calls ([`Sim::use_program`]).
    fn prepare_program(
        &self,
        op: &'static OpDef,
        inputs: &[TensorType],
        attrs: &Attributes,
        program: &ValidProgram,
    ) -> Result<Option<Lowering>, OpError> {
        op.infer(inputs, attrs)?;
        self.check_buffers(op, program)?;
        self.use_program(op, inputs, attrs, program.clone())?;
        Ok(Some(Lowering::Kernel { grid: program.grid }))
    }

    /// The CPU reference runs the ops without a kernel.
    fn fallback(&self) -> Option<&dyn Executor> {
        Some(&Cpu)
    }
}

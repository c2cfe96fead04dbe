//! Shipped kernels: each traced kernel instance of a model, in its text form, travelling with
//! the model (the model file, ONNX, the device package) so that it can be read, edited and
//! run without the op's Rust crate.
//!
//! A [`ShippedKernel`] is keyed by op, the op's signature fingerprint, input types and params
//! (every param, defaults filled in). The graph compiler runs a model's shipped kernel where
//! one matches a node, and refuses one whose fingerprint is no longer the linked op's.
//!
//! ```
//! use pto_op::model::ShippedKernel;
//! use pto_op::{DType, Shape, TensorType};
//!
//! let add = pto_op::ops::add::def();
//! let x = TensorType { shape: Shape::from([4, 64]), dtype: DType::F32 };
//! let mut shipped = ShippedKernel::trace(add, &[x.clone(), x], &Default::default()).unwrap();
//! assert!(shipped.text.starts_with("kernel std.add grid"));
//! assert!(!shipped.edited());
//! shipped.text = shipped.text.replace("binary add", "binary sub");
//! assert!(shipped.edited());
//! assert_eq!(shipped.program(add).unwrap().program().op, "std.add");
//! ```

use serde::{Deserialize, Serialize};

use crate::attr::Attributes;
use crate::error::OpError;
use crate::kernel::ValidProgram;
use crate::kernel::ir::GlobalRole;
use crate::kernel::text::{ParseError, parse};
use crate::op::{OpDef, TensorType};
use crate::schema::Fingerprint;

/// One kernel instance shipped with a model: its key and its text form.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ShippedKernel {
    /// The op (`demo.flash_attention`).
    pub op: String,
    /// The op's signature fingerprint when the kernel was traced.
    pub fingerprint: Fingerprint,
    /// The input types of the instance, in the op's input order.
    pub inputs: Vec<TensorType>,
    /// Every param of the op, defaults filled in.
    pub params: Attributes,
    /// The kernel in its text form ([`crate::kernel::text`]): what runs.
    pub text: String,
    /// The digest of the text as it was traced ([`text_digest`]); a text that no longer
    /// has it was edited.
    pub traced_digest: String,
    /// The digest of the text the linked op's kernel traced to for this instance when the
    /// kernel was shipped (an export, a package). A linked op that traces to another text
    /// now changed its kernel since, and this one is stale ([`ShippedKernel::staleness`]).
    /// `None` in a model file written before kernels recorded it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub linked_digest: Option<String>,
}

/// Whether the linked op's kernel changed since a kernel was shipped
/// ([`ShippedKernel::staleness`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Staleness {
    /// The linked op still traces to the text it traced to when the kernel was shipped.
    Current,
    /// The linked op now traces to another text (or none): its kernel changed since.
    Stale,
    /// Cannot be told: an edited kernel from a model file that did not record what the
    /// linked op traced to.
    Unknown,
}

/// Why a shipped kernel cannot run for its op.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum ShippedKernelError {
    /// The text does not parse or breaks a rule of the tile language.
    #[error("op `{op}`: the kernel text does not parse: {source}")]
    Parse {
        /// The op.
        op: String,
        /// Where and why (line, column).
        #[source]
        source: ParseError,
    },
    /// The text parses, but is not a kernel of this instance (another op, other globals).
    #[error("op `{op}`: the shipped kernel does not fit the instance {instance}: {message}")]
    Instance {
        /// The op.
        op: String,
        /// The instance's input types and params.
        instance: String,
        /// What differs: expected and actual.
        message: String,
    },
    /// The kernel was traced against another signature of the op than the linked one.
    #[error(
        "op `{op}`: the shipped kernel for {instance} was traced against fingerprint \
         {shipped}, the linked op has fingerprint {linked}: its signature changed, so the \
         kernel text no longer describes it; re-export the model (or re-run `pto package`) \
         against the linked op"
    )]
    Fingerprint {
        /// The op.
        op: String,
        /// The instance's input types and params.
        instance: String,
        /// The fingerprint the kernel was shipped with.
        shipped: Fingerprint,
        /// The linked op's.
        linked: Fingerprint,
    },
}

/// The digest of a kernel text: 64-bit FNV-1a, in hex, stable across builds.
pub fn text_digest(text: &str) -> String {
    format!("{:016x}", crate::parity::case_seed(text))
}

impl ShippedKernel {
    /// Traces `def`'s kernel for one instance (without a device: see
    /// [`OpDef::trace_kernel`]) and keeps it in its text form. A target with a device runs
    /// it traced again for its device while it is unedited ([`ShippedKernel::program_for`]).
    ///
    /// # Errors
    ///
    /// A param without a value or default, or the kernel's trace error.
    pub fn trace(
        def: &OpDef,
        inputs: &[TensorType],
        attrs: &Attributes,
    ) -> Result<ShippedKernel, OpError> {
        let params = def.full_params(attrs)?;
        let text = def.trace_kernel(inputs, &params)?.to_string();
        let digest = text_digest(&text);
        Ok(ShippedKernel {
            op: def.name.to_owned(),
            fingerprint: def.fingerprint(),
            inputs: inputs.to_vec(),
            params,
            linked_digest: Some(digest.clone()),
            traced_digest: digest,
            text,
        })
    }

    /// Whether `def`, the linked op, changed its kernel since this one was shipped: the
    /// digest of what it traces to now for the instance (without a device, and for `device`
    /// when given, as a package's kernels are traced) against the recorded
    /// [`linked_digest`](ShippedKernel::linked_digest). Without a recorded one (an older
    /// model file), an unedited kernel's own text is what the op traced to;
    /// an edited one's staleness is [`Staleness::Unknown`].
    pub fn staleness(&self, def: &OpDef, device: Option<&crate::DeviceProfile>) -> Staleness {
        let recorded = match &self.linked_digest {
            Some(digest) => digest,
            None if !self.edited() => &self.traced_digest,
            None => return Staleness::Unknown,
        };
        let plain = def.trace_kernel(&self.inputs, &self.params).ok();
        let for_device =
            device.and_then(|d| def.trace_kernel_for(&self.inputs, &self.params, d).ok());
        let current = [plain, for_device]
            .into_iter()
            .flatten()
            .any(|program| &text_digest(&program.to_string()) == recorded);
        match current {
            true => Staleness::Current,
            false => Staleness::Stale,
        }
    }

    /// True when the text is no longer the one traced.
    pub fn edited(&self) -> bool {
        text_digest(&self.text) != self.traced_digest
    }

    /// True when this kernel is for a call of `op` on `inputs` with full params `params`.
    pub fn is_for(&self, op: &str, inputs: &[TensorType], params: &Attributes) -> bool {
        self.op == op && self.inputs == inputs && &self.params == params
    }

    /// The instance as text: `q=f16[64, 64], k=..., causal=false`.
    pub fn instance(&self, def: &OpDef) -> String {
        def.call_text(&self.inputs, &self.params)
    }

    /// The kernel as a program for `def`: its fingerprint is the linked op's, its text
    /// parses and validates, and it is a kernel of this instance (the op's name, one input
    /// global per input of the instance's type, one output global per output of the type the
    /// op's rules give).
    ///
    /// # Errors
    ///
    /// A [`ShippedKernelError`] naming the op, with the line and column of a parse error.
    pub fn program(&self, def: &OpDef) -> Result<ValidProgram, ShippedKernelError> {
        let instance = || self.instance(def);
        if self.fingerprint != def.fingerprint() {
            return Err(ShippedKernelError::Fingerprint {
                op: def.name.to_owned(),
                instance: instance(),
                shipped: self.fingerprint,
                linked: def.fingerprint(),
            });
        }
        let program = parse(&self.text).map_err(|source| ShippedKernelError::Parse {
            op: def.name.to_owned(),
            source,
        })?;
        let mismatch = |message: String| ShippedKernelError::Instance {
            op: def.name.to_owned(),
            instance: instance(),
            message,
        };
        let p = program.program();
        if p.op != def.name {
            return Err(mismatch(format!(
                "the text is a kernel of `{}`, expected `{}`",
                p.op, def.name
            )));
        }
        let outputs = def
            .infer(&self.inputs, &self.params)
            .map_err(|e| mismatch(e.to_string()))?;
        let expected: Vec<(&str, GlobalRole, &TensorType)> = def
            .inputs
            .iter()
            .zip(&self.inputs)
            .map(|(n, t)| (*n, GlobalRole::Input, t))
            .chain(
                def.outputs
                    .iter()
                    .zip(&outputs)
                    .map(|(n, t)| (*n, GlobalRole::Output, t)),
            )
            .collect();
        if p.globals.len() != expected.len() {
            return Err(mismatch(format!(
                "expected {} globals ({}), the text declares {}",
                expected.len(),
                expected
                    .iter()
                    .map(|(n, _, _)| *n)
                    .collect::<Vec<_>>()
                    .join(", "),
                p.globals.len()
            )));
        }
        for (index, (global, (name, role, ty))) in p.globals.iter().zip(&expected).enumerate() {
            let actual = format!(
                "{}: {}{:?} {:?}",
                global.name, global.dtype, global.shape, global.role
            );
            if global.name != *name
                || global.role != *role
                || global.dtype != ty.dtype
                || global.shape.as_slice() != ty.shape.dims()
            {
                return Err(mismatch(format!(
                    "global @{index}: expected {name}: {}{:?} {role:?}, the text has {actual}",
                    ty.dtype,
                    ty.shape.dims()
                )));
            }
        }
        Ok(program)
    }

    /// The program a target on `device` runs for this kernel: [`ShippedKernel::program`],
    /// except that a kernel which is not edited and is still the linked op's kernel (the
    /// op's kernel traced without a device gives the same text) is traced again for
    /// `device` ([`OpDef::trace_kernel_for`]: its cores and buffers), as the op's own kernel
    /// is, so a kernel that sizes its grid from the core count runs on every core. An edited
    /// kernel, or one the linked op no longer traces to, runs as shipped.
    ///
    /// # Errors
    ///
    /// As [`ShippedKernel::program`].
    pub fn program_for(
        &self,
        def: &OpDef,
        device: Option<&crate::DeviceProfile>,
    ) -> Result<ValidProgram, ShippedKernelError> {
        let program = self.program(def)?;
        let Some(device) = device else {
            return Ok(program);
        };
        if self.edited() {
            return Ok(program);
        }
        let unchanged = def
            .trace_kernel(&self.inputs, &self.params)
            .is_ok_and(|traced| traced.to_string() == self.text);
        if !unchanged {
            return Ok(program);
        }
        // The op's kernel traced this instance without a device a moment ago; should it not
        // trace for the device, the shipped program runs and the target reports any misfit.
        Ok(def
            .trace_kernel_for(&self.inputs, &self.params, device)
            .unwrap_or(program))
    }
}

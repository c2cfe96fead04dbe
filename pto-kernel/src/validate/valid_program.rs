//! The [`ValidProgram`]: a program that has passed validation, the only way to make one.

use core::fmt;

use super::checker::validate_within;
use super::rules::ValidationError;
use crate::ir::{Program, TileId, TileType};

/// A [`Program`] that follows every rule of the tile language: only [`Program::validate`]
/// (and what calls it: tracing, [`parse`](crate::text::parse), deserializing) makes one, so
/// code that takes it need not check again that tiles are declared and defined before
/// use, that operands have the types their instructions need, or that the grid is not
/// empty. Read it as a [`Program`] (it derefs to one); [`ValidProgram::into_program`]
/// gives the program back for editing, which then needs validating again.
///
/// It serializes as the program it holds and deserializes only from a valid one; it prints
/// as the program's text form.
///
/// ```
/// use pto_kernel::ir::Program;
/// let program = Program {
///     op: "doc.empty".into(), grid: 1, globals: vec![].into(), tiles: vec![].into(), vars: 0, body: vec![],
/// };
/// let valid = program.clone().validate().unwrap();
/// assert_eq!(valid.grid, 1);
/// assert_eq!(*valid, program);
/// let json = serde_json::to_string(&valid).unwrap();
/// assert!(serde_json::from_str::<pto_kernel::ValidProgram>(&json.replace("\"grid\":1", "\"grid\":0")).is_err());
/// ```
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
#[serde(transparent)]
pub struct ValidProgram {
    program: Program,
    /// The instructions it executes over the whole grid, within the budget it was
    /// validated against.
    #[serde(skip)]
    work: u64,
}

impl ValidProgram {
    /// The program.
    pub fn program(&self) -> &Program {
        &self.program
    }

    /// The program, for editing; validate it again to get a `ValidProgram` back.
    pub fn into_program(self) -> Program {
        self.program
    }

    /// The instructions the program executes over its whole grid, a loop iteration
    /// counting one (see [`work`](super::work)): within the work budget it was validated
    /// against.
    pub fn work(&self) -> u64 {
        self.work
    }

    /// The type of tile `id`, which a valid program declares for every tile its
    /// instructions name.
    ///
    /// # Panics
    ///
    /// When `id` is not a tile of this program (a tile of another program).
    pub fn tile_type(&self, id: TileId) -> &TileType {
        &self.program.tiles[id]
    }
}

impl core::ops::Deref for ValidProgram {
    type Target = Program;

    fn deref(&self) -> &Program {
        &self.program
    }
}

impl AsRef<Program> for ValidProgram {
    fn as_ref(&self) -> &Program {
        &self.program
    }
}

impl From<ValidProgram> for Program {
    fn from(valid: ValidProgram) -> Program {
        valid.program
    }
}

impl TryFrom<Program> for ValidProgram {
    type Error = ValidationError;

    fn try_from(program: Program) -> Result<ValidProgram, ValidationError> {
        program.validate()
    }
}

impl PartialEq<Program> for ValidProgram {
    fn eq(&self, other: &Program) -> bool {
        self.program == *other
    }
}

impl PartialEq<ValidProgram> for Program {
    fn eq(&self, other: &ValidProgram) -> bool {
        *self == other.program
    }
}

impl fmt::Display for ValidProgram {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.program.fmt(f)
    }
}

impl<'de> serde::Deserialize<'de> for ValidProgram {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Program::deserialize(deserializer)?
            .validate()
            .map_err(serde::de::Error::custom)
    }
}

impl Program {
    /// Checks every rule of the tile language (see [the module docs](crate::validate)) and gives the
    /// program as a [`ValidProgram`].
    ///
    /// # Errors
    ///
    /// The first rule broken, located at its instruction; a program whose work is over
    /// the process's [`work_budget`](super::work_budget).
    pub fn validate(self) -> Result<ValidProgram, ValidationError> {
        self.validate_within(super::work_budget())
    }

    /// [`validate`](Program::validate) with a work budget of its own, `budget`
    /// instruction executions (see [`work`](super::work)).
    ///
    /// # Errors
    ///
    /// As [`validate`](Program::validate).
    pub fn validate_within(self, budget: u64) -> Result<ValidProgram, ValidationError> {
        let work = validate_within(&self, budget)?;
        Ok(ValidProgram {
            program: self,
            work,
        })
    }
}

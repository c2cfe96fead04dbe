//! The interpreter's state for one program id, and what every instruction family asks of
//! it: tile values, typed views of them, evaluated indices, definitions.

use std::rc::Rc;

use ndarray::ArrayD;
use pto_op::DType;
use pto_op::kernel::ValidProgram;
use pto_op::kernel::ir::{GlobalId, IdVec, Index, Inst, TileId, VarId};

use super::data::{Data, round_in_place};
use super::integer::FirstError;
use crate::sim::error::SimError;

/// The interpreter's state for one program id.
pub(super) struct Machine<'p> {
    pub(super) program: &'p ValidProgram,
    /// Every global by `GlobalId`.
    pub(super) globals: IdVec<GlobalId, Data>,
    /// Tile values by `TileId`; shared so that same-dtype moves copy nothing.
    pub(super) env: IdVec<TileId, Option<Rc<Data>>>,
    /// Loop variable values by `VarId`.
    pub(super) vars: IdVec<VarId, i64>,
    pub(super) program_id: i64,
    /// The number of the instruction running, in program order (loop bodies after their
    /// loop), for messages.
    pub(super) inst: usize,
}

impl Machine<'_> {
    /// The value of `tile`: a valid program defines every tile before it reads it.
    pub(super) fn value(&self, tile: TileId) -> &Data {
        self.env[tile]
            .as_deref()
            .expect("a valid program defines a tile before reading it")
    }

    pub(super) fn shared(&self, tile: TileId) -> Rc<Data> {
        Rc::clone(
            self.env[tile]
                .as_ref()
                .expect("a valid program defines a tile before reading it"),
        )
    }

    /// A float tile's elements.
    pub(super) fn floats(&self, tile: TileId) -> Result<&ArrayD<f32>, SimError> {
        match self.value(tile) {
            Data::F(a) => Ok(a),
            Data::I(_) => Err(self.mixed(tile)),
        }
    }

    /// An integer tile's elements.
    pub(super) fn integers(&self, tile: TileId) -> Result<&ArrayD<i128>, SimError> {
        match self.value(tile) {
            Data::I(a) => Ok(a),
            Data::F(_) => Err(self.mixed(tile)),
        }
    }

    /// A tile held in the other carrier than its dtype's: a valid program gives none.
    pub(super) fn mixed(&self, tile: TileId) -> SimError {
        SimError::Unsupported {
            op: self.program.op.clone(),
            message: format!(
                "inst {}: tile {tile} of type {} is read where another dtype is expected",
                self.inst.saturating_sub(1),
                self.program.tile_type(tile)
            ),
        }
    }

    pub(super) fn offsets(&self, offsets: &[Index]) -> Result<Vec<i64>, SimError> {
        offsets.iter().map(|i| self.eval(i)).collect()
    }

    /// The value of an index here, checked.
    pub(super) fn eval(&self, index: &Index) -> Result<i64, SimError> {
        index
            .eval(self.program_id, self.vars.as_slice())
            .map_err(|source| SimError::IndexOverflow {
                op: self.program.op.clone(),
                source,
            })
    }

    /// Gives `tile` an already rounded value (loop params and results).
    pub(super) fn bind(&mut self, tile: TileId, value: Rc<Data>) {
        self.env[tile] = Some(value);
    }

    pub(super) fn define_floats(&mut self, tile: TileId, mut data: ArrayD<f32>, dtype: DType) {
        round_in_place(&mut data, dtype);
        self.env[tile] = Some(Rc::new(Data::F(data)));
    }

    /// Defines an integer tile from results checked to fit its dtype, unless computing
    /// them failed (`failed` holds the first failure).
    pub(super) fn define_integers(
        &mut self,
        inst: &Inst,
        tile: TileId,
        data: ArrayD<i128>,
        failed: FirstError,
    ) -> Result<(), SimError> {
        if let Some(detail) = failed.0.take() {
            return Err(SimError::IntegerArithmetic {
                op: self.program.op.clone(),
                inst: self.inst - 1,
                mnemonic: inst.mnemonic().to_owned(),
                dtype: self.program.tile_type(tile).dtype,
                detail,
            });
        }
        self.env[tile] = Some(Rc::new(Data::I(data)));
        Ok(())
    }
}

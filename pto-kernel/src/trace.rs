//! What a kernel has traced so far: the state a [`Kernel`](crate::Kernel) and its
//! [`Tile`](crate::Tile) handles share (the operator overloads of tiles emit instructions
//! too), and the tracing API's axis convention.

use crate::error::OpError;
use crate::ir::{GlobalDecl, GlobalId, IdVec, Index, Inst, Program, TileId, TileType, VarId};
use crate::validate::index;

/// What a kernel has traced so far, shared by the [`Kernel`](crate::Kernel) and its
/// [`Tile`](crate::Tile) handles (the operator overloads of tiles emit instructions too).
#[derive(Debug)]
pub(crate) struct State {
    op: String,
    grid: Option<usize>,
    pub(crate) globals: IdVec<GlobalId, GlobalDecl>,
    pub(crate) tiles: IdVec<TileId, TileType>,
    /// The scope (fold body, or 0 for the program) each tile was defined in.
    tile_scope: IdVec<TileId, usize>,
    /// The scopes open now, innermost last, parallel to `blocks`.
    open_scopes: Vec<usize>,
    next_scope: usize,
    /// Whether each loop variable's fold is running.
    live_vars: IdVec<VarId, bool>,
    /// The instructions of each open scope.
    blocks: Vec<Vec<Inst>>,
    /// The first error of an instruction that could not return it (operator overloads).
    pub(crate) error: Option<OpError>,
}

impl State {
    /// Nothing traced yet for op `op`: no grid, globals or tiles; the program's scope open.
    pub(crate) fn new(op: String) -> State {
        State {
            op,
            grid: None,
            globals: IdVec::new(),
            tiles: IdVec::new(),
            tile_scope: IdVec::new(),
            open_scopes: vec![0],
            next_scope: 1,
            live_vars: IdVec::new(),
            blocks: vec![Vec::new()],
            error: None,
        }
    }

    /// Sets the number of block programs.
    pub(crate) fn set_grid(&mut self, programs: usize) {
        self.grid = Some(programs);
    }

    /// The number of block programs; 1 until one is set.
    pub(crate) fn grid(&self) -> usize {
        self.grid.unwrap_or(1)
    }

    /// Opens a fold's body: a new loop variable, live until [`State::close_fold`], and a
    /// scope of its own for the tiles the body defines.
    pub(crate) fn open_fold(&mut self) -> VarId {
        let var = self.live_vars.push(true);
        let scope = self.next_scope;
        self.next_scope += 1;
        self.open_scopes.push(scope);
        self.blocks.push(Vec::new());
        var
    }

    /// Closes the body of the fold of `var`: its variable is no longer live, its tiles no
    /// longer visible. Returns the body's instructions.
    pub(crate) fn close_fold(&mut self, var: VarId) -> Vec<Inst> {
        self.live_vars[var] = false;
        self.open_scopes.pop();
        self.blocks.pop().unwrap_or_default()
    }

    /// The program traced, its globals, tiles and instructions taken out of the state.
    pub(crate) fn take_program(&mut self) -> Program {
        Program {
            op: self.op.clone(),
            grid: self.grid(),
            globals: std::mem::take(&mut self.globals),
            tiles: std::mem::take(&mut self.tiles),
            vars: self.live_vars.len() as u32,
            body: self.blocks.pop().unwrap_or_default(),
        }
    }

    /// Records the first error; later ones are usually its consequences.
    pub(crate) fn record(&mut self, message: String) {
        if self.error.is_none() {
            self.error = Some(OpError::invalid(message).with_op(&self.op));
        }
    }

    /// Adds a tile of type `ty` to the current scope, defined by `make(id)` (or by nothing,
    /// for the stand-in result of an instruction that failed).
    pub(crate) fn define(&mut self, ty: TileType, make: Option<&dyn Fn(TileId) -> Inst>) -> TileId {
        let id = self.tiles.push(ty);
        self.tile_scope
            .push(self.open_scopes.last().copied().unwrap_or(0));
        if let Some(make) = make {
            self.emit(make(id));
        }
        id
    }

    /// Appends `inst` to the innermost open scope.
    pub(crate) fn emit(&mut self, inst: Inst) {
        if let Some(block) = self.blocks.last_mut() {
            block.push(inst);
        }
    }

    /// Why `id` cannot be used here, if it cannot.
    pub(crate) fn check_visible(&self, id: TileId) -> Result<(), String> {
        let scope = self.tile_scope.get(id).copied();
        match scope {
            Some(scope) if self.open_scopes.contains(&scope) => Ok(()),
            Some(_) => Err(format!(
                "{id} was defined in a fold body that has ended: use the fold's results"
            )),
            None => Err(format!("{id} does not belong to this kernel")),
        }
    }

    /// Why `index` cannot be used here, if it cannot.
    pub(crate) fn check_index(&self, index: &Index) -> Result<(), String> {
        Ok(index::check_index(index, &self.live_vars)?)
    }
}

/// The index of `axis` in a rank-`rank` shape; negative axes count from the end.
pub(crate) fn normalize_axis(axis: isize, rank: usize) -> Result<usize, String> {
    let signed_rank = rank as isize;
    let normalized = if axis < 0 { axis + signed_rank } else { axis };
    if (0..signed_rank).contains(&normalized) {
        Ok(normalized as usize)
    } else {
        Err(format!("axis {axis} is out of range for rank {rank}"))
    }
}

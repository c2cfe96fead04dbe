//! The `Kernel` builder a `#[kernel]` function is traced with, and the `Global` tensors it
//! reads and writes.

use std::cell::RefCell;
use std::rc::Rc;

use crate::dtype::DType;
use crate::error::OpError;
use crate::shape::Shape;

use super::idx::{Idx, IntoOffsets};
use super::ir::{GlobalDecl, GlobalId, GlobalRole, Index, Inst, MemLevel, TileId, TileType, VarId};
use super::tile::Tile;
use super::trace::{State, normalize_axis};
use super::validate::{ValidProgram, typing};

/// A tensor in global memory (GM), as a kernel sees its inputs and outputs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Global {
    id: GlobalId,
    name: String,
    shape: Shape,
    dtype: DType,
    role: GlobalRole,
}

impl Global {
    /// Its id in the traced program.
    pub fn id(&self) -> GlobalId {
        self.id
    }

    /// The input or output name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The shape.
    pub fn shape(&self) -> &Shape {
        &self.shape
    }

    /// The element type.
    pub fn dtype(&self) -> DType {
        self.dtype
    }

    /// Whether the op reads or writes it.
    pub fn role(&self) -> GlobalRole {
        self.role
    }

    /// The two dimensions of a rank-2 tensor, or an error naming this tensor.
    ///
    /// ```
    /// use pto_kernel::{DType, Kernel, Shape};
    /// let mut k = Kernel::new("doc.dims");
    /// let x = k.input("x", Shape::from([4, 64]), DType::F16);
    /// assert_eq!(x.dims2().unwrap(), (4, 64));
    /// ```
    pub fn dims2(&self) -> Result<(usize, usize), OpError> {
        match self.shape.dims() {
            [rows, cols] => Ok((*rows, *cols)),
            _ => Err(OpError::input(
                self.name.clone(),
                format!("the kernel expects rank 2, got shape {}", self.shape),
            )),
        }
    }
}

/// The builder a `#[kernel]` function is traced with: a Triton-style description of what
/// one block program does, recorded as an [`ir::Program`](super::ir::Program).
///
/// Methods that can fail on their own arguments return `Result`. The operators on
/// [`Tile`]s cannot, so their first error is recorded and returned by [`Kernel::finish`]
/// (and by every later `Result` method, so `?` stops the kernel there).
///
/// ```
/// use pto_kernel::{Kernel, ir::MemLevel};
/// use pto_kernel::{DType, Shape};
///
/// let mut k = Kernel::new("doc.scale");
/// let x = k.input("x", Shape::from([32, 64]), DType::F16);
/// let y = k.output("y", Shape::from([32, 64]), DType::F16);
/// k.grid(4).unwrap();
/// let r0 = k.program_id() * 8;
/// let xt = k.load(&x, (r0, 0), [8, 64]).unwrap().cast(DType::F32);
/// let yt = (2.0 * (xt * 2.0 + 1.0) - 0.5f32).cast(DType::F16);
/// assert_eq!((yt.shape(), yt.level()), (&[8, 64][..], MemLevel::Ub));
/// k.store(&y, (r0, 0), &yt).unwrap();
/// let program = k.finish().unwrap();
/// assert_eq!((program.grid, program.body.len()), (4, 8));
/// ```
#[derive(Debug)]
pub struct Kernel {
    op: String,
    state: Rc<RefCell<State>>,
    cores: usize,
    buffers: Option<crate::device::PerBuffer>,
    vector_cores: usize,
    /// Whether the kernel asked [`Kernel::vector_cores`]: its program may then depend on it.
    vector_cores_read: core::cell::Cell<bool>,
}

/// What [`Kernel::core_count`] returns when the kernel is traced without a device
/// ([`Kernel::new`], `OpDef::trace_kernel`, exports): one core, which every device has.
pub const UNKNOWN_DEVICE_CORES: usize = 1;

impl Kernel {
    /// A fresh builder for tracing the kernel of op `op`, without globals.
    pub fn new(op: impl Into<String>) -> Kernel {
        let op = op.into();
        Kernel {
            state: Rc::new(RefCell::new(State::new(op.clone()))),
            op,
            cores: UNKNOWN_DEVICE_CORES,
            buffers: None,
            vector_cores: 1,
            vector_cores_read: core::cell::Cell::new(false),
        }
    }

    /// The builder, traced for a device with these on-core buffer capacities (bytes): what
    /// [`Kernel::buffer_capacity`] returns. `OpDef::trace_kernel_for` sets the device
    /// profile's `buffers`.
    pub fn with_buffers(mut self, buffers: crate::device::PerBuffer) -> Kernel {
        self.buffers = Some(buffers);
        self
    }

    /// The capacity in bytes of `level` on the device the kernel is traced for, to size
    /// its tiles; `None` when traced without a device (exports), where a kernel should pick
    /// tiles that fit every built-in profile, and for GM. UB is one vector core's: on a
    /// split core see [`Kernel::vector_cores`].
    ///
    /// ```
    /// use pto_kernel::ir::MemLevel;
    /// use pto_kernel::{DeviceProfile, Kernel};
    /// assert_eq!(Kernel::new("doc.caps").buffer_capacity(MemLevel::L0C), None);
    /// let kirin = DeviceProfile::builtin("kirin9030").unwrap();
    /// let k = Kernel::new("doc.caps").with_buffers(kirin.buffers);
    /// assert_eq!(k.buffer_capacity(MemLevel::L0C), Some(64 * 1024));
    /// ```
    pub fn buffer_capacity(&self, level: MemLevel) -> Option<u64> {
        self.buffers.and_then(|b| b.get(level))
    }

    /// The builder, traced for a device whose block programs share their vector work (and
    /// their UB tiles) among `cores` vector cores, each with the UB of
    /// [`Kernel::buffer_capacity`] (at least 1): what [`Kernel::vector_cores`] returns.
    /// `OpDef::trace_kernel_for` sets a split profile's `vector_cores`.
    pub fn with_vector_cores(mut self, cores: usize) -> Kernel {
        self.vector_cores = cores.max(1);
        self
    }

    /// The vector cores that share one block program's vector work, each with its own UB
    /// of [`Kernel::buffer_capacity`]`(Ub)` bytes: 2 on a split Ascend 910B core (a cube
    /// core and two vector cores), 1 on a coupled core and without a device. A kernel
    /// whose rows split between them (a mix program of cube and vector work,
    /// [`vector_split::row_split`](crate::vector_split::row_split)) may size its UB
    /// tiles for all of them. One whose program does not split is traced again by
    /// `OpDef::trace_kernel_for`, for one vector core (this returns 1), since one vector core
    /// then holds its whole tiles.
    ///
    /// ```
    /// use pto_kernel::Kernel;
    /// assert_eq!(Kernel::new("doc.vec").vector_cores(), 1);
    /// assert_eq!(Kernel::new("doc.vec").with_vector_cores(2).vector_cores(), 2);
    /// ```
    pub fn vector_cores(&self) -> usize {
        self.vector_cores_read.set(true);
        self.vector_cores
    }

    /// Whether the kernel asked [`Kernel::vector_cores`] so far: a trace that never did
    /// lowers the same for any vector core count (`OpDef::trace_kernel_for` traces once).
    pub fn read_vector_cores(&self) -> bool {
        self.vector_cores_read.get()
    }

    /// The builder, traced for a device of `cores` AI cores (at least 1): what
    /// [`Kernel::core_count`] returns. `OpDef::trace_kernel_on` sets the device profile's
    /// `ai_cores`; the simulator and the estimator trace that way.
    pub fn with_core_count(mut self, cores: usize) -> Kernel {
        self.cores = cores.max(1);
        self
    }

    /// The number of AI cores of the device the kernel is traced for, to size its grid
    /// (e.g. `k.grid(k.core_count().min(tiles))` and a loop over each program's share).
    /// Traced without a device it is [`UNKNOWN_DEVICE_CORES`] (1).
    ///
    /// ```
    /// use pto_kernel::Kernel;
    /// assert_eq!(Kernel::new("doc.cores").core_count(), 1);
    /// assert_eq!(Kernel::new("doc.cores").with_core_count(24).core_count(), 24);
    /// ```
    pub fn core_count(&self) -> usize {
        self.cores
    }

    /// The op being traced.
    pub fn op(&self) -> &str {
        &self.op
    }

    fn global(&mut self, name: &str, shape: Shape, dtype: DType, role: GlobalRole) -> Global {
        let mut state = self.state.borrow_mut();
        let id = state.globals.push(GlobalDecl {
            name: name.to_owned(),
            shape: shape.dims().to_vec(),
            dtype,
            role,
        });
        Global {
            id,
            name: name.to_owned(),
            shape,
            dtype,
            role,
        }
    }

    /// Declares an op input (read only). `OpDef::trace_kernel` declares every input, then
    /// every output, before it calls the `#[kernel]` function.
    pub fn input(&mut self, name: &str, shape: Shape, dtype: DType) -> Global {
        self.global(name, shape, dtype, GlobalRole::Input)
    }

    /// Declares an op output (written by [`Kernel::store`]).
    pub fn output(&mut self, name: &str, shape: Shape, dtype: DType) -> Global {
        self.global(name, shape, dtype, GlobalRole::Output)
    }

    /// Sets the number of block programs, spread over the AI cores. Must be at least 1.
    pub fn grid(&mut self, programs: usize) -> Result<(), OpError> {
        if programs == 0 {
            return Err(
                OpError::invalid("grid(0): a kernel needs at least one block program")
                    .with_op(&self.op),
            );
        }
        self.state.borrow_mut().set_grid(programs);
        Ok(())
    }

    /// The number of block programs; 1 until [`Kernel::grid`] is called.
    pub fn grid_size(&self) -> usize {
        self.state.borrow().grid()
    }

    /// The index of the running block program, `0..grid`.
    pub fn program_id(&self) -> Idx {
        Idx::program_id()
    }

    /// The error recorded by an operator overload, if any.
    fn recorded(&self) -> Result<(), OpError> {
        match &self.state.borrow().error {
            Some(e) => Err(e.clone()),
            None => Ok(()),
        }
    }

    fn fail(&self, what: &str, message: impl core::fmt::Display) -> OpError {
        OpError::invalid(format!("{what}: {message}")).with_op(&self.op)
    }

    /// Checks that `global` is one of this kernel's, and returns its declaration.
    fn decl(&self, what: &str, global: &Global) -> Result<GlobalDecl, OpError> {
        let state = self.state.borrow();
        match state.globals.get(global.id) {
            Some(decl) if decl.name == global.name && decl.shape == global.shape.dims() => {
                Ok(decl.clone())
            }
            _ => Err(self.fail(
                what,
                format!("global `{}` belongs to another kernel", global.name),
            )),
        }
    }

    fn offsets(&self, what: &str, offsets: impl IntoOffsets) -> Result<Vec<Index>, OpError> {
        let offsets: Vec<Index> = offsets
            .into_offsets()
            .into_iter()
            .map(Idx::into_index)
            .collect();
        let state = self.state.borrow();
        for offset in &offsets {
            state
                .check_index(offset)
                .map_err(|message| self.fail(what, message))?;
        }
        Ok(offsets)
    }

    fn tile(&self, id: TileId) -> Tile {
        let ty = self.state.borrow().tiles[id].clone();
        Tile::new(id, ty, Rc::clone(&self.state))
    }

    /// Checks that `tile` belongs to this kernel and is visible here.
    fn check_tile(&self, what: &str, tile: &Tile) -> Result<(), OpError> {
        if !tile.belongs_to(&self.state) {
            return Err(self.fail(
                what,
                format!("{} does not belong to this kernel", tile.id()),
            ));
        }
        self.state
            .borrow()
            .check_visible(tile.id())
            .map_err(|message| self.fail(what, message))
    }

    /// Defines a tile after a rule accepted its type.
    fn define(
        &self,
        what: &str,
        ty: TileType,
        make: &dyn Fn(TileId) -> Inst,
    ) -> Result<Tile, OpError> {
        typing::check_tile(&ty).map_err(|message| self.fail(what, message))?;
        let id = self.state.borrow_mut().define(ty, Some(make));
        Ok(self.tile(id))
    }

    /// Loads the tile of `shape` at `offsets` of `global` into UB. Elements outside the
    /// tensor read as 0 (a masked load at its edges).
    pub fn load(
        &mut self,
        global: &Global,
        offsets: impl IntoOffsets,
        shape: impl AsRef<[usize]>,
    ) -> Result<Tile, OpError> {
        self.load_padded(global, offsets, shape, MemLevel::Ub, 0.0)
    }

    /// Loads a tile into L1, the cube unit's staging buffer (see [`Kernel::matmul`]).
    pub fn load_l1(
        &mut self,
        global: &Global,
        offsets: impl IntoOffsets,
        shape: impl AsRef<[usize]>,
    ) -> Result<Tile, OpError> {
        self.load_padded(global, offsets, shape, MemLevel::L1, 0.0)
    }

    /// Loads a tile into `level` (UB or L1); elements outside the tensor read as `pad`
    /// (e.g. `f64::NEG_INFINITY` before a max).
    pub fn load_padded(
        &mut self,
        global: &Global,
        offsets: impl IntoOffsets,
        shape: impl AsRef<[usize]>,
        level: MemLevel,
        pad: f64,
    ) -> Result<Tile, OpError> {
        const WHAT: &str = "load";
        self.recorded()?;
        let decl = self.decl(WHAT, global)?;
        let offsets = self.offsets(WHAT, offsets)?;
        let ty = typing::load(&decl, offsets.len(), shape.as_ref(), level)
            .map_err(|message| self.fail(WHAT, message))?;
        let src = global.id;
        self.define(WHAT, ty, &|dst| Inst::Load {
            dst,
            src,
            offsets: offsets.clone(),
            pad,
        })
    }

    /// Loads `global`'s elements at `offsets` into a UB tile of `shape`, a shape of
    /// another rank with the same number of elements as the loaded region, in row-major
    /// order: a `[n]` global as an `[n, 1]` column (to scale the rows of a `[n, c]` tile)
    /// or a `[1, n]` row. It is a load of the global's rank (`shape`'s elements along the
    /// global's last dim, one of each other dim) followed by a [`Tile::reshape`].
    ///
    /// ```
    /// use pto_kernel::{DType, Kernel, Shape};
    /// let mut k = Kernel::new("doc.load_reshaped");
    /// let scale = k.input("scale", Shape::from([64]), DType::F32);
    /// let column = k.load_reshaped(&scale, [0], [64, 1]).unwrap();
    /// assert_eq!(column.shape(), &[64, 1]);
    /// ```
    ///
    /// # Errors
    ///
    /// Those of [`Kernel::load`] and of the reshape (a shape of another number of
    /// elements).
    pub fn load_reshaped(
        &mut self,
        global: &Global,
        offsets: impl IntoOffsets,
        shape: impl AsRef<[usize]>,
    ) -> Result<Tile, OpError> {
        let shape = shape.as_ref();
        let rank = global.shape().rank().max(1);
        let mut loaded = vec![1; rank];
        loaded[rank - 1] = shape.iter().product();
        let tile = self.load(global, offsets, &loaded)?.reshape(shape);
        self.recorded()?;
        Ok(tile)
    }

    /// Stores `tile` (UB, or L0C straight from the cube) at `offsets` of the output
    /// `global`; elements outside the tensor are dropped. The tile's dtype must be the
    /// output's: cast first.
    pub fn store(
        &mut self,
        global: &Global,
        offsets: impl IntoOffsets,
        tile: &Tile,
    ) -> Result<(), OpError> {
        const WHAT: &str = "store";
        self.recorded()?;
        let decl = self.decl(WHAT, global)?;
        let offsets = self.offsets(WHAT, offsets)?;
        self.check_tile(WHAT, tile)?;
        typing::store(&decl, offsets.len(), tile.ty())
            .map_err(|message| self.fail(WHAT, message))?;
        let mut state = self.state.borrow_mut();
        state.emit(Inst::Store {
            dst: global.id,
            offsets,
            src: tile.id(),
        });
        Ok(())
    }

    /// A UB tile of `shape` filled with `value`.
    pub fn full(
        &mut self,
        shape: impl AsRef<[usize]>,
        dtype: DType,
        value: impl Into<f64>,
    ) -> Tile {
        let value = value.into();
        let ty = typing::full(shape.as_ref(), dtype);
        self.define_or_record("full", ty.clone(), Ok(ty), &|dst| Inst::Full { dst, value })
    }

    /// A UB tile whose elements count along `axis` (negative counts from the end) from
    /// `start`: `start + i` for the element's index `i` on that axis.
    pub fn iota(
        &mut self,
        shape: impl AsRef<[usize]>,
        axis: isize,
        start: impl Into<Idx>,
        dtype: DType,
    ) -> Tile {
        let shape = shape.as_ref();
        let start = start.into().into_index();
        let fallback = typing::full(shape, dtype);
        let checked = normalize_axis(axis, shape.len()).and_then(|axis| {
            self.state.borrow().check_index(&start)?;
            Ok((axis, typing::iota(shape, axis, dtype)?))
        });
        let axis = checked.as_ref().map_or(0, |(axis, _)| *axis);
        self.define_or_record("iota", fallback, checked.map(|(_, ty)| ty), &|dst| {
            Inst::Iota {
                dst,
                axis,
                start: start.clone(),
            }
        })
    }

    fn define_or_record(
        &self,
        what: &str,
        fallback: TileType,
        ty: Result<TileType, String>,
        make: &dyn Fn(TileId) -> Inst,
    ) -> Tile {
        let ty = ty.and_then(|ty| Ok(typing::check_tile(&ty).map(|()| ty)?));
        let id = {
            let mut state = self.state.borrow_mut();
            match ty {
                Ok(ty) => state.define(ty, Some(make)),
                Err(message) => {
                    state.record(format!("{what}: {message}"));
                    state.define(fallback, None)
                }
            }
        };
        self.tile(id)
    }

    /// Multiplies on the cube unit: `a @ b (+ acc)`. `a` (`[m, k]`) and `b` (`[k, n]`, or
    /// `[n, k]` when `transpose_b`) are tiles of dtype f16, bf16 or f32 with dims that are
    /// multiples of 16, in L1 (then moved to L0A and L0B here) or already in L0A and L0B
    /// ([`Tile::to_l0a`], [`Tile::to_l0b`], [`Tile::extract`]): a tile moved there once
    /// before a loop stays resident across its iterations. The result is an f32 `[m, n]`
    /// tile in L0C; `acc`, when given, is such a tile too (a K-loop's running sum), which
    /// the cube accumulates into in place (see the simulator's memory plan).
    ///
    /// ```
    /// use pto_kernel::{Kernel, ir::{Inst, MemLevel}};
    /// use pto_kernel::{DType, Shape};
    ///
    /// let mut k = Kernel::new("doc.matmul");
    /// let a = k.input("a", Shape::from([32, 64]), DType::F16);
    /// let b = k.input("b", Shape::from([64, 16]), DType::F16);
    /// let at = k.load_l1(&a, [0, 0], [32, 64]).unwrap();
    /// let bt = k.load_l1(&b, [0, 0], [64, 16]).unwrap();
    /// let c = k.matmul(&at, &bt, None, false).unwrap();
    /// assert_eq!((c.shape(), c.dtype(), c.level()), (&[32, 16][..], DType::F32, MemLevel::L0C));
    /// let err = k.matmul(&at, &at, None, false).unwrap_err();
    /// assert!(err.to_string().contains("do not multiply"));
    /// let program = k.finish().unwrap();
    /// assert!(matches!(program.body[4], Inst::Matmul { transpose_b: false, .. }));
    /// ```
    pub fn matmul(
        &mut self,
        a: &Tile,
        b: &Tile,
        acc: Option<&Tile>,
        transpose_b: bool,
    ) -> Result<Tile, OpError> {
        const WHAT: &str = "matmul";
        self.recorded()?;
        for tile in [Some(a), Some(b), acc].into_iter().flatten() {
            self.check_tile(WHAT, tile)?;
        }
        if !matches!(a.level(), MemLevel::L1 | MemLevel::L0A)
            || !matches!(b.level(), MemLevel::L1 | MemLevel::L0B)
        {
            return Err(self.fail(
                WHAT,
                format!(
                    "a must be in l1 or l0a and b in l1 or l0b (load them with load_l1, \
                     move them with to_l1, to_l0a, to_l0b or extract), got {} and {}",
                    a.ty(),
                    b.ty()
                ),
            ));
        }
        let in_l0 = |tile: &Tile, level| TileType {
            level,
            ..tile.ty().clone()
        };
        let (a0, b0) = (in_l0(a, MemLevel::L0A), in_l0(b, MemLevel::L0B));
        let ty = typing::matmul(&a0, &b0, acc.map(Tile::ty), transpose_b)
            .map_err(|message| self.fail(WHAT, message))?;
        let (a_id, b_id) = (a.id(), b.id());
        let a0 = if a.level() == MemLevel::L0A {
            a.clone()
        } else {
            self.define(WHAT, a0, &|dst| Inst::Move { dst, src: a_id })?
        };
        let b0 = if b.level() == MemLevel::L0B {
            b.clone()
        } else {
            self.define(WHAT, b0, &|dst| Inst::Move { dst, src: b_id })?
        };
        let acc = acc.map(Tile::id);
        self.define(WHAT, ty, &|dst| Inst::Matmul {
            dst,
            a: a0.id(),
            b: b0.id(),
            acc,
            transpose_b,
        })
    }

    /// A counted loop with loop-carried tiles: `body(k, i, carried)` runs once, traced, and
    /// returns the carried tiles' next values, of the same types as `init`. Returns their
    /// values after `count` iterations (`init` when `count` is 0). Folds nest.
    ///
    /// ```
    /// use pto_kernel::{Kernel, ir::Inst};
    /// use pto_kernel::{DType, Shape};
    ///
    /// let mut k = Kernel::new("doc.rowsum");
    /// let x = k.input("x", Shape::from([8, 256]), DType::F32);
    /// let y = k.output("y", Shape::from([8, 1]), DType::F32);
    /// let zero = k.full([8, 1], DType::F32, 0.0);
    /// let total = k
    ///     .fold(4, &[zero], |k, i, carried| {
    ///         let chunk = k.load(&x, (0, i * 64), [8, 64])?;
    ///         Ok(vec![&carried[0] + chunk.sum(-1)])
    ///     })
    ///     .unwrap();
    /// k.store(&y, [0, 0], &total[0]).unwrap();
    /// let program = k.finish().unwrap();
    /// let Inst::Loop { count, body, .. } = &program.body[1] else { panic!("not a loop") };
    /// assert_eq!((*count, body.len()), (4, 3));
    ///
    /// let mut k = Kernel::new("doc.bad_fold");
    /// let zero = k.full([8, 1], DType::F32, 0.0);
    /// let err = k.fold(2, &[zero], |_, _, _| Ok(vec![])).unwrap_err();
    /// assert_eq!(err.to_string(), "op `doc.bad_fold`: fold: the body yields 0 tile(s) for 1 carried");
    /// ```
    pub fn fold<F>(&mut self, count: usize, init: &[Tile], body: F) -> Result<Vec<Tile>, OpError>
    where
        F: FnOnce(&mut Kernel, Idx, &[Tile]) -> Result<Vec<Tile>, OpError>,
    {
        const WHAT: &str = "fold";
        self.recorded()?;
        for tile in init {
            self.check_tile(WHAT, tile)?;
        }
        let (var, params) = {
            let mut state = self.state.borrow_mut();
            let var = state.open_fold();
            let params: Vec<TileId> = init
                .iter()
                .map(|tile| state.define(tile.ty().clone(), None))
                .collect();
            (var, params)
        };
        let carried: Vec<Tile> = params.iter().map(|id| self.tile(*id)).collect();
        let traced = body(self, Idx::from(Index::Var(var)), &carried);
        let loop_inst = self.close_fold(var, count, init, params, traced);
        if let Err(e) = &loop_inst {
            // The loop variable and params are allocated but no loop defines them: the
            // kernel cannot finish, so `finish` must report this error too.
            let mut state = self.state.borrow_mut();
            if state.error.is_none() {
                state.error = Some(e.clone());
            }
        }
        loop_inst
    }

    /// Ends a fold's body and records the loop, or says why it cannot.
    fn close_fold(
        &mut self,
        var: VarId,
        count: usize,
        init: &[Tile],
        params: Vec<TileId>,
        traced: Result<Vec<Tile>, OpError>,
    ) -> Result<Vec<Tile>, OpError> {
        const WHAT: &str = "fold";
        // Close the body's scope whatever happened, so the builder stays consistent; but
        // first check that the yields are visible at the end of the body.
        let (body_insts, hidden_yield) = {
            let mut state = self.state.borrow_mut();
            let hidden_yield = traced.as_ref().ok().and_then(|yields| {
                yields
                    .iter()
                    .filter(|y| y.belongs_to(&self.state))
                    .find_map(|y| state.check_visible(y.id()).err())
            });
            (state.close_fold(var), hidden_yield)
        };
        let yields = traced?;
        self.recorded()?;
        if let Some(message) = hidden_yield {
            return Err(self.fail(WHAT, format!("a yield is not visible: {message}")));
        }
        if yields.len() != init.len() {
            return Err(self.fail(
                WHAT,
                format!(
                    "the body yields {} tile(s) for {} carried",
                    yields.len(),
                    init.len()
                ),
            ));
        }
        for (i, (yielded, first)) in yields.iter().zip(init).enumerate() {
            if !yielded.belongs_to(&self.state) {
                return Err(self.fail(
                    WHAT,
                    format!(
                        "yield {i} ({}) does not belong to this kernel",
                        yielded.id()
                    ),
                ));
            }
            if yielded.ty() != first.ty() {
                return Err(self.fail(
                    WHAT,
                    format!(
                        "yield {i} is {}, but the carried tile is {}: yield the same type",
                        yielded.ty(),
                        first.ty()
                    ),
                ));
            }
        }
        let mut state = self.state.borrow_mut();
        let results: Vec<TileId> = init
            .iter()
            .map(|tile| state.define(tile.ty().clone(), None))
            .collect();
        state.emit(Inst::Loop {
            var,
            count,
            init: init.iter().map(Tile::id).collect(),
            params,
            body: body_insts,
            yields: yields.iter().map(Tile::id).collect(),
            results: results.clone(),
        });
        drop(state);
        Ok(results.into_iter().map(|id| self.tile(id)).collect())
    }

    /// Ends tracing: the validated program, or the first error an instruction recorded.
    pub fn finish(self) -> Result<ValidProgram, OpError> {
        self.recorded()?;
        let program = self.state.borrow_mut().take_program();
        Ok(program.validate()?)
    }
}

//! The liveness of a program's tiles: one numbering of its positions and each tile's live
//! range, read by every analysis of what a kernel holds on core: the UB plan of the
//! Ascend C lowering ([`crate::ub_plan`]) and the buffer check of the simulator and the
//! estimator ([`crate::buffers`]). One walk, so that the two cannot disagree on where a
//! tile is live.
//!
//! **Positions.** Instructions are numbered in program order, a loop taking one position
//! where it starts (where its `init` is read and its `params` are defined) and one where
//! its iteration ends, after its body (where its `yields` are read and its `results`
//! defined), so that a tile's live range is an interval of positions ([`span`]). The
//! instruction numbers of messages ([`Inst::count`]'s order) give a loop one number for
//! both of its positions: [`Position::number`].
//!
//! **Live ranges.** A tile is live from the position that defines it to its last use
//! ([`TileLiveness::end`]). A tile used inside a loop it was defined outside of is needed
//! by every iteration, so it stays live to that loop's end (the outermost such loop's); a
//! loop's carried tiles (`params`) are values of one iteration whose storage is kept to the
//! iteration's end, where the yields are copied in.

use crate::ir::{IdVec, Inst, Program, TileId};

/// The number of positions `body` takes (a loop: its start, its body, its end).
pub fn span(body: &[Inst]) -> usize {
    body.iter()
        .map(|inst| match inst {
            Inst::Loop { body, .. } => 2 + span(body),
            _ => 1,
        })
        .sum()
}

/// One position of a program.
#[derive(Debug, Clone, Copy)]
pub struct Position<'p> {
    /// The instruction; a loop at both of its positions.
    pub inst: &'p Inst,
    /// The instruction's number in [`Inst::count`]'s order (depth first, a loop before its
    /// body), the numbering of messages.
    pub number: usize,
    /// Whether this is the end of a loop's iteration (where its yields are read), rather
    /// than where the instruction starts.
    pub loop_end: bool,
    /// The innermost loop (its ordinal in [`Liveness::loops`]) whose body holds the
    /// position; a loop's own start and end are outside it.
    pub scope: Option<usize>,
}

/// A loop of a program.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LoopSpan {
    /// Its instruction number ([`Position::number`]).
    pub inst: usize,
    /// Its first position: where it reads its init and defines its params.
    pub start: usize,
    /// Its last position: the end of its iteration, where it reads its yields.
    pub end: usize,
    /// The loop whose body holds it (its ordinal).
    pub parent: Option<usize>,
}

/// What defines a tile.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Definition {
    /// The `dst` of an instruction, at its position.
    Inst,
    /// A loop's carried tile, at the loop's start.
    LoopParam,
    /// A loop's result, at the loop's end.
    LoopResult,
}

/// Where one tile is live.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TileLiveness {
    /// The position that defines the tile (`None`: never defined).
    pub def: Option<usize>,
    /// What defines it.
    pub definition: Definition,
    /// The position of its last use (its definition if unused), kept to the end of every
    /// loop that uses it but opened after its definition, and for a carried tile to its
    /// loop's end.
    pub end: usize,
    /// The last position where an instruction (or a loop's init) reads it, with the same
    /// rule for loops; yields are not counted.
    pub last_read: Option<usize>,
    /// The last position where a loop yields it, with the same rule for loops.
    pub last_yield: Option<usize>,
    /// How many operands and yields read it.
    pub uses: usize,
    /// The innermost loop (its ordinal) whose body defines it: a loop's params belong to
    /// its body, its results to the body around it.
    pub scope: Option<usize>,
}

impl TileLiveness {
    /// The last position where it is read, by an instruction or as a yield.
    pub fn read_end(&self) -> Option<usize> {
        self.last_read.max(self.last_yield)
    }
}

/// The positions, loops and tile live ranges of one program.
#[derive(Debug, Clone)]
pub struct Liveness<'p> {
    positions: Vec<Position<'p>>,
    loops: Vec<LoopSpan>,
    tiles: IdVec<TileId, TileLiveness>,
}

impl<'p> Liveness<'p> {
    /// The liveness of `program`'s tiles. A tile named but not declared is ignored.
    pub fn of(program: &'p Program) -> Liveness<'p> {
        let tile = TileLiveness {
            def: None,
            definition: Definition::Inst,
            end: 0,
            last_read: None,
            last_yield: None,
            uses: 0,
            scope: None,
        };
        let mut walk = Walk {
            live: Liveness {
                positions: Vec::new(),
                loops: Vec::new(),
                tiles: IdVec::filled(program.tiles.len(), tile),
            },
            depth_of: IdVec::filled(program.tiles.len(), 0),
            open: Vec::new(),
            next_number: 0,
        };
        walk.body(&program.body);
        let mut live = walk.live;
        for tile in &mut live.tiles {
            if let Some(def) = tile.def {
                tile.end = tile.end.max(def);
            }
        }
        live
    }

    /// Every position, in order.
    pub fn positions(&self) -> &[Position<'p>] {
        &self.positions
    }

    /// Every loop, in program order (a loop before the loops of its body): the ordinals
    /// [`Position::scope`] and [`TileLiveness::scope`] name.
    pub fn loops(&self) -> &[LoopSpan] {
        &self.loops
    }

    /// The liveness of each tile, by `TileId`.
    pub fn tiles(&self) -> &IdVec<TileId, TileLiveness> {
        &self.tiles
    }

    /// The liveness of `tile` (`None` for a tile the program does not declare).
    pub fn tile(&self, tile: TileId) -> Option<&TileLiveness> {
        self.tiles.get(tile)
    }

    /// The loops whose bodies hold position `at`, innermost first.
    pub fn loops_around(&self, at: usize) -> impl Iterator<Item = usize> + '_ {
        let first = self.positions.get(at).and_then(|p| p.scope);
        std::iter::successors(first, |l| self.loops[*l].parent)
    }
}

/// The walk that builds a [`Liveness`].
struct Walk<'p> {
    live: Liveness<'p>,
    /// The number of loops open where each tile is defined.
    depth_of: IdVec<TileId, usize>,
    /// The loops (ordinals) around the current position, outermost first.
    open: Vec<usize>,
    next_number: usize,
}

impl<'p> Walk<'p> {
    fn body(&mut self, body: &'p [Inst]) {
        for inst in body {
            let number = self.next_number;
            self.next_number += 1;
            let at = self.live.positions.len();
            let scope = self.open.last().copied();
            self.live.positions.push(Position {
                inst,
                number,
                loop_end: false,
                scope,
            });
            let Inst::Loop {
                init,
                params,
                body,
                yields,
                results,
                ..
            } = inst
            else {
                for tile in inst.uses() {
                    self.read(tile, at);
                }
                // Every result (a top-k defines two).
                for dst in inst.defs() {
                    self.define(dst, at, Definition::Inst);
                }
                continue;
            };
            for tile in init {
                self.read(*tile, at);
            }
            let end = at + 1 + span(body);
            let ordinal = self.live.loops.len();
            self.live.loops.push(LoopSpan {
                inst: number,
                start: at,
                end,
                parent: scope,
            });
            self.open.push(ordinal);
            for param in params {
                self.define(*param, at, Definition::LoopParam);
                if let Some(tile) = self.live.tiles.get_mut(*param) {
                    tile.end = tile.end.max(end);
                }
            }
            self.body(body);
            debug_assert_eq!(self.live.positions.len(), end);
            self.live.positions.push(Position {
                inst,
                number,
                loop_end: true,
                scope,
            });
            for tile in yields {
                self.yield_at(*tile, end);
            }
            self.open.pop();
            for result in results {
                self.define(*result, end, Definition::LoopResult);
            }
        }
    }

    fn define(&mut self, tile: TileId, at: usize, definition: Definition) {
        if let Some(live) = self.live.tiles.get_mut(tile) {
            live.def = Some(at);
            live.definition = definition;
            live.scope = self.open.last().copied();
            self.depth_of[tile] = self.open.len();
        }
    }

    /// Where a use of `tile` at `at` keeps it live to: used inside loops opened after its
    /// definition, the outermost such loop's end.
    fn effective(&self, tile: TileId, at: usize) -> usize {
        match self.open.get(self.depth_of[tile]) {
            Some(outermost) => self.live.loops[*outermost].end,
            None => at,
        }
    }

    /// Records a use of `tile` at `at`, and returns the position it keeps the tile to
    /// (`None` for a tile the program does not declare).
    fn use_at(&mut self, tile: TileId, at: usize) -> Option<usize> {
        self.live.tiles.get(tile)?;
        let to = self.effective(tile, at);
        let live = &mut self.live.tiles[tile];
        live.end = live.end.max(to);
        live.uses += 1;
        Some(to)
    }

    fn read(&mut self, tile: TileId, at: usize) {
        if let Some(to) = self.use_at(tile, at) {
            let last = &mut self.live.tiles[tile].last_read;
            *last = (*last).max(Some(to));
        }
    }

    fn yield_at(&mut self, tile: TileId, at: usize) {
        if let Some(to) = self.use_at(tile, at) {
            let last = &mut self.live.tiles[tile].last_yield;
            *last = (*last).max(Some(to));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::DType;
    use crate::ir::BinaryOp;
    use crate::test_support::{Builder, binary, c, load, store, tile};

    /// x is loaded before a loop whose body reads it: it lives to the loop's end; the
    /// carried tile lives over the whole loop, its result from the loop's end.
    #[test]
    fn a_tile_read_in_a_loop_lives_to_its_end_and_positions_number_loops_twice() {
        let mut b = Builder::new("t.loop", 1);
        let g = b.input("x", &[16], DType::F32);
        let out = b.output("y", &[16], DType::F32);
        let [x, init, p, next, r] = [(); 5].map(|()| b.ub(&[16], DType::F32));
        let var = b.var();
        b.push(load(x, g, vec![c(0)], 0.0));
        b.push(Inst::Full {
            dst: init,
            value: 0.0,
        });
        b.push(Inst::Loop {
            var,
            count: 4,
            init: vec![init],
            params: vec![p],
            body: vec![binary(next, BinaryOp::Add, tile(p), tile(x))],
            yields: vec![next],
            results: vec![r],
        });
        b.push(store(out, vec![c(0)], r));
        let program = b.finish();
        let live = Liveness::of(&program);
        // load, full, loop start, add, loop end, store.
        assert_eq!(span(&program.body), 6);
        assert_eq!(live.positions().len(), 6);
        let numbers: Vec<(usize, bool)> = live
            .positions()
            .iter()
            .map(|p| (p.number, p.loop_end))
            .collect();
        assert_eq!(
            numbers,
            [
                (0, false),
                (1, false),
                (2, false),
                (3, false),
                (2, true),
                (4, false)
            ]
        );
        let ranges = |t: TileId| {
            let l = live.tile(t).expect("declared");
            (l.def, l.end)
        };
        assert_eq!(ranges(x), (Some(0), 4));
        assert_eq!(ranges(init), (Some(1), 2));
        assert_eq!(ranges(p), (Some(2), 4));
        assert_eq!(ranges(next), (Some(3), 4));
        assert_eq!(ranges(r), (Some(4), 5));
        let next_live = live.tile(next).expect("declared");
        assert_eq!((next_live.last_read, next_live.last_yield), (None, Some(4)));
        assert_eq!(live.tile(p).and_then(|l| l.scope), Some(0));
        assert_eq!(
            live.tile(r).map(|l| l.definition),
            Some(Definition::LoopResult)
        );
        assert_eq!(live.loops_around(3).collect::<Vec<_>>(), [0]);
        assert_eq!(live.loops_around(2).count(), 0);
    }
}

//! The parser of the text form: [`parse`] and its [`ParseError`].

use std::cell::Cell;
use std::collections::HashMap;

use crate::dtype::DType;

use super::super::ir::{
    ArgOp, BinaryOp, CmpOp, EntityId, GlobalDecl, GlobalId, GlobalRole, IdVec, Index, Inst,
    LogicOp, MemLevel, Operand, Program, ReduceOp, TileId, TileType, UnaryOp, VarId,
};
use super::super::validate::{
    MAX_INDEX_DEPTH, MAX_LOOP_DEPTH, Rule, ValidProgram, ValidationError,
};

/// Why a kernel text was rejected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ParseError {
    /// The text does not follow the grammar.
    #[error("line {line}, column {column}: {message}")]
    Syntax {
        /// 1-based line.
        line: usize,
        /// 1-based column, in characters.
        column: usize,
        /// What was expected or is wrong.
        message: String,
    },
    /// The text is well formed, but the program breaks a rule of the tile language.
    #[error("line {line}: {error}")]
    Invalid {
        /// The line of the offending instruction, or of the global or tile breaking a rule
        /// of the program as a whole (the header line for the whole program itself).
        line: usize,
        /// The rule that is broken.
        error: ValidationError,
    },
}

/// Reads a program from its text form (see the module docs) and validates it.
///
/// ```
/// use pto_kernel::text::parse;
///
/// let text = "kernel doc.copy grid 2\n\
///             global @0 x: f32[16, 8] input\n\
///             global @1 y: f32[16, 8] output\n\
///             %0: f32[8, 8]@ub = load @0[pid * 8, 0] pad 0.0\n\
///             store @1[pid * 8, 0], %0\n";
/// let program = parse(text).unwrap();
/// assert_eq!((program.grid, program.body.len()), (2, 2));
/// assert_eq!(program.to_string(), text);
///
/// let err = parse(&text.replace("load @0", "lod @0")).unwrap_err();
/// assert_eq!(
///     err.to_string(),
///     "line 4, column 20: unknown instruction `lod`: expected load, full, iota, unary, \
///      binary, compare, select, cast, reduce, argreduce, logic, not, topk, reshape, move, \
///      extract or matmul"
/// );
/// ```
pub fn parse(text: &str) -> Result<ValidProgram, ParseError> {
    let lines: Vec<(usize, &str)> = text
        .lines()
        .enumerate()
        .map(|(i, l)| (i + 1, l))
        .filter(|(_, l)| {
            let t = l.trim();
            !t.is_empty() && !t.starts_with("//")
        })
        .collect();
    let mut parser = Parser {
        lines,
        next: 0,
        tiles: Ids::default(),
        types: IdVec::new(),
        globals: Ids::default(),
        vars: Ids::default(),
        path: Vec::new(),
        lines_of: HashMap::new(),
    };
    let program = parser.program()?;
    let storage_only_line = parser.storage_only_line(&program);
    program.validate().map_err(|error| ParseError::Invalid {
        line: parser.line_of(&error, storage_only_line),
        error,
    })
}

/// The ids of one kind (tiles, globals or loop variables) as the text numbers them, each
/// with the dense id it stands for (numbered in order of definition) and its line: the
/// text may number with gaps and in any order, and nothing is sized by its numbers.
struct Ids<I> {
    dense: HashMap<u32, (I, usize)>,
    /// The line defining each dense id, in order.
    lines: Vec<usize>,
}

impl<I> Default for Ids<I> {
    fn default() -> Self {
        Ids {
            dense: HashMap::new(),
            lines: Vec::new(),
        }
    }
}

impl<I: EntityId> Ids<I> {
    /// Defines the text's id `number` on `line` as the next dense id; a second definition
    /// is refused naming both lines (`what` describes the id, as `tile %7`).
    fn define(&mut self, number: u32, line: usize, what: &str) -> Result<I, String> {
        if let Some((_, first)) = self.dense.get(&number) {
            return Err(format!(
                "{what} is defined twice: first on line {first}, again on line {line}"
            ));
        }
        let id = I::from_index(self.lines.len());
        self.dense.insert(number, (id, line));
        self.lines.push(line);
        Ok(id)
    }

    /// The dense id of the text's id `number`, if a line above defines it.
    fn get(&self, number: u32) -> Option<I> {
        self.dense.get(&number).map(|(id, _)| *id)
    }

    fn count(&self) -> usize {
        self.lines.len()
    }
}

/// Replaces the text's loop variable numbers in `index` by their dense ids (every one is
/// known to be defined: [`Parser::index_vars`] checks first).
fn renumber_vars(index: &mut Index, vars: &Ids<VarId>) {
    match index {
        Index::Const(_) | Index::ProgramId => {}
        Index::Var(var) => {
            if let Some(dense) = vars.get(var.index() as u32) {
                *var = dense;
            }
        }
        Index::Add(a, b)
        | Index::Sub(a, b)
        | Index::Mul(a, b)
        | Index::Div(a, b)
        | Index::Rem(a, b)
        | Index::Min(a, b)
        | Index::Max(a, b) => {
            renumber_vars(a, vars);
            renumber_vars(b, vars);
        }
    }
}

struct Parser<'t> {
    /// Non-blank, non-comment lines with their 1-based numbers.
    lines: Vec<(usize, &'t str)>,
    next: usize,
    /// The tiles defined so far, and their types by dense id.
    tiles: Ids<TileId>,
    types: IdVec<TileId, TileType>,
    globals: Ids<GlobalId>,
    vars: Ids<VarId>,
    /// The index path of the instruction being parsed.
    path: Vec<usize>,
    /// The line of each instruction, by index path, to place validation errors.
    lines_of: HashMap<Vec<usize>, usize>,
}

impl<'t> Parser<'t> {
    fn next_line(&mut self) -> Option<Cursor<'t>> {
        let (line, text) = *self.lines.get(self.next)?;
        self.next += 1;
        Some(Cursor::new(line, text))
    }

    fn end_error(&self, what: &str) -> ParseError {
        let (line, text) = self.lines.last().copied().unwrap_or((1, ""));
        ParseError::Syntax {
            line,
            column: text.chars().count() + 1,
            message: format!("unexpected end of text: expected {what}"),
        }
    }

    fn program(&mut self) -> Result<Program, ParseError> {
        let mut c = self
            .next_line()
            .ok_or_else(|| self.end_error("`kernel NAME grid N`"))?;
        c.keyword("kernel")?;
        let op = c.name()?;
        c.keyword("grid")?;
        let grid = c.uint()?;
        c.end()?;
        let mut globals = IdVec::new();
        while let Some((_, text)) = self.lines.get(self.next) {
            if !text.trim_start().starts_with("global") {
                break;
            }
            let mut c = self.next_line().ok_or_else(|| self.end_error("a global"))?;
            globals.push(self.global(&mut c)?);
        }
        // `yield` is refused outside loops, so the program body yields nothing.
        let (body, _, closing) = self.statements()?;
        if let Some(c) = closing {
            return Err(c.error_at(c.column() - 1, "`}` without a loop to close"));
        }
        Ok(Program {
            op,
            grid,
            globals,
            tiles: std::mem::take(&mut self.types),
            vars: u32::try_from(self.vars.count()).unwrap_or(u32::MAX),
            body,
        })
    }

    fn global(&mut self, c: &mut Cursor<'t>) -> Result<GlobalDecl, ParseError> {
        c.keyword("global")?;
        c.skip_ws();
        let at = c.column();
        let number = c.global_id()?;
        self.globals
            .define(number.as_u32(), c.line, &format!("global {number}"))
            .map_err(|message| c.error_at(at, message))?;
        let name = c.name()?;
        c.punct(":")?;
        let dtype = c.dtype()?;
        let shape = c.dims()?;
        let role = match c.word()? {
            (_, "input") => GlobalRole::Input,
            (_, "output") => GlobalRole::Output,
            (col, other) => {
                return Err(c.error_at(col, format!("expected `input` or `output`, got `{other}`")));
            }
        };
        c.end()?;
        Ok(GlobalDecl {
            name,
            shape,
            dtype,
            role,
        })
    }

    /// The line of the first global, else the first tile, of a dtype pto-op computes
    /// nothing in: the one validation refuses.
    fn storage_only_line(&self, program: &Program) -> Option<usize> {
        fn first(lines: &[usize], mut dtypes: impl Iterator<Item = DType>) -> Option<usize> {
            dtypes
                .position(DType::is_storage_only)
                .and_then(|i| lines.get(i).copied())
        }
        first(&self.globals.lines, program.globals.iter().map(|g| g.dtype))
            .or_else(|| first(&self.tiles.lines, program.tiles.iter().map(|t| t.dtype)))
    }

    /// The line to place a validation error at: its instruction's, or for a rule of the
    /// program as a whole, the line of the global or tile that breaks it (the header's
    /// when the program as a whole does).
    fn line_of(&self, error: &ValidationError, storage_only_line: Option<usize>) -> usize {
        let header = self.lines.first().map_or(1, |(n, _)| *n);
        if let Some(line) = self.lines_of.get(&error.path) {
            return *line;
        }
        match &*error.rule {
            Rule::GlobalTooLarge { global, .. } => self.globals.lines.get(*global).copied(),
            Rule::StorageOnlyDType { .. } => storage_only_line,
            _ => None,
        }
        .unwrap_or(header)
    }

    /// A tile being used: the dense id of the text's `%N`, which a line above must define.
    fn use_tile(&mut self, c: &mut Cursor<'t>) -> Result<TileId, ParseError> {
        c.skip_ws();
        let col = c.column();
        let number = c.tile_id()?;
        self.tiles.get(number.as_u32()).ok_or_else(|| {
            c.error_at(
                col,
                format!("tile {number} is used but no line above defines it"),
            )
        })
    }

    /// A global being loaded or stored: the dense id of the text's `@N`, which a `global`
    /// line must declare.
    fn use_global(&mut self, c: &mut Cursor<'t>) -> Result<GlobalId, ParseError> {
        c.skip_ws();
        let col = c.column();
        let number = c.global_id()?;
        self.globals
            .get(number.as_u32())
            .ok_or_else(|| c.error_at(col, format!("global {number} is used but never declared")))
    }

    /// Index expressions with their loop variables renumbered; each must be defined by an
    /// enclosing or earlier loop line (validation checks its scope).
    fn index_vars(&mut self, c: &mut Cursor<'t>, indices: &mut [Index]) -> Result<(), ParseError> {
        let uses = std::mem::take(&mut c.var_uses);
        if let Some((number, col)) = uses.iter().find(|(n, _)| self.vars.get(*n).is_none()) {
            return Err(c.error_at(
                *col,
                format!("loop variable i{number} is used but no loop line above defines it"),
            ));
        }
        for index in indices {
            renumber_vars(index, &self.vars);
        }
        Ok(())
    }

    fn offsets(&mut self, c: &mut Cursor<'t>) -> Result<Vec<Index>, ParseError> {
        let mut offsets = c.offsets()?;
        self.index_vars(c, &mut offsets)?;
        Ok(offsets)
    }

    /// `TILE ":" type`, defining the tile.
    fn typed_def(&mut self, c: &mut Cursor<'t>) -> Result<TileId, ParseError> {
        c.skip_ws();
        let col = c.column();
        let number = c.tile_id()?;
        c.punct(":")?;
        let ty = c.tile_type()?;
        let id = self
            .tiles
            .define(number.as_u32(), c.line, &format!("tile {number}"))
            .map_err(|message| c.error_at(col, message))?;
        self.types.push(ty);
        Ok(id)
    }

    /// Statements up to the end of the text or a `}` line (returned, its cursor after the
    /// brace); a `yield` line ends the statements of a loop body and must precede the `}`.
    #[allow(clippy::type_complexity)] // (body, yields, closing line), used by two callers
    fn statements(
        &mut self,
    ) -> Result<(Vec<Inst>, Option<Vec<TileId>>, Option<Cursor<'t>>), ParseError> {
        let mut body = Vec::new();
        let mut yields = None;
        while let Some(mut c) = self.next_line() {
            c.skip_ws();
            if c.eat("}") {
                return Ok((body, yields, Some(c)));
            }
            if yields.is_some() {
                return Err(c.error("a `yield` must be the last line of a loop body"));
            }
            if c.peek_word() == Some("yield") {
                if self.path.is_empty() {
                    return Err(c.error("`yield` outside a loop body"));
                }
                c.keyword("yield")?;
                let mut ids = vec![self.use_tile(&mut c)?];
                while c.eat(",") {
                    ids.push(self.use_tile(&mut c)?);
                }
                c.end()?;
                yields = Some(ids);
                continue;
            }
            self.path.push(body.len());
            self.lines_of.insert(self.path.clone(), c.line);
            let inst = self.statement(&mut c)?;
            self.path.pop();
            body.push(inst);
        }
        Ok((body, yields, None))
    }

    fn statement(&mut self, c: &mut Cursor<'t>) -> Result<Inst, ParseError> {
        match c.peek_char() {
            Some('%') => self.definition(c),
            _ => match c.peek_word() {
                Some("store") => {
                    c.keyword("store")?;
                    let dst = self.use_global(c)?;
                    let offsets = self.offsets(c)?;
                    c.punct(",")?;
                    let src = self.use_tile(c)?;
                    c.end()?;
                    Ok(Inst::Store { dst, offsets, src })
                }
                Some("loop") => self.loop_inst(c),
                _ => Err(c.error("expected a tile definition `%N: type = ...`, `store` or `loop`")),
            },
        }
    }

    fn definition(&mut self, c: &mut Cursor<'t>) -> Result<Inst, ParseError> {
        let dst = self.typed_def(c)?;
        // A second result: `topk` defines its values and its indices.
        let second = if c.eat(",") {
            Some(self.typed_def(c)?)
        } else {
            None
        };
        c.punct("=")?;
        let (col, mnemonic) = c.word()?;
        match (mnemonic, second) {
            ("topk", None) => {
                return Err(c.error_at(
                    col,
                    "topk defines two tiles, its values and its indices: \
                     `%V: type, %I: type = topk %S k K`",
                ));
            }
            ("topk", Some(indices)) => {
                let src = self.use_tile(c)?;
                c.keyword("k")?;
                let k = c.uint()?;
                c.end()?;
                return Ok(Inst::TopK {
                    values: dst,
                    indices,
                    src,
                    k,
                });
            }
            (other, Some(_)) => {
                return Err(c.error_at(
                    col,
                    format!("`{other}` defines one tile: only `topk` defines two"),
                ));
            }
            (_, None) => {}
        }
        let inst = match mnemonic {
            "load" => {
                let src = self.use_global(c)?;
                let offsets = self.offsets(c)?;
                c.keyword("pad")?;
                let pad = c.scalar()?;
                Inst::Load {
                    dst,
                    src,
                    offsets,
                    pad,
                }
            }
            "full" => Inst::Full {
                dst,
                value: c.scalar()?,
            },
            "iota" => {
                c.keyword("axis")?;
                let axis = c.uint()?;
                c.keyword("start")?;
                let mut start = [c.index(0)?.0];
                self.index_vars(c, &mut start)?;
                let [start] = start;
                Inst::Iota { dst, axis, start }
            }
            "unary" => {
                let op = c.enum_word("unary function", &UnaryOp::ALL, |o| o.name())?;
                let src = self.use_tile(c)?;
                Inst::Unary { dst, op, src }
            }
            "binary" => {
                let op = c.enum_word("binary function", &BinaryOp::ALL, |o| o.name())?;
                let lhs = self.operand(c)?;
                c.punct(",")?;
                let rhs = self.operand(c)?;
                Inst::Binary { dst, op, lhs, rhs }
            }
            "compare" => {
                let op = c.enum_word("comparison", &CmpOp::ALL, |o| o.name())?;
                let lhs = self.operand(c)?;
                c.punct(",")?;
                let rhs = self.operand(c)?;
                Inst::Compare { dst, op, lhs, rhs }
            }
            "select" => {
                let cond = self.use_tile(c)?;
                c.punct(",")?;
                let on_true = self.operand(c)?;
                c.punct(",")?;
                let on_false = self.operand(c)?;
                Inst::Select {
                    dst,
                    cond,
                    on_true,
                    on_false,
                }
            }
            "cast" => Inst::Cast {
                dst,
                src: self.use_tile(c)?,
            },
            "reduce" => {
                let op = c.enum_word("reduction", &ReduceOp::ALL, |o| o.name())?;
                let src = self.use_tile(c)?;
                c.keyword("axis")?;
                let axis = c.uint()?;
                Inst::Reduce { dst, op, src, axis }
            }
            "argreduce" => {
                let op = c.enum_word("index reduction", &ArgOp::ALL, |o| o.name())?;
                let src = self.use_tile(c)?;
                c.keyword("axis")?;
                let axis = c.uint()?;
                Inst::ArgReduce { dst, op, src, axis }
            }
            "logic" => {
                let op = c.enum_word("logical function", &LogicOp::ALL, |o| o.name())?;
                let lhs = self.use_tile(c)?;
                c.punct(",")?;
                let rhs = self.use_tile(c)?;
                Inst::Logic { dst, op, lhs, rhs }
            }
            "not" => Inst::Not {
                dst,
                src: self.use_tile(c)?,
            },
            "reshape" => Inst::Reshape {
                dst,
                src: self.use_tile(c)?,
            },
            "move" => Inst::Move {
                dst,
                src: self.use_tile(c)?,
            },
            "extract" => {
                let src = self.use_tile(c)?;
                let offsets = c.dims()?;
                Inst::Extract { dst, src, offsets }
            }
            "matmul" => {
                let a = self.use_tile(c)?;
                c.punct(",")?;
                let b = self.use_tile(c)?;
                let mut acc = None;
                if c.peek_word() == Some("acc") {
                    c.keyword("acc")?;
                    acc = Some(self.use_tile(c)?);
                }
                let mut transpose_b = false;
                if c.peek_word() == Some("transpose_b") {
                    c.keyword("transpose_b")?;
                    transpose_b = true;
                }
                Inst::Matmul {
                    dst,
                    a,
                    b,
                    acc,
                    transpose_b,
                }
            }
            other => {
                return Err(c.error_at(
                    col,
                    format!(
                        "unknown instruction `{other}`: expected load, full, iota, unary, \
                         binary, compare, select, cast, reduce, argreduce, logic, not, topk, \
                         reshape, move, extract or matmul"
                    ),
                ));
            }
        };
        c.end()?;
        Ok(inst)
    }

    fn operand(&mut self, c: &mut Cursor<'t>) -> Result<Operand, ParseError> {
        c.skip_ws();
        if c.peek_char() == Some('%') {
            Ok(Operand::Tile(self.use_tile(c)?))
        } else {
            Ok(Operand::Scalar(c.scalar()?))
        }
    }

    fn loop_inst(&mut self, c: &mut Cursor<'t>) -> Result<Inst, ParseError> {
        c.keyword("loop")?;
        c.skip_ws();
        let col = c.column();
        let number = c.var_id()?;
        if self.path.len() > MAX_LOOP_DEPTH {
            return Err(c.error_at(
                1,
                format!(
                    "loops nest {} deep: at most {MAX_LOOP_DEPTH} are allowed",
                    self.path.len()
                ),
            ));
        }
        let var = self
            .vars
            .define(number.as_u32(), c.line, &format!("loop variable {number}"))
            .map_err(|message| c.error_at(col, message))?;
        c.keyword("in")?;
        c.punct("0..")?;
        let count = c.uint()?;
        let (mut init, mut params) = (Vec::new(), Vec::new());
        if c.eat("carry") {
            c.punct("(")?;
            loop {
                params.push(self.typed_def(c)?);
                c.punct("=")?;
                init.push(self.use_tile(c)?);
                if !c.eat(",") {
                    break;
                }
            }
            c.punct(")")?;
        }
        c.punct("{")?;
        c.end()?;
        let (body, yields, closing) = self.statements()?;
        let mut closing = closing.ok_or_else(|| self.end_error("`}` to close the loop"))?;
        let mut results = Vec::new();
        if closing.eat("->") {
            closing.punct("(")?;
            loop {
                results.push(self.typed_def(&mut closing)?);
                if !closing.eat(",") {
                    break;
                }
            }
            closing.punct(")")?;
        }
        closing.end()?;
        Ok(Inst::Loop {
            var,
            count,
            init,
            params,
            body,
            yields: yields.unwrap_or_default(),
            results,
        })
    }
}

#[cfg(test)]
thread_local! {
    /// Characters [`Cursor::column`] has counted on this thread: the work behind columns,
    /// which tests check grows with the text, not with its square.
    pub(crate) static CHARS_COUNTED_FOR_COLUMNS: Cell<usize> = const { Cell::new(0) };
}

/// A position in one line of the text.
struct Cursor<'t> {
    line: usize,
    text: &'t str,
    /// Byte offset.
    pos: usize,
    /// A byte offset and its column, from which [`Cursor::column`] counts on, so that
    /// columns cost time proportional to the distance moved, not to the line's length.
    known_column: Cell<(usize, usize)>,
    /// The loop variables the index expressions read so far name, as the text numbers
    /// them, with their columns (for [`Parser::index_vars`]).
    var_uses: Vec<(u32, usize)>,
}

impl<'t> Cursor<'t> {
    fn new(line: usize, text: &'t str) -> Cursor<'t> {
        Cursor {
            line,
            text,
            pos: 0,
            known_column: Cell::new((0, 1)),
            var_uses: Vec::new(),
        }
    }

    fn rest(&self) -> &'t str {
        &self.text[self.pos..]
    }

    fn column(&self) -> usize {
        let (mut from, mut column) = self.known_column.get();
        if from > self.pos {
            (from, column) = (0, 1);
        }
        let counted = self.text[from..self.pos].chars().count();
        #[cfg(test)]
        CHARS_COUNTED_FOR_COLUMNS.with(|total| total.set(total.get() + counted));
        let column = column + counted;
        self.known_column.set((self.pos, column));
        column
    }

    fn error_at(&self, column: usize, message: impl Into<String>) -> ParseError {
        ParseError::Syntax {
            line: self.line,
            column,
            message: message.into(),
        }
    }

    fn error(&self, message: impl Into<String>) -> ParseError {
        self.error_at(self.column(), message)
    }

    /// What is at the cursor, for "expected X, got Y" messages.
    fn found(&self) -> String {
        match self.rest().split_whitespace().next() {
            Some(token) => format!("`{token}`"),
            None => "the end of the line".to_owned(),
        }
    }

    fn expected(&self, what: &str) -> ParseError {
        self.error(format!("expected {what}, got {}", self.found()))
    }

    fn skip_ws(&mut self) {
        let rest = self.rest();
        self.pos += rest.len() - rest.trim_start().len();
    }

    fn peek_char(&mut self) -> Option<char> {
        self.skip_ws();
        self.rest().chars().next()
    }

    /// Consumes `token` if it is next.
    fn eat(&mut self, token: &str) -> bool {
        self.skip_ws();
        if self.rest().starts_with(token) {
            self.pos += token.len();
            true
        } else {
            false
        }
    }

    fn punct(&mut self, token: &str) -> Result<(), ParseError> {
        if self.eat(token) {
            Ok(())
        } else {
            Err(self.expected(&format!("`{token}`")))
        }
    }

    fn word_len(&self) -> usize {
        self.rest()
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .unwrap_or(self.rest().len())
    }

    fn peek_word(&mut self) -> Option<&'t str> {
        self.skip_ws();
        let len = self.word_len();
        (len > 0).then(|| &self.rest()[..len])
    }

    /// A word of letters, digits and `_`, with its column.
    fn word(&mut self) -> Result<(usize, &'t str), ParseError> {
        self.skip_ws();
        let col = self.column();
        let len = self.word_len();
        if len == 0 {
            return Err(self.expected("a word"));
        }
        let word = &self.rest()[..len];
        self.pos += len;
        Ok((col, word))
    }

    fn keyword(&mut self, keyword: &str) -> Result<(), ParseError> {
        if self.peek_word() == Some(keyword) {
            self.pos += keyword.len();
            Ok(())
        } else {
            Err(self.expected(&format!("`{keyword}`")))
        }
    }

    fn enum_word<T: Copy>(
        &mut self,
        what: &str,
        all: &[T],
        name: fn(T) -> &'static str,
    ) -> Result<T, ParseError> {
        let (col, word) = self.word()?;
        all.iter()
            .copied()
            .find(|v| name(*v) == word)
            .ok_or_else(|| {
                let names: Vec<&str> = all.iter().map(|v| name(*v)).collect();
                self.error_at(
                    col,
                    format!(
                        "unknown {what} `{word}`: expected one of {}",
                        names.join(", ")
                    ),
                )
            })
    }

    fn end(&mut self) -> Result<(), ParseError> {
        self.skip_ws();
        if self.rest().is_empty() {
            Ok(())
        } else {
            Err(self.expected("the end of the line"))
        }
    }

    fn digits(&mut self, what: &str) -> Result<(usize, &'t str), ParseError> {
        self.skip_ws();
        let col = self.column();
        let len = self
            .rest()
            .find(|c: char| !c.is_ascii_digit())
            .unwrap_or(self.rest().len());
        if len == 0 {
            return Err(self.expected(what));
        }
        let digits = &self.rest()[..len];
        self.pos += len;
        Ok((col, digits))
    }

    fn number<T: core::str::FromStr>(&mut self, what: &str) -> Result<T, ParseError> {
        let (col, digits) = self.digits(what)?;
        digits
            .parse()
            .map_err(|_| self.error_at(col, format!("{what} `{digits}` is out of range")))
    }

    fn uint(&mut self) -> Result<usize, ParseError> {
        self.number("an integer")
    }

    fn prefixed_id(&mut self, prefix: &str, what: &str) -> Result<u32, ParseError> {
        self.skip_ws();
        if !self.rest().starts_with(prefix) {
            return Err(self.expected(what));
        }
        self.pos += prefix.len();
        self.number(what)
    }

    fn tile_id(&mut self) -> Result<TileId, ParseError> {
        self.prefixed_id("%", "a tile `%N`").map(TileId::new)
    }

    fn global_id(&mut self) -> Result<GlobalId, ParseError> {
        self.prefixed_id("@", "a global `@N`").map(GlobalId::new)
    }

    fn var_id(&mut self) -> Result<VarId, ParseError> {
        self.prefixed_id("i", "a loop variable `iN`")
            .map(VarId::new)
    }

    fn dtype(&mut self) -> Result<DType, ParseError> {
        let (col, word) = self.word()?;
        word.parse()
            .map_err(|e: crate::dtype::UnknownDType| self.error_at(col, e.to_string()))
    }

    fn dims(&mut self) -> Result<Vec<usize>, ParseError> {
        self.punct("[")?;
        let mut dims = Vec::new();
        if !self.eat("]") {
            loop {
                dims.push(self.uint()?);
                if !self.eat(",") {
                    break;
                }
            }
            self.punct("]")?;
        }
        Ok(dims)
    }

    fn tile_type(&mut self) -> Result<TileType, ParseError> {
        let dtype = self.dtype()?;
        let shape = self.dims()?;
        self.punct("@")?;
        let level = self.enum_word(
            "memory level",
            &[
                MemLevel::Ub,
                MemLevel::L1,
                MemLevel::L0A,
                MemLevel::L0B,
                MemLevel::L0C,
            ],
            MemLevel::name,
        )?;
        Ok(TileType {
            shape,
            dtype,
            level,
        })
    }

    /// A bare name (letters, digits, `_`, `.`, `-`) or a quoted string.
    fn name(&mut self) -> Result<String, ParseError> {
        self.skip_ws();
        if !self.rest().starts_with('"') {
            let len = self
                .rest()
                .find(|c: char| !(c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-')))
                .unwrap_or(self.rest().len());
            if len == 0 {
                return Err(self.expected("a name"));
            }
            let name = &self.rest()[..len];
            self.pos += len;
            return Ok(name.to_owned());
        }
        let start = self.column();
        self.pos += 1;
        let mut name = String::new();
        let mut chars = self.rest().char_indices();
        while let Some((i, c)) = chars.next() {
            match c {
                '"' => {
                    self.pos += i + 1;
                    return Ok(name);
                }
                '\\' => match chars.next() {
                    Some((_, '"')) => name.push('"'),
                    Some((_, '\\')) => name.push('\\'),
                    Some((j, 'u')) => {
                        let tail = &self.rest()[j + 1..];
                        let close = tail.find('}').filter(|_| tail.starts_with('{'));
                        let code = close
                            .and_then(|close| u32::from_str_radix(&tail[1..close], 16).ok())
                            .and_then(char::from_u32);
                        match (code, close) {
                            (Some(ch), Some(close)) => {
                                name.push(ch);
                                // Skip `{hex}`: the iterator is past `u`.
                                for _ in 0..=close {
                                    chars.next();
                                }
                            }
                            _ => {
                                return Err(
                                    self.error_at(start, "bad escape in name: expected `\\u{HEX}`")
                                );
                            }
                        }
                    }
                    _ => {
                        return Err(self.error_at(
                            start,
                            "bad escape in name: expected `\\\"`, `\\\\` or `\\u{HEX}`",
                        ));
                    }
                },
                c => name.push(c),
            }
        }
        Err(self.error_at(start, "unterminated quoted name"))
    }

    /// An f64 as `{:?}` prints it: everything up to a space, `,` or `)`.
    fn scalar(&mut self) -> Result<f64, ParseError> {
        self.skip_ws();
        let col = self.column();
        let len = self
            .rest()
            .find(|c: char| c.is_whitespace() || matches!(c, ',' | ')' | ']'))
            .unwrap_or(self.rest().len());
        let token = &self.rest()[..len];
        if token.is_empty() {
            return Err(self.expected("a number"));
        }
        let value = token
            .parse::<f64>()
            .map_err(|_| self.error_at(col, format!("expected a number, got `{token}`")))?;
        self.pos += len;
        Ok(value)
    }

    fn offsets(&mut self) -> Result<Vec<Index>, ParseError> {
        self.punct("[")?;
        let mut offsets = Vec::new();
        if !self.eat("]") {
            loop {
                offsets.push(self.index(0)?.0);
                if !self.eat(",") {
                    break;
                }
            }
            self.punct("]")?;
        }
        Ok(offsets)
    }

    /// An index expression `nesting` parentheses and calls deep, with its tree's height;
    /// both are limited to [`MAX_INDEX_DEPTH`] (the height as validation limits it), so
    /// that neither this recursion nor any pass over the tree can exhaust the stack.
    fn index(&mut self, nesting: usize) -> Result<(Index, usize), ParseError> {
        let (mut lhs, mut depth) = self.term(nesting)?;
        loop {
            let col = self.column();
            let node: fn(Box<Index>, Box<Index>) -> Index = if self.eat("+") {
                Index::Add
            } else if self.eat("-") {
                Index::Sub
            } else {
                return Ok((lhs, depth));
            };
            let (rhs, rhs_depth) = self.term(nesting)?;
            depth = self.deeper(col, depth.max(rhs_depth))?;
            lhs = node(Box::new(lhs), Box::new(rhs));
        }
    }

    fn term(&mut self, nesting: usize) -> Result<(Index, usize), ParseError> {
        let (mut lhs, mut depth) = self.atom(nesting)?;
        loop {
            let col = self.column();
            let node: fn(Box<Index>, Box<Index>) -> Index = if self.eat("*") {
                Index::Mul
            } else if self.eat("/") {
                Index::Div
            } else if self.eat("%") {
                Index::Rem
            } else {
                return Ok((lhs, depth));
            };
            let (rhs, rhs_depth) = self.atom(nesting)?;
            depth = self.deeper(col, depth.max(rhs_depth))?;
            lhs = node(Box::new(lhs), Box::new(rhs));
        }
    }

    /// One level below `depth`, refused past [`MAX_INDEX_DEPTH`] at `col`.
    fn deeper(&self, col: usize, depth: usize) -> Result<usize, ParseError> {
        if depth >= MAX_INDEX_DEPTH {
            return Err(self.error_at(
                col,
                format!("the index expression nests more than {MAX_INDEX_DEPTH} deep"),
            ));
        }
        Ok(depth + 1)
    }

    fn atom(&mut self, nesting: usize) -> Result<(Index, usize), ParseError> {
        let Some(next) = self.peek_char() else {
            return Err(self.expected("an index"));
        };
        if next == '(' {
            let nesting = self.deeper(self.column(), nesting)?;
            self.pos += 1;
            let (inner, depth) = self.index(nesting)?;
            self.punct(")")?;
            return Ok((inner, depth));
        }
        if next == '-' || next.is_ascii_digit() {
            let col = self.column();
            let negative = self.eat("-");
            let (_, digits) = self.digits("an integer")?;
            let literal = if negative {
                format!("-{digits}")
            } else {
                digits.to_owned()
            };
            return literal.parse().map(|c| (Index::Const(c), 0)).map_err(|_| {
                self.error_at(col, format!("index constant `{literal}` is out of range"))
            });
        }
        let (col, word) = self.word().map_err(|_| self.expected("an index"))?;
        match word {
            "pid" => Ok((Index::ProgramId, 0)),
            "min" | "max" => {
                let nesting = self.deeper(col, nesting)?;
                self.punct("(")?;
                let (a, a_depth) = self.index(nesting)?;
                self.punct(",")?;
                let (b, b_depth) = self.index(nesting)?;
                self.punct(")")?;
                let node = if word == "min" {
                    Index::Min
                } else {
                    Index::Max
                };
                let depth = self.deeper(col, a_depth.max(b_depth))?;
                Ok((node(Box::new(a), Box::new(b)), depth))
            }
            _ => match word.strip_prefix('i').map(str::parse::<u32>) {
                Some(Ok(v)) => {
                    self.var_uses.push((v, col));
                    Ok((Index::Var(VarId::new(v)), 0))
                }
                _ => Err(self.error_at(
                    col,
                    format!(
                        "unknown index term `{word}`: expected an integer, pid, iN, min or max"
                    ),
                )),
            },
        }
    }
}

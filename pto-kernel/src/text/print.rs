//! The printer of the text form: `Display` for [`Program`].

use core::fmt::{self, Write as _};

use super::super::ir::{GlobalRole, Index, Inst, Operand, Program, TileId, TileType};

impl fmt::Display for Program {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "kernel {} grid {}", Name(&self.op), self.grid)?;
        for (i, g) in self.globals.iter().enumerate() {
            let role = match g.role {
                GlobalRole::Input => "input",
                GlobalRole::Output => "output",
            };
            writeln!(
                f,
                "global @{i} {}: {}[{}] {role}",
                Name(&g.name),
                g.dtype,
                Dims(&g.shape)
            )?;
        }
        Printer {
            program: self,
            out: f,
        }
        .block(&self.body, 0)
    }
}

struct Printer<'a, 'f, 'g> {
    program: &'a Program,
    out: &'f mut fmt::Formatter<'g>,
}

impl<'a> Printer<'a, '_, '_> {
    fn ty(&self, id: TileId) -> TypeOf<'a> {
        TypeOf(self.program.tile(id))
    }

    fn block(&mut self, body: &[Inst], depth: usize) -> fmt::Result {
        for inst in body {
            self.inst(inst, depth)?;
        }
        Ok(())
    }

    fn def(&mut self, depth: usize, dst: TileId) -> fmt::Result {
        write!(
            self.out,
            "{:indent$}{dst}: {} = ",
            "",
            self.ty(dst),
            indent = 2 * depth
        )
    }

    fn inst(&mut self, inst: &Inst, depth: usize) -> fmt::Result {
        match inst {
            Inst::Load {
                dst,
                src,
                offsets,
                pad,
            } => {
                self.def(depth, *dst)?;
                writeln!(self.out, "load {src}[{}] pad {pad:?}", Offsets(offsets))
            }
            Inst::Store { dst, offsets, src } => writeln!(
                self.out,
                "{:indent$}store {dst}[{}], {src}",
                "",
                Offsets(offsets),
                indent = 2 * depth
            ),
            Inst::Full { dst, value } => {
                self.def(depth, *dst)?;
                writeln!(self.out, "full {value:?}")
            }
            Inst::Iota { dst, axis, start } => {
                self.def(depth, *dst)?;
                writeln!(self.out, "iota axis {axis} start {}", Expr(start))
            }
            Inst::Unary { dst, op, src } => {
                self.def(depth, *dst)?;
                writeln!(self.out, "unary {} {src}", op.name())
            }
            Inst::Binary { dst, op, lhs, rhs } => {
                self.def(depth, *dst)?;
                writeln!(self.out, "binary {} {}, {}", op.name(), Opd(lhs), Opd(rhs))
            }
            Inst::Compare { dst, op, lhs, rhs } => {
                self.def(depth, *dst)?;
                writeln!(self.out, "compare {} {}, {}", op.name(), Opd(lhs), Opd(rhs))
            }
            Inst::Select {
                dst,
                cond,
                on_true,
                on_false,
            } => {
                self.def(depth, *dst)?;
                writeln!(
                    self.out,
                    "select {cond}, {}, {}",
                    Opd(on_true),
                    Opd(on_false)
                )
            }
            Inst::Cast { dst, src } => {
                self.def(depth, *dst)?;
                writeln!(self.out, "cast {src}")
            }
            Inst::Reduce { dst, op, src, axis } => {
                self.def(depth, *dst)?;
                writeln!(self.out, "reduce {} {src} axis {axis}", op.name())
            }
            Inst::ArgReduce { dst, op, src, axis } => {
                self.def(depth, *dst)?;
                writeln!(self.out, "argreduce {} {src} axis {axis}", op.name())
            }
            Inst::Logic { dst, op, lhs, rhs } => {
                self.def(depth, *dst)?;
                writeln!(self.out, "logic {} {lhs}, {rhs}", op.name())
            }
            Inst::Not { dst, src } => {
                self.def(depth, *dst)?;
                writeln!(self.out, "not {src}")
            }
            Inst::TopK {
                values,
                indices,
                src,
                k,
            } => {
                writeln!(
                    self.out,
                    "{:indent$}{values}: {}, {indices}: {} = topk {src} k {k}",
                    "",
                    self.ty(*values),
                    self.ty(*indices),
                    indent = 2 * depth
                )
            }
            Inst::Reshape { dst, src } => {
                self.def(depth, *dst)?;
                writeln!(self.out, "reshape {src}")
            }
            Inst::Move { dst, src } => {
                self.def(depth, *dst)?;
                writeln!(self.out, "move {src}")
            }
            Inst::Extract { dst, src, offsets } => {
                self.def(depth, *dst)?;
                let offsets: Vec<String> = offsets.iter().map(usize::to_string).collect();
                writeln!(self.out, "extract {src} [{}]", offsets.join(", "))
            }
            Inst::Matmul {
                dst,
                a,
                b,
                acc,
                transpose_b,
            } => {
                self.def(depth, *dst)?;
                write!(self.out, "matmul {a}, {b}")?;
                if let Some(acc) = acc {
                    write!(self.out, " acc {acc}")?;
                }
                if *transpose_b {
                    write!(self.out, " transpose_b")?;
                }
                writeln!(self.out)
            }
            Inst::Loop {
                var,
                count,
                init,
                params,
                body,
                yields,
                results,
            } => {
                let indent = 2 * depth;
                write!(self.out, "{:indent$}loop {var} in 0..{count}", "")?;
                if !params.is_empty() || !init.is_empty() {
                    let carried: Vec<String> = params
                        .iter()
                        .zip(init)
                        .map(|(p, i)| format!("{p}: {} = {i}", self.ty(*p)))
                        .collect();
                    write!(self.out, " carry({})", carried.join(", "))?;
                }
                writeln!(self.out, " {{")?;
                self.block(body, depth + 1)?;
                if !yields.is_empty() {
                    writeln!(self.out, "{:indent$}  yield {}", "", Ids(yields))?;
                }
                write!(self.out, "{:indent$}}}", "")?;
                if !results.is_empty() {
                    let results: Vec<String> = results
                        .iter()
                        .map(|r| format!("{r}: {}", self.ty(*r)))
                        .collect();
                    write!(self.out, " -> ({})", results.join(", "))?;
                }
                writeln!(self.out)
            }
        }
    }
}

/// One instruction of `program` in the text form, on one line without indentation: the
/// line the program prints for it, and for a loop its first line (`loop i0 in 0..4 carry(%1:
/// f32[8, 1]@ub = %0) {`). For messages and comments on one instruction (the Ascend C
/// lowering comments the code of each instruction with it).
pub fn inst_line(program: &Program, inst: &Inst) -> String {
    struct Line<'a>(&'a Program, &'a Inst);
    impl fmt::Display for Line<'_> {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            Printer {
                program: self.0,
                out: f,
            }
            .inst(self.1, 0)
        }
    }
    let text = Line(program, inst).to_string();
    text.lines().next().unwrap_or_default().to_owned()
}

/// A tile's type, or a marker for an id without one (printing an invalid program).
struct TypeOf<'a>(Option<&'a TileType>);

impl fmt::Display for TypeOf<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            Some(ty) => write!(f, "{ty}"),
            None => f.write_str("<no type>"),
        }
    }
}

struct Dims<'a>(&'a [usize]);

impl fmt::Display for Dims<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, d) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            write!(f, "{d}")?;
        }
        Ok(())
    }
}

struct Ids<'a>(&'a [TileId]);

impl fmt::Display for Ids<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, id) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            write!(f, "{id}")?;
        }
        Ok(())
    }
}

struct Opd<'a>(&'a Operand);

impl fmt::Display for Opd<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            Operand::Tile(id) => write!(f, "{id}"),
            Operand::Scalar(v) => write!(f, "{v:?}"),
        }
    }
}

struct Offsets<'a>(&'a [Index]);

impl fmt::Display for Offsets<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, o) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            write!(f, "{}", Expr(o))?;
        }
        Ok(())
    }
}

/// An index expression with the parentheses its tree needs (operators associate left).
struct Expr<'a>(&'a Index);

/// Binding strength: sums 1, products 2, atoms 3.
fn precedence(index: &Index) -> u8 {
    match index {
        Index::Add(..) | Index::Sub(..) => 1,
        Index::Mul(..) | Index::Div(..) | Index::Rem(..) => 2,
        Index::Const(_) | Index::ProgramId | Index::Var(_) | Index::Min(..) | Index::Max(..) => 3,
    }
}

fn write_index(f: &mut fmt::Formatter<'_>, index: &Index, min_precedence: u8) -> fmt::Result {
    if precedence(index) < min_precedence {
        f.write_str("(")?;
        write_index(f, index, 0)?;
        return f.write_str(")");
    }
    let infix = |f: &mut fmt::Formatter<'_>, a: &Index, op: &str, b: &Index, p: u8| {
        write_index(f, a, p)?;
        write!(f, " {op} ")?;
        write_index(f, b, p + 1)
    };
    match index {
        Index::Const(c) => write!(f, "{c}"),
        Index::ProgramId => f.write_str("pid"),
        Index::Var(v) => write!(f, "{v}"),
        Index::Add(a, b) => infix(f, a, "+", b, 1),
        Index::Sub(a, b) => infix(f, a, "-", b, 1),
        Index::Mul(a, b) => infix(f, a, "*", b, 2),
        Index::Div(a, b) => infix(f, a, "/", b, 2),
        Index::Rem(a, b) => infix(f, a, "%", b, 2),
        Index::Min(a, b) | Index::Max(a, b) => {
            let name = if matches!(index, Index::Min(..)) {
                "min"
            } else {
                "max"
            };
            write!(f, "{name}(")?;
            write_index(f, a, 0)?;
            f.write_str(", ")?;
            write_index(f, b, 0)?;
            f.write_str(")")
        }
    }
}

impl fmt::Display for Expr<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write_index(f, self.0, 0)
    }
}

fn is_bare_name(name: &str) -> bool {
    !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-'))
}

/// A name, bare when it can be, else quoted.
struct Name<'a>(&'a str);

impl fmt::Display for Name<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if is_bare_name(self.0) {
            return f.write_str(self.0);
        }
        f.write_char('"')?;
        for c in self.0.chars() {
            match c {
                '"' => f.write_str("\\\"")?,
                '\\' => f.write_str("\\\\")?,
                c if c.is_control() => write!(f, "\\u{{{:x}}}", u32::from(c))?,
                c => f.write_char(c)?,
            }
        }
        f.write_char('"')
    }
}

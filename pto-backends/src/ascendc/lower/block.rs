//! The block program: the walk over the instructions, each commented and lowered by its
//! kind, loops with their carried tiles, queue tiles freed after their last use.

use pto_op::DType;
use pto_op::kernel::ir::{Inst, MemLevel};
use pto_op::kernel::text::inst_line;

use super::super::LowerError;
use super::super::plan::{self, Geom};
use super::cpp_expr::scalar;
use super::movement::copy_elems;
use super::state::Lowering;
use super::writer::{ALL, VEC};

impl Lowering<'_> {
    pub(super) fn block(&mut self) -> Result<(), LowerError> {
        self.scopes.push(Vec::new());
        if let Some(half) = self.aiv_rows {
            self.side(VEC);
            self.code.line(format!(
                "// This vector core's rows of the block program: {half} of each {} (the row-split tiles).",
                2 * half
            ));
            self.code
                .line(format!("const int64_t aivRow = GetSubBlockIdx() * {half};"));
        }
        let body = &self.program.body;
        self.body(body)?;
        self.free_scope();
        Ok(())
    }

    fn body(&mut self, body: &[Inst]) -> Result<(), LowerError> {
        for inst in body {
            let start = self.position;
            self.number = self.next_number;
            self.next_number += 1;
            self.inst(inst)?;
            let last = match inst {
                Inst::Loop { body, .. } => start + 1 + plan::span(body),
                _ => start,
            };
            self.position = last + 1;
            self.side(VEC);
            self.free_dead(last);
        }
        Ok(())
    }

    /// The instruction in the text form (a loop: its first line), as a comment and as the
    /// host implementation's name of the instruction running.
    fn comment(&mut self, inst: &Inst) {
        let text = inst_line(self.full, inst);
        self.code.line(format!("// {text}"));
        let escaped = text.replace('\\', "\\\\").replace('"', "\\\"");
        self.code
            .line(format!("PTO_INST({}, \"{escaped}\");", self.number));
    }

    fn inst(&mut self, inst: &Inst) -> Result<(), LowerError> {
        let sides = self.sides_of(inst);
        self.side(sides);
        self.comment(inst);
        match inst {
            Inst::Load {
                dst,
                src,
                offsets,
                pad,
            } => {
                if self.ty(*dst).level != MemLevel::Ub && self.ty(*dst).shape.len() != 2 {
                    return Err(
                        self.unsupported(inst, "loads into L1 of tiles of rank other than 2")
                    );
                }
                self.load(*dst, *src, offsets, *pad)
            }
            Inst::Store { dst, offsets, src } => self.store(inst, *dst, offsets, *src),
            Inst::Full { dst, value } => {
                self.declare(*dst);
                let ty = self.ty(*dst).clone();
                if ty.dtype == DType::Bool {
                    return Err(self.unsupported(inst, "a bool tile filled with a constant"));
                }
                let g = Geom::of(&ty);
                self.code.line(format!(
                    "Duplicate({}, {}, {});",
                    Lowering::name(*dst),
                    scalar(*value, ty.dtype),
                    g.elems()
                ));
                Ok(())
            }
            Inst::Iota { dst, axis, start } => self.iota(inst, *dst, *axis, start),
            Inst::Unary { dst, op, src } => self.unary(inst, *dst, *op, *src),
            Inst::Binary { dst, op, lhs, rhs } => self.binary(inst, *dst, *op, lhs, rhs),
            Inst::Compare { dst, op, lhs, rhs } => self.compare(inst, *dst, *op, lhs, rhs),
            Inst::Select {
                dst,
                cond,
                on_true,
                on_false,
            } => self.select(inst, *dst, *cond, on_true, on_false),
            Inst::Cast { dst, src } => self.cast(inst, *dst, *src),
            Inst::Reduce { dst, op, src, axis } => self.reduce(inst, *dst, *op, *src, *axis),
            Inst::ArgReduce { dst, op, src, axis } => self.arg_reduce(inst, *dst, *op, *src, *axis),
            Inst::TopK {
                values,
                indices,
                src,
                k,
            } => self.top_k(inst, *values, *indices, *src, *k),
            Inst::Logic { dst, op, lhs, rhs } => self.logic(inst, *dst, *op, *lhs, *rhs),
            Inst::Not { dst, src } => self.not(*dst, *src),
            Inst::Reshape { dst, src } => self.reshape(inst, *dst, *src),
            Inst::Move { dst, src } => self.move_tile(inst, *dst, *src),
            Inst::Extract { dst, src, offsets } => self.extract(inst, *dst, *src, offsets),
            Inst::Matmul {
                dst,
                a,
                b,
                acc,
                transpose_b: _,
            } => self.matmul(inst, *dst, *a, *b, *acc),
            Inst::Loop {
                var,
                count,
                init,
                params,
                body,
                yields,
                results,
            } => {
                let start = self.position;
                for (p, i) in params.iter().zip(init) {
                    self.side(Lowering::side_of(self.ty(*p).level));
                    self.declare(*p);
                    if self.ty(*p).level != MemLevel::Ub {
                        // The loop carries the initial tile's storage (an accumulator).
                        let level = self.ty(*p).level;
                        self.require(inst, self.plan.last_use[*i] == start, || {
                            format!("{i} carried into the loop in {level} is used after it")
                        })?;
                        continue;
                    }
                    if self.plan.storage[*p] == self.plan.storage[*i] {
                        // The carried tile took the initial value's place.
                        continue;
                    }
                    let g = Geom::of(self.ty(*p));
                    self.code.line(format!(
                        "DataCopy({}, {}, {});",
                        Lowering::name(*p),
                        Lowering::name(*i),
                        copy_elems(self.ty(*p), &g)
                    ));
                }
                let v = format!("i{}", var.as_u32());
                self.side(ALL);
                self.code
                    .open(format!("for (int64_t {v} = 0; {v} < {count}; ++{v})"));
                self.scopes.push(Vec::new());
                self.position += 1;
                let own = self.number;
                self.body(body)?;
                self.number = own;
                for (p, y) in params.iter().zip(yields) {
                    self.side(Lowering::side_of(self.ty(*p).level));
                    if self.ty(*p).level != MemLevel::Ub {
                        let level = self.ty(*p).level;
                        let in_place = plan::root(&self.plan.storage, *p)
                            == plan::root(&self.plan.storage, *y);
                        self.require(inst, in_place, || {
                            format!("{y} yielded for {p} in {level} is not accumulated in place")
                        })?;
                        continue;
                    }
                    let (ps, ys) = (
                        &self.plan.storage[*p],
                        &self.plan.storage[plan::root(&self.plan.storage, *y)],
                    );
                    if params
                        .iter()
                        .any(|q| q != p && self.plan.storage[*q] == *ys)
                    {
                        return Err(self.unsupported(
                            inst,
                            format!("{y}, yielded for {p}, lives where another carried tile does"),
                        ));
                    }
                    if p != y && ps != ys {
                        let g = Geom::of(self.ty(*p));
                        self.code.line(format!(
                            "DataCopy({}, {}, {});",
                            Lowering::name(*p),
                            Lowering::name(*y),
                            copy_elems(self.ty(*p), &g)
                        ));
                    }
                }
                self.side(VEC);
                self.free_scope();
                self.side(ALL);
                self.code.close();
                for r in results {
                    self.side(Lowering::side_of(self.ty(*r).level));
                    self.declare(*r);
                }
                Ok(())
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::{lower_program, test_kernel};

    /// Each instruction's comment, and the host implementation's name of it, is its line
    /// of the kernel's text form (a loop: its first line), in program order.
    #[test]
    fn each_instruction_is_named_by_its_text_form_line() {
        let text = "kernel t.loop grid 2\n\
                    global @0 x: f32[16, 64] input\n\
                    global @1 y: f32[16, 8] output\n\
                    %0: f32[8, 8]@ub = full 0.0\n\
                    loop i0 in 0..8 carry(%1: f32[8, 8]@ub = %0) {\n\
                    %2: f32[8, 8]@ub = load @0[pid * 8, i0 * 8] pad -1.5\n\
                    %3: f32[8, 8]@ub = binary add %1, %2\n\
                    yield %3\n\
                    } -> (%4: f32[8, 8]@ub)\n\
                    %5: f32[8, 8]@ub = unary exp %4\n\
                    store @1[pid * 8, 0], %5\n";
        let (program, soc, profile) = test_kernel(text);
        let lines: Vec<&str> = text
            .lines()
            .filter(|l| {
                !["kernel ", "global ", "yield ", "}"]
                    .iter()
                    .any(|p| l.starts_with(p))
            })
            .collect();
        let kernel = lower_program(&program, "x", soc, &profile).expect("lowered");
        let source = &kernel.kernel_source;
        let mut named = Vec::new();
        let mut commented = Vec::new();
        let mut previous = "";
        for line in source.lines().map(str::trim) {
            if let Some(rest) = line.strip_prefix(&format!("PTO_INST({}, \"", named.len())) {
                let name = rest.strip_suffix("\");").expect("a PTO_INST line");
                named.push(name.replace("\\\"", "\"").replace("\\\\", "\\"));
                commented.push(previous.strip_prefix("// ").expect("a comment").to_owned());
            }
            previous = line;
        }
        assert_eq!(named, lines, "{source}");
        assert_eq!(commented, lines, "{source}");
    }
}

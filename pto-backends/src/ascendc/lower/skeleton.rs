//! The kernel around the block program: the kernel class with `Init` (GM tensors, the
//! `TPipe` with its queues and pools, a split kernel's workspace slots) and `Process`
//! (the block programs of this core; on a split mix kernel the cube and vector sides
//! with their credits), the `extern "C"` entry, and the tiling header.

use core::fmt::Write as _;

use super::super::{KernelType, TilingField};
use super::cpp_expr::{c_identifier, c_type};
use super::helpers::{CUBE_HELPERS, HELPERS};
use super::state::{Lowering, POOLS};
use super::writer::Code;

impl Lowering<'_> {
    /// The kind of kernel: coupled (Kirin), or on the 910B a mix of the cube core and two
    /// vector cores, cube only or vector only.
    pub(super) fn kernel_type(&self) -> KernelType {
        if !self.soc.split_cores() {
            KernelType::Coupled
        } else if self.split {
            KernelType::MixAic1Aiv2
        } else if self.uses_cube {
            KernelType::AicOnly
        } else {
            KernelType::AivOnly
        }
    }

    /// `Process` of a split kernel: the AIC runs the cube side of each block program, and
    /// both AIVs its vector side, each on half the rows, or where the rows cannot be split
    /// one AIV the vector side and the other only its handshakes (the two AIVs take turns,
    /// block program by block program); each reader gives
    /// its writer one credit (a free flag) at the start and the writer takes the last one
    /// back at the end, so that every flag's counter ends at zero.
    fn split_process(&self, c: &mut Code) {
        c.line(
            "// Block programs block, block + blockNum, ... of the grid, on the cube core (AIC) \
             and the two",
        );
        c.line("// vector cores (AIV) of AI core `block`.");
        c.open("__aicore__ inline void Process()");
        c.line("const int64_t block = GetBlockIdx() / GetTaskRatio();");
        let credits = |c: &mut Code, to_vector: bool, pipe: &str| {
            for h in self.handoffs.iter().filter(|h| h.to_vector == to_vector) {
                c.line(format!("CrossCoreSetFlag<2, {pipe}>({});", h.free));
            }
        };
        let take_back = |c: &mut Code, to_vector: bool| {
            for h in self.handoffs.iter().filter(|h| h.to_vector == to_vector) {
                c.line(format!("CrossCoreWaitFlag({});", h.free));
            }
        };
        let pids =
            "for (int64_t pid = block; pid < static_cast<int64_t>(grid); pid += GetBlockNum())";
        c.open("if ASCEND_IS_AIC");
        credits(c, false, "PIPE_MTE2");
        c.open(pids);
        c.line("BlockCube(pid);");
        c.close();
        take_back(c, true);
        c.close();
        c.open("if ASCEND_IS_AIV");
        credits(c, true, "PIPE_MTE2");
        c.open(pids);
        if let Some(half) = self.aiv_rows {
            c.line(format!(
                "// Both AIVs run every block program, each on {half} of the {} rows of its vector tiles (aivRow).",
                2 * half
            ));
            c.line("BlockVector(pid);");
        } else {
            c.line(format!(
                "// The rows are not split between the AIVs: {}.",
                self.take_turns.unwrap_or("the vector work is not row-wise")
            ));
            c.line(
                "// The two AIVs take turns: the k-th block program of this AI core is AIV (k % 2)'s.",
            );
            c.open("if ((pid - block) / GetBlockNum() % 2 == GetSubBlockIdx())");
            c.line("BlockVector(pid);");
            c.indent -= 1;
            c.open("} else");
            c.line("BlockVectorSync(pid);");
            c.close();
        }
        c.close();
        take_back(c, false);
        c.close();
        c.close();
    }

    pub(super) fn source(&self, header: &str, entry: &str, class: &str, tiling: &str) -> String {
        let mut out = String::new();
        let _ = writeln!(
            out,
            "{header}\n#include \"kernel_operator.h\"\n#include \"{entry}_tiling.h\"\n\n\
             using namespace AscendC;\n\n\
             // The host implementation names the instruction running; nothing on the device.\n\
             #ifndef PTO_INST\n#define PTO_INST(index, text)\n#endif\n\
             // An index value (int64_t) as an element of type T: the host implementation\n\
             // stops on an integer outside T's range; the device converts.\n\
             #ifndef PTO_INDEX_AS\n#define PTO_INDEX_AS(T, value) static_cast<T>(value)\n#endif\n"
        );
        out.push_str(HELPERS);
        if self.uses_cube {
            out.push_str(CUBE_HELPERS);
        }
        let globals = &self.program.globals;
        let params: Vec<String> = globals
            .iter()
            .map(|g| format!("GM_ADDR {}", c_identifier(&g.name)))
            .collect();

        let mut c = Code::default();
        c.open(format!("class Kernel{class}"));
        c.indent -= 1;
        c.line("public:");
        c.indent += 1;
        c.line(format!("__aicore__ inline Kernel{class}() {{}}"));
        let workspace_param = if self.split {
            ", GM_ADDR workspace"
        } else {
            ""
        };
        c.open(format!(
            "__aicore__ inline void Init({}{workspace_param}, const {tiling}& tiling)",
            params.join(", ")
        ));
        c.line("grid = tiling.grid;");
        for g in globals {
            let n = c_identifier(&g.name);
            let numel: String = if g.shape.is_empty() {
                "1".to_owned()
            } else {
                (0..g.shape.len())
                    .map(|d| format!("static_cast<uint64_t>(tiling.{n}_dim{d})"))
                    .collect::<Vec<_>>()
                    .join(" * ")
            };
            for d in 0..g.shape.len() {
                c.line(format!("{n}Dims[{d}] = tiling.{n}_dim{d};"));
            }
            c.line(format!(
                "{n}Gm.SetGlobalBuffer(reinterpret_cast<__gm__ {}*>({n}), {numel});",
                c_type(g.dtype)
            ));
        }
        if self.split {
            // This block's slots of the workspace; each core reserves only its own buffers.
            c.line(format!(
                "GM_ADDR slots = workspace + GetBlockIdx() / GetTaskRatio() * {};",
                self.workspace_per_block()
            ));
            for (n, h) in self.handoffs.iter().enumerate() {
                c.line(format!(
                    "ws{n}.SetGlobalBuffer(reinterpret_cast<__gm__ {}*>(slots + {}), {});",
                    h.ctype, h.offset, h.elems
                ));
            }
            c.open("if ASCEND_IS_AIV");
        }
        for q in &self.queues {
            c.line(format!(
                "pipe.InitBuffer({}, {}, {});",
                q.name, q.depth, q.bytes
            ));
        }
        for (i, (name, _)) in POOLS.iter().enumerate() {
            if self.split && i == 1 {
                c.close();
                c.open("if ASCEND_IS_AIC");
            }
            if self.plan.pool_bytes[i] > 0 {
                c.line(format!(
                    "pipe.InitBuffer({name}, {});",
                    self.plan.pool_bytes[i]
                ));
            }
            if self.split && i == 0 && self.plan.reduce_work_bytes > 0 {
                c.line(format!(
                    "pipe.InitBuffer(reduceWorkBuf, {});",
                    self.plan.reduce_work_bytes
                ));
            }
        }
        if self.split {
            c.close();
        } else if self.plan.reduce_work_bytes > 0 {
            c.line(format!(
                "pipe.InitBuffer(reduceWorkBuf, {});",
                self.plan.reduce_work_bytes
            ));
        }
        c.close();
        c.line("");
        let functions: Vec<(&str, &str)> = if self.split {
            self.split_process(&mut c);
            let mut functions = vec![
                ("BlockCube", self.code.cube.as_str()),
                ("BlockVector", self.code.text.as_str()),
            ];
            if self.aiv_rows.is_none() {
                functions.push(("BlockVectorSync", self.code.sync.as_str()));
            }
            functions
        } else {
            c.line("// Block programs blockIdx, blockIdx + blockNum, ... of the grid.");
            c.open("__aicore__ inline void Process()");
            c.open(
                "for (int64_t pid = GetBlockIdx(); pid < static_cast<int64_t>(grid); \
                 pid += GetBlockNum())",
            );
            c.line("Block(pid);");
            c.close();
            c.close();
            vec![("Block", self.code.text.as_str())]
        };
        c.line("");
        c.indent -= 1;
        c.line("private:");
        c.indent += 1;
        for (k, (function, code)) in functions.iter().enumerate() {
            if k > 0 {
                c = Code {
                    indent: 2,
                    ..Code::default()
                };
                c.close();
                c.line("");
                if *function == "BlockVectorSync" {
                    c.line("// The other AIV of the block program: the handshakes of BlockVector, no data.");
                }
            }
            c.open(format!("__aicore__ inline void {function}(int64_t pid)"));
            out.push_str(&c.text);
            for line in code.lines() {
                if line.is_empty() {
                    out.push('\n');
                } else {
                    let _ = writeln!(out, "        {line}");
                }
            }
        }
        let mut c = Code {
            indent: 2,
            ..Code::default()
        };
        c.close();
        c.line("");
        c.line("TPipe pipe;");
        for q in &self.queues {
            c.line(format!(
                "TQue<TPosition::{}, {}> {};",
                q.position, q.depth, q.name
            ));
        }
        for (i, (name, position)) in POOLS.iter().enumerate() {
            if self.plan.pool_bytes[i] > 0 {
                c.line(format!("TBuf<TPosition::{position}> {name};"));
            }
        }
        if self.plan.reduce_work_bytes > 0 {
            c.line("TBuf<TPosition::VECCALC> reduceWorkBuf;");
        }
        for g in globals {
            let n = c_identifier(&g.name);
            c.line(format!("GlobalTensor<{}> {n}Gm;", c_type(g.dtype)));
            c.line(format!("int64_t {n}Dims[{}];", g.shape.len().max(1)));
        }
        for (n, h) in self.handoffs.iter().enumerate() {
            c.line(format!("GlobalTensor<{}> ws{n};", h.ctype));
        }
        c.line("uint32_t grid;");
        c.indent = 0;
        c.line("};");
        c.line("");
        let args: Vec<String> = globals.iter().map(|g| c_identifier(&g.name)).collect();
        c.open(format!(
            "extern \"C\" __global__ __aicore__ void {entry}({}, GM_ADDR workspace, GM_ADDR tiling)",
            params.join(", ")
        ));
        if let Some(kernel_type) = self.kernel_type().declaration() {
            c.line(format!("KERNEL_TASK_TYPE_DEFAULT({kernel_type});"));
        }
        c.line(format!(
            "GET_TILING_DATA_WITH_STRUCT({tiling}, tilingData, tiling);"
        ));
        c.line(format!("Kernel{class} op;"));
        if self.split {
            c.line(format!(
                "op.Init({}, GetUserWorkspace(workspace), tilingData);",
                args.join(", ")
            ));
        } else {
            c.line(format!("op.Init({}, tilingData);", args.join(", ")));
        }
        c.line("op.Process();");
        c.close();
        out.push_str(&c.text);
        out
    }
}

pub(super) fn tiling_header(
    header: &str,
    entry: &str,
    name: &str,
    fields: &[TilingField],
) -> String {
    let guard = format!("{}_TILING_H", entry.to_uppercase());
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{header}#ifndef {guard}\n#define {guard}\n\n#include <cstdint>\n"
    );
    let _ = writeln!(out, "struct {name} {{");
    for f in fields {
        let _ = writeln!(out, "    uint32_t {};", f.name);
    }
    let _ = writeln!(out, "}};\n\n#endif  // {guard}");
    out
}

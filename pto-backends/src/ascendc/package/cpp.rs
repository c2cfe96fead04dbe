//! The C++ sources of one packaged op: op_host (OpDef, InferShape/InferDataType through the
//! C ABI, TilingFunc), its inference header, the graph prototype and the ONNX plug-in.

use std::fmt::Write as _;

use pto_op::{AttrType, AttrValue, DType, OpDef};

use super::cann_types::{attr_type_name, dtype_name};
use super::manifest::{Instance, InstanceTiling};
use crate::ascendc::{LoweredKernel, Soc};

/// `pto_capi.h`, the C ABI's header, shipped in `op_host/`.
pub(super) const CAPI_HEADER: &str = include_str!("../../../../pto-capi/include/pto_capi.h");
/// `op_host/pto_infer_common.h`: the attributes JSON and the C ABI calls (no CANN header).
pub(super) const INFER_COMMON_HEADER: &str = include_str!("pto_infer_common.h");
/// `op_host/pto_op_host.h`: dtype codes, gert shapes, saving a tiling struct.
pub(super) const OP_HOST_HEADER: &str = include_str!("pto_op_host.h");
/// `framework/onnx_plugin/pto_onnx_attrs.h`: reading the typed ONNX attributes.
pub(super) const ONNX_ATTRS_HEADER: &str = include_str!("pto_onnx_attrs.h");

/// Everything the sources of one op are generated from.
pub(super) struct OpSources<'a> {
    pub def: &'static OpDef,
    pub stem: &'a str,
    pub op_type: &'a str,
    pub soc: Soc,
    pub instances: &'a [Instance],
    pub tilings: &'a [InstanceTiling],
    pub kernel: &'a LoweredKernel,
    pub origin_op_type: String,
}

/// The C++ type a param is held in by the op_host code.
fn cpp_type(ty: AttrType) -> &'static str {
    match ty {
        AttrType::F32 => "float",
        AttrType::F64 => "double",
        AttrType::I32 => "int32_t",
        AttrType::I64 => "int64_t",
        AttrType::Bool => "bool",
        AttrType::String => "std::string",
        AttrType::I64s => "std::vector<int64_t>",
        AttrType::F32s => "std::vector<float>",
    }
}

/// The C++ literal of an f32 (`1e-6f`), of the NaN or infinity through `std::numeric_limits`.
fn float_literal(v: f32) -> String {
    floating_literal(f64::from(v), "float", || format!("{v:?}f"))
}

/// The C++ literal of an f64 (`1e-6`), of the NaN or infinity through `std::numeric_limits`.
fn double_literal(v: f64) -> String {
    floating_literal(v, "double", || format!("{v:?}"))
}

/// `finite()` for a finite `v`; else NaN or the infinity of C++ type `ty` (`float`, `double`)
/// through `std::numeric_limits`. An f32 widened to f64 keeps its class and sign.
fn floating_literal(v: f64, ty: &str, finite: impl FnOnce() -> String) -> String {
    if v.is_finite() {
        finite()
    } else if v.is_nan() {
        format!("std::numeric_limits<{ty}>::quiet_NaN()")
    } else if v > 0.0 {
        format!("std::numeric_limits<{ty}>::infinity()")
    } else {
        format!("-std::numeric_limits<{ty}>::infinity()")
    }
}

/// `values`, each spelt by `item`, separated by `, `.
fn comma_list<T>(values: &[T], item: impl Fn(&T) -> String) -> String {
    values.iter().map(item).collect::<Vec<_>>().join(", ")
}

fn string_literal(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\x{:02x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// The C++ literal of a param value, in the type [`cpp_type`] holds it.
pub(super) fn literal(value: &AttrValue) -> String {
    match value {
        AttrValue::F32(v) => float_literal(*v),
        AttrValue::F64(v) => double_literal(*v),
        AttrValue::I32(v) => format!("{v}"),
        AttrValue::I64(v) => format!("INT64_C({v})"),
        AttrValue::Bool(v) => format!("{v}"),
        AttrValue::String(v) => format!("std::string({})", string_literal(v)),
        AttrValue::I64s(v) => format!(
            "std::vector<int64_t>{{{}}}",
            comma_list(v, |x| format!("INT64_C({x})"))
        ),
        AttrValue::F32s(v) => format!(
            "std::vector<float>{{{}}}",
            comma_list(v, |x| float_literal(*x))
        ),
    }
}

/// The value as the graph engine's attribute holds it (for OpDef and REG_OP defaults).
fn ge_literal(value: &AttrValue) -> String {
    match value {
        AttrValue::F64(v) => string_literal(&format!("{v:?}")),
        AttrValue::String(v) => string_literal(v),
        AttrValue::I32(v) => format!("{v}"),
        AttrValue::I64(v) => format!("{v}"),
        AttrValue::I64s(v) => format!("{{{}}}", comma_list(v, ToString::to_string)),
        AttrValue::F32s(v) => format!("{{{}}}", comma_list(v, |x| float_literal(*x))),
        AttrValue::F32(_) | AttrValue::Bool(_) => literal(value),
    }
}

/// A C++ identifier from a param name (they are Rust identifiers already, but may be C++
/// keywords).
fn ident(name: &str) -> String {
    format!("{name}_")
}

impl OpSources<'_> {
    fn header_comment(&self, what: &str) -> String {
        format!(
            "// {what}\n// Generated by pto-op {} from op `{}` (version {}, fingerprint {}) for {} \
             ({}).\n// Do not edit: re-run `pto package`.\n",
            env!("CARGO_PKG_VERSION"),
            self.def.name,
            self.def.version,
            self.def.fingerprint(),
            self.soc.profile_name(),
            self.soc.arch(),
        )
    }

    fn namespace(&self) -> String {
        format!("pto_package::{}", self.stem)
    }

    /// The dtype columns of the OpDef: one per distinct combination of the instances'
    /// input and output dtypes.
    pub(super) fn dtype_columns(&self) -> Vec<Vec<DType>> {
        let mut columns: Vec<Vec<DType>> = Vec::new();
        for instance in self.instances {
            let column: Vec<DType> = instance
                .inputs
                .iter()
                .chain(&instance.outputs)
                .map(|t| t.dtype)
                .collect();
            if !columns.contains(&column) {
                columns.push(column);
            }
        }
        columns
    }

    /// Writes the op's schema as the graph engine declares it, one line per input, output and
    /// param, in that order (the order OpDef and REG_OP both take): `tensor(kind, name,
    /// dtypes)` for a tensor (`kind` is `Input` or `Output`, `dtypes` its graph-engine dtype
    /// in each dtype column), `attr(name, type, default)` for a param (its graph-engine type,
    /// and its default as the graph engine's attribute holds it, if it has one).
    fn write_schema(
        &self,
        out: &mut String,
        tensor: impl Fn(&str, &str, bool, &[&'static str]) -> String,
        attr: impl Fn(&str, &str, Option<String>) -> String,
    ) {
        let columns = self.dtype_columns();
        let inputs = (self.def.inputs.iter().enumerate())
            .map(|(i, name)| ("Input", name, self.def.is_optional_input(i)));
        let outputs = self.def.outputs.iter().map(|name| ("Output", name, false));
        for (slot, (kind, name, optional)) in inputs.chain(outputs).enumerate() {
            let dtypes: Vec<&'static str> =
                columns.iter().map(|c| dtype_name(c[slot]).ge).collect();
            let _ = writeln!(out, "{}", tensor(kind, name, optional, &dtypes));
        }
        for p in self.def.params {
            let default = p.default.map(|default| ge_literal(&default()));
            let _ = writeln!(out, "{}", attr(p.name, attr_type_name(p.ty).ge, default));
        }
    }

    /// `op_host/<stem>_infer.h` of this op.
    pub(super) fn infer_header(&self) -> String {
        infer_header(self.def, self.stem)
    }

    /// The C++ that reads the params from `gert::RuntimeAttrs* attrs` into `params`, in the
    /// OpDef's attribute order; on a missing one it logs and returns `failure`.
    fn read_params(&self, failure: &str) -> String {
        let mut out = String::new();
        let _ = writeln!(out, "    {}::Params params;", self.namespace());
        if self.def.params.is_empty() {
            return out;
        }
        let _ = writeln!(
            out,
            "    const gert::RuntimeAttrs *attrs = context->GetAttrs();\n    if (attrs == nullptr) {{\n        \
             std::fprintf(stderr, \"{}: no attributes\\n\");\n        return {failure};\n    }}",
            self.op_type
        );
        for (index, p) in self.def.params.iter().enumerate() {
            let field = format!("params.{}", ident(p.name));
            let missing = format!(
                "{{\n        std::fprintf(stderr, \"{}: attribute `{}` is missing\\n\");\n        return {failure};\n    }}",
                self.op_type, p.name
            );
            let n = ident(p.name);
            let list = format!("{field}.assign({n}->GetData(), {n}->GetData() + {n}->GetSize());");
            // The pointee the getter returns, the getter, and the assignment to the field.
            let (pointee, getter, set) = match p.ty {
                AttrType::F32 => ("float", "GetAttrPointer<float>", format!("{field} = *{n};")),
                AttrType::Bool => ("bool", "GetAttrPointer<bool>", format!("{field} = *{n};")),
                AttrType::I32 | AttrType::I64 => (
                    "int64_t",
                    "GetAttrPointer<int64_t>",
                    format!("{field} = static_cast<{}>(*{n});", cpp_type(p.ty)),
                ),
                AttrType::String => ("char", "GetStr", format!("{field} = {n};")),
                AttrType::F64 => (
                    "char",
                    "GetStr",
                    format!("{field} = std::strtod({n}, nullptr);"),
                ),
                AttrType::I64s => ("gert::TypedContinuousVector<int64_t>", "GetListInt", list),
                AttrType::F32s => ("gert::TypedContinuousVector<float>", "GetListFloat", list),
            };
            let _ = writeln!(
                out,
                "    const {pointee} *{n} = attrs->{getter}({index});\n    if ({n} == nullptr) {missing}\n    {set}"
            );
        }
        out
    }

    /// Writes one of op_host's inference hooks, `static graphStatus <hook><OpType>(gert::
    /// <hook>Context *context)` under its comment `doc`: it reads the params, converts each
    /// input `i` into `inputs[i]` of C type `value` (`read_input`), calls `call` of
    /// `<stem>_infer.h` (the op's own rules, through the C ABI), and hands each output `o`
    /// back to the graph engine (`write_output`).
    #[allow(clippy::too_many_arguments)]
    fn write_infer_hook(
        &self,
        out: &mut String,
        doc: &str,
        hook: &str,
        value: &str,
        read_input: &str,
        call: &str,
        write_output: &str,
    ) {
        let (ns, op_type) = (self.namespace(), self.op_type);
        let _ = writeln!(
            out,
            "{doc}\nstatic graphStatus {hook}{op_type}(gert::{hook}Context *context)\n{{"
        );
        out.push_str(&self.read_params("GRAPH_FAILED"));
        let _ = writeln!(
            out,
            "    {value} inputs[{ns}::kNumInputs];\n    for (size_t i = 0; i < {ns}::kNumInputs; ++i) {{\n\
             {read_input}    }}\n    \
             {value} outputs[{ns}::kNumOutputs];\n    std::string error;\n    \
             if ({ns}::{call}(inputs, params, outputs, &error) != PTO_OK) {{\n        \
             std::fprintf(stderr, \"%s\\n\", error.c_str());\n        return GRAPH_FAILED;\n    }}\n    \
             for (size_t o = 0; o < {ns}::kNumOutputs; ++o) {{\n\
             {write_output}    }}\n    return GRAPH_SUCCESS;\n}}\n"
        );
    }

    /// `op_host/<stem>.cpp`: OpDef, InferShape/InferDataType (the C ABI) and TilingFunc
    /// (the instances' tiling values). NOT VERIFIED against a toolkit (none here).
    pub(super) fn op_host(&self) -> String {
        let ns = self.namespace();
        let op_type = self.op_type;
        let mut out = self.header_comment(&format!(
            "op_host of {op_type}: OpDef, InferShape/InferDataType and TilingFunc."
        ));
        out.push_str(
            "// NOT VERIFIED on a CANN toolkit: the graph-engine calls follow the CANN 9.0 op_host \
             API as documented.\n\n",
        );
        out.push_str("#include <cstdint>\n#include <cstdio>\n#include <cstdlib>\n#include <limits>\n#include <string>\n#include <vector>\n\n");
        out.push_str("#include \"pto_op_host.h\"\n");
        let _ = writeln!(out, "#include \"{}_infer.h\"", self.stem);
        let _ = writeln!(out, "#include \"{}_tiling.h\"\n", self.stem);

        // InferShape / InferDataType.
        out.push_str("namespace ge {\n\n");
        self.write_infer_hook(
            &mut out,
            "// The output shapes by the op's own #[infer_shape], through the C ABI library.",
            "InferShape",
            "PtoShape",
            &format!(
                "        const gert::Shape *shape = context->GetInputShape(i);\n        \
                 if (shape == nullptr || !pto_package::ToPtoShape(*shape, &inputs[i])) {{\n            \
                 std::fprintf(stderr, \"{op_type}: input %zu has no shape of rank <= %d (a left-out optional input is not packaged: give it)\\n\", i, PTO_MAX_RANK);\n            \
                 return GRAPH_FAILED;\n        }}\n"
            ),
            "InferShapes",
            "        gert::Shape *shape = context->GetOutputShape(o);\n        \
             if (shape == nullptr) {\n            return GRAPH_FAILED;\n        }\n        \
             pto_package::FromPtoShape(outputs[o], shape);\n",
        );
        self.write_infer_hook(
            &mut out,
            "// The output dtypes by the op's own #[infer_dtype], through the C ABI library.",
            "InferDataType",
            "int32_t",
            "        inputs[i] = pto_package::OnnxCode(context->GetInputDataType(i));\n",
            "InferDtypes",
            "        context->SetOutputDataType(o, pto_package::GeDataType(outputs[o]));\n",
        );
        out.push_str("}  // namespace ge\n\n");

        // TilingFunc.
        out.push_str("namespace optiling {\n\n");
        let _ = writeln!(
            out,
            "// The tiling of the instance the model uses at these input shapes and params (the \
             kernel is\n// specialised per instance by its tiling values).\n\
             static ge::graphStatus TilingFunc{op_type}(gert::TilingContext *context)\n{{"
        );
        out.push_str(&self.read_params("ge::GRAPH_FAILED"));
        let _ = writeln!(
            out,
            "    const gert::StorageShape *shapes[{ns}::kNumInputs];\n    for (size_t i = 0; i < {ns}::kNumInputs; ++i) {{\n        \
             shapes[i] = context->GetInputShape(i);\n        if (shapes[i] == nullptr) {{\n            \
             return ge::GRAPH_FAILED;\n        }}\n    }}"
        );
        let tiling_struct = &self.kernel.tiling_struct;
        for (index, (instance, tiling)) in self.instances.iter().zip(self.tilings).enumerate() {
            let mut conditions: Vec<String> = Vec::new();
            for (i, input) in instance.inputs.iter().enumerate() {
                let dims = input.shape.dims();
                let name = format!("dims{index}_{i}");
                let _ = writeln!(
                    out,
                    "    static const int64_t {name}[] = {{{}}};",
                    if dims.is_empty() {
                        "0".to_owned()
                    } else {
                        comma_list(dims, ToString::to_string)
                    }
                );
                conditions.push(format!(
                    "pto_package::SameDims(shapes[{i}]->GetOriginShape(), {name}, {})",
                    dims.len()
                ));
            }
            for (name, value) in &instance.attrs {
                conditions.push(format!("params.{} == {}", ident(name), literal(value)));
            }
            let _ = writeln!(
                out,
                "    // Instance {index}: inputs {}.\n    if ({}) {{",
                instance.inputs_text(),
                conditions.join("\n        && ")
            );
            if self.soc == Soc::Ascend910B {
                // The standard-C++ tiling struct of the current template: filled in place
                // through GetTilingData<T>() (asc-devkit docs/zh/guide/编程指南/高级编程/
                // Aclnn算子工程化开发/Host侧Tiling实现/使用标准CPP语法定义Tiling结构体.md).
                let _ = writeln!(
                    out,
                    "        {tiling_struct} *tiling = context->GetTilingData<{tiling_struct}>();\n        \
                     if (tiling == nullptr) {{\n            \
                     std::fprintf(stderr, \"{op_type}: no room for the tiling struct\\n\");\n            \
                     return ge::GRAPH_FAILED;\n        }}\n        *tiling = {tiling_struct}{{}};"
                );
                for (field, value) in &tiling.fields {
                    let _ = writeln!(out, "        tiling->{field} = {value}u;");
                }
                let _ = writeln!(
                    out,
                    "        return pto_package::SetLaunch(context, {}u, {}u);\n    }}",
                    tiling.block_dim, tiling.workspace_bytes
                );
            } else {
                let _ = writeln!(out, "        {tiling_struct} tiling{{}};");
                for (field, value) in &tiling.fields {
                    let _ = writeln!(out, "        tiling.{field} = {value}u;");
                }
                let _ = writeln!(
                    out,
                    "        return pto_package::SaveTiling(context, tiling, {}u, {}u, \"{op_type}\");\n    }}",
                    tiling.block_dim, tiling.workspace_bytes
                );
            }
        }
        let known = self
            .instances
            .iter()
            .map(Instance::inputs_text)
            .collect::<Vec<_>>()
            .join("; ");
        let _ = writeln!(
            out,
            "    std::fprintf(stderr, \"{op_type}: no packaged instance for these input shapes and \
             params (packaged: {known}); re-run `pto package` with this model\\n\");\n    \
             return ge::GRAPH_FAILED;\n}}\n\n}}  // namespace optiling\n"
        );

        // OpDef.
        out.push_str("namespace ops {\n\n");
        let formats = vec!["ge::FORMAT_ND"; self.dtype_columns().len()].join(", ");
        let _ = writeln!(
            out,
            "class {op_type} : public OpDef {{\npublic:\n    explicit {op_type}(const char *name) : OpDef(name)\n    {{"
        );
        self.write_schema(
            &mut out,
            |kind, name, optional, dtypes| {
                let dtypes: Vec<String> = dtypes.iter().map(|d| format!("ge::{d}")).collect();
                let param_type = if optional { "OPTIONAL" } else { "REQUIRED" };
                format!(
                    "        this->{kind}(\"{name}\").ParamType({param_type}).DataType({{{}}}).Format({{{formats}}});",
                    dtypes.join(", ")
                )
            },
            |name, ty, default| match default {
                Some(default) => {
                    format!("        this->Attr(\"{name}\").AttrType(OPTIONAL).{ty}({default});")
                }
                None => format!("        this->Attr(\"{name}\").AttrType(REQUIRED).{ty}();"),
            },
        );
        let _ = writeln!(
            out,
            "        this->SetInferShape(ge::InferShape{op_type}).SetInferDataType(ge::InferDataType{op_type});\n        \
             this->AICore().SetTiling(optiling::TilingFunc{op_type});\n        \
             this->AICore().AddConfig(\"{}\");\n    }}\n}};\n\nOP_ADD({op_type});\n\n}}  // namespace ops",
            self.soc.profile_name()
        );
        out
    }

    /// `op_graph/<stem>_proto.h`: the graph engine's IR prototype. NOT VERIFIED against a
    /// toolkit.
    pub(super) fn graph_proto(&self) -> String {
        let op_type = self.op_type;
        let guard = format!("PTO_{}_PROTO_H", self.stem.to_ascii_uppercase());
        let mut out = self.header_comment(&format!("The graph-engine prototype of {op_type}."));
        let _ = writeln!(
            out,
            "// NOT VERIFIED on a CANN toolkit.\n#ifndef {guard}\n#define {guard}\n\n#include \"graph/operator_reg.h\"\n\nnamespace ge {{\n\nREG_OP({op_type})"
        );
        self.write_schema(
            &mut out,
            |kind, name, optional, dtypes| {
                let mut distinct: Vec<&str> = Vec::new();
                for &dtype in dtypes {
                    if !distinct.contains(&dtype) {
                        distinct.push(dtype);
                    }
                }
                let prefix = if optional { "OPTIONAL_" } else { "" };
                format!(
                    "    .{prefix}{}({name}, TensorType({{{}}}))",
                    kind.to_ascii_uppercase(),
                    distinct.join(", ")
                )
            },
            |name, ty, default| match default {
                Some(default) => format!("    .ATTR({name}, {ty}, {default})"),
                None => format!("    .REQUIRED_ATTR({name}, {ty})"),
            },
        );
        let _ = writeln!(
            out,
            "    .OP_END_FACTORY_REG({op_type})\n\n}}  // namespace ge\n\n#endif  // {guard}"
        );
        out
    }

    /// `framework/onnx_plugin/<stem>_plugin.cc`: maps the ONNX node pto-op's export writes
    /// (`<domain>::<opset>::<op_type>`) to the op, its typed attributes to the op's. NOT
    /// VERIFIED against a toolkit.
    pub(super) fn onnx_plugin(&self) -> String {
        let op_type = self.op_type;
        let mut out = self.header_comment(&format!(
            "The ONNX parser plug-in of {op_type}: node `{}` of pto-op's ONNX export.",
            self.origin_op_type
        ));
        let _ = writeln!(
            out,
            "// NOT VERIFIED on a CANN toolkit.\n#include <cstdint>\n#include <cstdio>\n#include <string>\n#include <vector>\n\n\
             #include \"pto_onnx_attrs.h\"\n\nnamespace domi {{\n\n\
             static Status ParseParams{op_type}(const ge::Operator &op_src, ge::Operator &op_dest)\n{{"
        );
        if self.def.params.is_empty() {
            out.push_str("    (void)op_src;\n    (void)op_dest;\n");
        } else {
            let _ = writeln!(
                out,
                "    pto_onnx::Attributes attrs;\n    if (!attrs.Read(op_src, \"{op_type}\")) {{\n        return FAILED;\n    }}"
            );
        }
        for p in self.def.params {
            let name = p.name;
            let var = ident(name);
            let (decl, read, set) = match p.ty {
                AttrType::F32 => (
                    "float",
                    "Float",
                    format!("op_dest.SetAttr(\"{name}\", {var});"),
                ),
                AttrType::Bool => (
                    "bool",
                    "Bool",
                    format!("op_dest.SetAttr(\"{name}\", {var});"),
                ),
                AttrType::I32 | AttrType::I64 => (
                    "int64_t",
                    "Int",
                    format!("op_dest.SetAttr(\"{name}\", {var});"),
                ),
                AttrType::String => (
                    "std::string",
                    "String",
                    format!("op_dest.SetAttr(\"{name}\", ge::AscendString({var}.c_str()));"),
                ),
                AttrType::F64 => (
                    "double",
                    "Double",
                    format!(
                        "char {var}text[40];\n    std::snprintf({var}text, sizeof {var}text, \"%.17g\", {var});\n    \
                         op_dest.SetAttr(\"{name}\", ge::AscendString({var}text));"
                    ),
                ),
                AttrType::I64s => (
                    "std::vector<int64_t>",
                    "Ints",
                    format!("op_dest.SetAttr(\"{name}\", {var});"),
                ),
                AttrType::F32s => (
                    "std::vector<float>",
                    "Floats",
                    format!("op_dest.SetAttr(\"{name}\", {var});"),
                ),
            };
            let _ = writeln!(
                out,
                "    {decl} {var}{{}};\n    if (!attrs.{read}(\"{name}\", &{var})) {{\n        return FAILED;\n    }}\n    {set}"
            );
        }
        let _ = writeln!(
            out,
            "    return SUCCESS;\n}}\n\nREGISTER_CUSTOM_OP(\"{op_type}\")\n    .FrameworkType(ONNX)\n    \
             .OriginOpType(\"{}\")\n    .ParseParamsByOperatorFn(ParseParams{op_type});\n\n}}  // namespace domi",
            self.origin_op_type
        );
        out
    }
}

/// `op_host/<stem>_infer.h`: the op's params and its two inference calls through the C
/// ABI. No CANN header: the host test compiles it.
pub(super) fn infer_header(def: &OpDef, stem: &str) -> String {
    let guard = format!("PTO_{}_INFER_H", stem.to_ascii_uppercase());
    let mut out = format!(
        "// The shape and dtype inference of op `{}`: its own Rust rules, through \
         the C ABI library.\n// Generated by pto-op {} (op version {}, fingerprint {}). Do not \
         edit: re-run `pto package`.\n",
        def.name,
        env!("CARGO_PKG_VERSION"),
        def.version,
        def.fingerprint()
    );
    let _ = writeln!(out, "#ifndef {guard}\n#define {guard}\n");
    out.push_str("#include <cstdint>\n#include <string>\n#include <vector>\n\n");
    out.push_str("#include \"pto_infer_common.h\"\n\n");
    let _ = writeln!(out, "namespace pto_package {{\nnamespace {} {{\n", stem);
    let _ = writeln!(
        out,
        "constexpr const char *kOp = {};",
        string_literal(def.name)
    );
    let _ = writeln!(out, "constexpr size_t kNumInputs = {};", def.inputs.len());
    let _ = writeln!(
        out,
        "constexpr size_t kNumOutputs = {};\n",
        def.outputs.len()
    );
    out.push_str("// The op's params, defaults as declared.\nstruct Params {\n");
    for p in def.params {
        let init = p
            .default
            .map_or_else(String::new, |d| format!(" = {}", literal(&d())));
        let _ = writeln!(out, "    {} {}{init};", cpp_type(p.ty), ident(p.name));
    }
    out.push_str("};\n\n");
    out.push_str("// The params as the C ABI's attributes JSON.\n");
    out.push_str("inline std::string ParamsJson(const Params &params)\n{\n");
    let _ = writeln!(
        out,
        "    {}pto_package::AttrsJson json;",
        if def.params.is_empty() { "const " } else { "" }
    );
    if def.params.is_empty() {
        out.push_str("    (void)params;\n");
    }
    for p in def.params {
        let method = match p.ty {
            AttrType::F32 => "F32",
            AttrType::F64 => "F64",
            AttrType::I32 => "I32",
            AttrType::I64 => "I64",
            AttrType::Bool => "Bool",
            AttrType::String => "String",
            AttrType::I64s => "I64s",
            AttrType::F32s => "F32s",
        };
        let _ = writeln!(
            out,
            "    json.{method}({}, params.{});",
            string_literal(p.name),
            ident(p.name)
        );
    }
    out.push_str("    return json.Text();\n}\n\n");
    out.push_str(
        "// InferShape's call: output shapes of the input shapes; PTO_OK or a status with \
         *error set.\n",
    );
    out.push_str(
        "inline int32_t InferShapes(const PtoShape (&inputs)[kNumInputs], const Params &params,\n\
         \x20                          PtoShape (&outputs)[kNumOutputs], std::string *error)\n{\n\
         \x20   return pto_package::InferShapes(kOp, inputs, kNumInputs, ParamsJson(params), outputs,\n\
         \x20                                   kNumOutputs, error);\n}\n\n",
    );
    out.push_str("// InferDataType's call: output dtypes (ONNX codes) of the input dtypes.\n");
    out.push_str(
        "inline int32_t InferDtypes(const int32_t (&inputs)[kNumInputs], const Params &params,\n\
         \x20                          int32_t (&outputs)[kNumOutputs], std::string *error)\n{\n\
         \x20   return pto_package::InferDtypes(kOp, inputs, kNumInputs, ParamsJson(params), outputs,\n\
         \x20                                   kNumOutputs, error);\n}\n\n",
    );
    let _ = writeln!(
        out,
        "}}  // namespace {}\n}}  // namespace pto_package\n",
        stem
    );
    let _ = writeln!(out, "#endif  // {guard}");
    out
}

// Stand-in for CANN's graph/operator_reg.h: the REG_OP chain a pto-op package's prototypes
// write, as plain calls (see ../README.md). For -fsyntax-only checks of generated code.
#ifndef PTO_STUB_OPERATOR_REG_H
#define PTO_STUB_OPERATOR_REG_H

#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

#include "register/op_def_registry.h"

namespace ge {
struct TensorType {
    TensorType(std::initializer_list<DataType> types);
};
struct OpReg {
    explicit OpReg(const char *type);
    OpReg &Input(const char *name, const TensorType &types);
    OpReg &Output(const char *name, const TensorType &types);
    OpReg &Attr_Float(const char *name, float value);
    OpReg &Attr_Int(const char *name, int64_t value);
    OpReg &Attr_Bool(const char *name, bool value);
    OpReg &Attr_String(const char *name, const char *value);
    OpReg &Attr_ListInt(const char *name, std::vector<int64_t> value);
    OpReg &Attr_ListFloat(const char *name, std::vector<float> value);
    OpReg &RequiredAttr(const char *name, const char *type);
    int End(const char *type);
};
}  // namespace ge

#define REG_OP(type) static int g_pto_stub_reg_##type = ::ge::OpReg(#type)
#define INPUT(name, types) Input(#name, types)
#define OUTPUT(name, types) Output(#name, types)
#define ATTR(name, type, ...) Attr_##type(#name, __VA_ARGS__)
#define REQUIRED_ATTR(name, type) RequiredAttr(#name, #type)
// The real macro ends the statement: prototypes write no `;` after it.
#define OP_END_FACTORY_REG(type) End(#type);

#endif

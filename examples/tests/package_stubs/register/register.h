// Stand-in for CANN's register/register.h: the ONNX plug-in registration names a pto-op
// package uses, declarations only (see ../README.md). For -fsyntax-only checks.
#ifndef PTO_STUB_REGISTER_H
#define PTO_STUB_REGISTER_H

#include <cstdint>
#include <vector>

#include "register/op_def_registry.h"

namespace ge {
class AscendString {
public:
    AscendString();
    explicit AscendString(const char *text);
    const char *GetString() const;
};
class Operator {
public:
    graphStatus GetAttr(const char *name, AscendString &value) const;
    Operator &SetAttr(const char *name, float value);
    Operator &SetAttr(const char *name, bool value);
    Operator &SetAttr(const char *name, int64_t value);
    Operator &SetAttr(const char *name, const AscendString &value);
    Operator &SetAttr(const char *name, const std::vector<int64_t> &value);
    Operator &SetAttr(const char *name, const std::vector<float> &value);
};
}  // namespace ge

namespace domi {
using Status = uint32_t;
constexpr Status SUCCESS = 0;
constexpr Status FAILED = 1;
enum FrameworkType { ONNX };
using ParseParamByOpFunc = Status (*)(const ge::Operator &, ge::Operator &);
class OpRegistrationData {
public:
    explicit OpRegistrationData(const char *op_type);
    OpRegistrationData &FrameworkType(domi::FrameworkType type);
    OpRegistrationData &OriginOpType(const char *type);
    OpRegistrationData &ParseParamsByOperatorFn(ParseParamByOpFunc fn);
};
}  // namespace domi

#define REGISTER_CUSTOM_OP(name) \
    static ::domi::OpRegistrationData g_pto_stub_registration = ::domi::OpRegistrationData(name)

#endif

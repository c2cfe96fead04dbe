// Shared by the op_host inference headers of a pto-op package: the attributes JSON the C ABI
// of the C ABI library takes, and the calls of pto_infer_shapes / pto_infer_dtypes with their
// error messages. Plain C++17 and pto_capi.h: no CANN header, so a host test compiles it.
#ifndef PTO_INFER_COMMON_H
#define PTO_INFER_COMMON_H

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "pto_capi.h"

namespace pto_package {

// A JSON object of typed params, in the serde form pto_infer reads:
// {"eps":{"f32":1e-06},"causal":{"bool":true}}.
class AttrsJson {
public:
    void F32(const char *name, float value) { Typed(name, "f32", Number(value, 9)); }
    void F64(const char *name, double value) { Typed(name, "f64", Number(value, 17)); }
    void I32(const char *name, int32_t value) { Typed(name, "i32", std::to_string(value)); }
    void I64(const char *name, int64_t value) { Typed(name, "i64", std::to_string(value)); }
    void Bool(const char *name, bool value) { Typed(name, "bool", value ? "true" : "false"); }
    void String(const char *name, const std::string &value) { Typed(name, "string", Quoted(value)); }
    void I64s(const char *name, const std::vector<int64_t> &values)
    {
        std::string list = "[";
        for (size_t i = 0; i < values.size(); ++i) {
            list += (i == 0 ? "" : ",") + std::to_string(values[i]);
        }
        Typed(name, "i64s", list + "]");
    }
    void F32s(const char *name, const std::vector<float> &values)
    {
        std::string list = "[";
        for (size_t i = 0; i < values.size(); ++i) {
            list += (i == 0 ? "" : ",") + Number(values[i], 9);
        }
        Typed(name, "f32s", list + "]");
    }
    std::string Text() const { return text_ + "}"; }

private:
    // Shortest digits that read back to the same value (9 for float, 17 for double).
    static std::string Number(double value, int digits)
    {
        char buffer[40];
        std::snprintf(buffer, sizeof buffer, "%.*g", digits, value);
        return buffer;
    }
    static std::string Quoted(const std::string &value)
    {
        std::string out = "\"";
        for (char c : value) {
            if (c == '"' || c == '\\') {
                out += '\\';
                out += c;
            } else if (static_cast<unsigned char>(c) < 0x20) {
                char escaped[8];
                std::snprintf(escaped, sizeof escaped, "\\u%04x", static_cast<unsigned>(c));
                out += escaped;
            } else {
                out += c;
            }
        }
        return out + "\"";
    }
    void Typed(const char *name, const char *tag, const std::string &value)
    {
        text_ += (first_ ? "" : ",") + Quoted(name) + ":{\"" + tag + "\":" + value + "}";
        first_ = false;
    }
    std::string text_ = "{";
    bool first_ = true;
};

// Checks a call's status and output count; on failure writes the message to *error.
inline int32_t Checked(int32_t status, const char *message, const char *op, size_t count,
                       size_t expected, std::string *error)
{
    if (status == PTO_OK && count != expected) {
        char text[256];
        std::snprintf(text, sizeof text,
                      "op `%s`: the C ABI library inferred %zu outputs, the package has %zu; the "
                      "library and the package come from different builds",
                      op, count, expected);
        if (error != nullptr) {
            *error = text;
        }
        return PTO_OUTPUT_CAPACITY;
    }
    if (status != PTO_OK && error != nullptr) {
        *error = message;
    }
    return status;
}

// The op's output shapes by its own Rust rules.
inline int32_t InferShapes(const char *op, const PtoShape *inputs, size_t num_inputs,
                           const std::string &attrs, PtoShape *outputs, size_t num_outputs,
                           std::string *error)
{
    char message[1024] = {0};
    size_t count = 0;
    int32_t status = pto_infer_shapes(op, inputs, num_inputs, attrs.c_str(), outputs,
                                      num_outputs, &count, message, sizeof message);
    return Checked(status, message, op, count, num_outputs, error);
}

// The op's output dtypes (ONNX codes) by its own Rust rules.
inline int32_t InferDtypes(const char *op, const int32_t *inputs, size_t num_inputs,
                           const std::string &attrs, int32_t *outputs, size_t num_outputs,
                           std::string *error)
{
    char message[1024] = {0};
    size_t count = 0;
    int32_t status = pto_infer_dtypes(op, inputs, num_inputs, attrs.c_str(), outputs,
                                      num_outputs, &count, message, sizeof message);
    return Checked(status, message, op, count, num_outputs, error);
}

}  // namespace pto_package

#endif  // PTO_INFER_COMMON_H

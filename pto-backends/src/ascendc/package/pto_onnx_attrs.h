// Shared by the ONNX parser plug-ins of a pto-op package: the typed attributes pto-op's ONNX
// export writes (FLOAT, INT, STRING, INTS, FLOATS; an f64 param as a TENSOR holding one
// DOUBLE; a bool as INT 0/1), read from the JSON the graph engine hands a plug-in in the
// `attribute` string attr.
// NOT VERIFIED: the JSON's exact spelling (numbers as strings or not, bytes as base64) was
// not seen on a toolkit; the readers accept both the numeric and the string form of numbers,
// and take `s` and `raw_data` as base64 as protobuf's JSON mapping writes bytes.
#ifndef PTO_ONNX_ATTRS_H
#define PTO_ONNX_ATTRS_H

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

// nlohmann/json 3.11.3, fetched into this folder by framework/CMakeLists.txt.
#include "json.hpp"
#include "register/register.h"

namespace pto_onnx {

inline std::string Base64Decode(const std::string &text)
{
    static const std::string alphabet =
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    std::string out;
    uint32_t bits = 0;
    int count = 0;
    for (char c : text) {
        const size_t value = alphabet.find(c);
        if (value == std::string::npos) {
            continue;  // '=' padding, and '-'/'_' of the URL alphabet are not written
        }
        bits = (bits << 6) | static_cast<uint32_t>(value);
        count += 6;
        if (count >= 8) {
            count -= 8;
            out += static_cast<char>((bits >> count) & 0xFF);
        }
    }
    return out;
}

inline double Number(const nlohmann::json &value)
{
    return value.is_string() ? std::stod(value.get<std::string>()) : value.get<double>();
}

inline int64_t Integer(const nlohmann::json &value)
{
    return value.is_string() ? std::stoll(value.get<std::string>()) : value.get<int64_t>();
}

// The node's attributes by name.
class Attributes {
public:
    // Reads the `attribute` JSON of `op_src`; false (with a message naming the op) if absent
    // or malformed.
    bool Read(const ge::Operator &op_src, const char *op_type)
    {
        op_type_ = op_type;
        ge::AscendString text;
        if (op_src.GetAttr("attribute", text) != ge::GRAPH_SUCCESS) {
            std::fprintf(stderr, "%s: the ONNX node carries no attributes\n", op_type);
            return false;
        }
        json_ = nlohmann::json::parse(text.GetString(), nullptr, false);
        if (json_.is_discarded() || !json_.contains("attribute")) {
            std::fprintf(stderr, "%s: the ONNX attributes do not parse\n", op_type);
            return false;
        }
        return true;
    }

    bool Float(const char *name, float *out) const
    {
        const nlohmann::json *attr = Find(name, "f");
        return attr != nullptr && Set(out, static_cast<float>(Number(attr->at("f"))));
    }
    bool Int(const char *name, int64_t *out) const
    {
        const nlohmann::json *attr = Find(name, "i");
        return attr != nullptr && Set(out, Integer(attr->at("i")));
    }
    bool Bool(const char *name, bool *out) const
    {
        int64_t value = 0;
        return Int(name, &value) && Set(out, value != 0);
    }
    bool String(const char *name, std::string *out) const
    {
        const nlohmann::json *attr = Find(name, "s");
        return attr != nullptr && Set(out, Base64Decode(attr->at("s").get<std::string>()));
    }
    // An f64 param: a TENSOR attribute of one little-endian DOUBLE.
    bool Double(const char *name, double *out) const
    {
        const nlohmann::json *attr = Find(name, "t");
        if (attr == nullptr || !attr->at("t").contains("raw_data")) {
            return Missing(name, "t.raw_data");
        }
        const std::string bytes = Base64Decode(attr->at("t").at("raw_data").get<std::string>());
        if (bytes.size() != sizeof(double)) {
            return Missing(name, "8 bytes of raw_data");
        }
        std::memcpy(out, bytes.data(), sizeof(double));
        return true;
    }
    bool Ints(const char *name, std::vector<int64_t> *out) const
    {
        const nlohmann::json *attr = Find(name, "ints");
        if (attr == nullptr) {
            return false;
        }
        out->clear();
        for (const auto &v : attr->at("ints")) {
            out->push_back(Integer(v));
        }
        return true;
    }
    bool Floats(const char *name, std::vector<float> *out) const
    {
        const nlohmann::json *attr = Find(name, "floats");
        if (attr == nullptr) {
            return false;
        }
        out->clear();
        for (const auto &v : attr->at("floats")) {
            out->push_back(static_cast<float>(Number(v)));
        }
        return true;
    }

private:
    template <typename T>
    static bool Set(T *out, T value)
    {
        *out = value;
        return true;
    }
    bool Missing(const char *name, const char *field) const
    {
        std::fprintf(stderr, "%s: attribute `%s` has no `%s` (pto-op's export writes every param)\n",
                     op_type_.c_str(), name, field);
        return false;
    }
    // The attribute `name` holding `field`, or null with a message.
    const nlohmann::json *Find(const char *name, const char *field) const
    {
        for (const auto &attr : json_.at("attribute")) {
            if (attr.value("name", "") == name) {
                if (!attr.contains(field)) {
                    Missing(name, field);
                    return nullptr;
                }
                return &attr;
            }
        }
        Missing(name, field);
        return nullptr;
    }

    std::string op_type_;
    nlohmann::json json_;
};

}  // namespace pto_onnx

#endif  // PTO_ONNX_ATTRS_H

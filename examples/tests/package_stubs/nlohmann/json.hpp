// Stand-in for nlohmann/json.hpp: declarations of the members a pto-op package's ONNX
// plug-in uses (see ../README.md). For -fsyntax-only checks of generated code.
#ifndef PTO_STUB_NLOHMANN_JSON_HPP
#define PTO_STUB_NLOHMANN_JSON_HPP

#include <cstdint>
#include <string>

namespace nlohmann {
class json {
public:
    using iterator = const json *;
    static json parse(const char *text, std::nullptr_t callback, bool allow_exceptions);
    bool is_discarded() const;
    bool is_string() const;
    bool contains(const char *key) const;
    const json &at(const char *key) const;
    std::string value(const char *key, const char *fallback) const;
    template <typename T>
    T get() const;
    iterator begin() const;
    iterator end() const;
};
}  // namespace nlohmann

#endif

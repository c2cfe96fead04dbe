// Host implementation of the Ascend C API: bitwise And, Or and Not on 16-bit UB tensors,
// which the lowering applies to bool tiles' bit masks (one bit per element).
#ifndef ASCENDC_HOST_LOGIC_H
#define ASCENDC_HOST_LOGIC_H

#include <type_traits>

#include "vector.h"

namespace AscendC {

namespace host {

template <typename T, typename F>
inline void Bitwise2(const char* api, const LocalTensor<T>& dst, const LocalTensor<T>& src0,
                     const LocalTensor<T>& src1, const int32_t count, F f)
{
    static_assert(std::is_same<T, int16_t>::value || std::is_same<T, uint16_t>::value,
                  "And and Or take int16_t and uint16_t");
    CheckVector(api, dst, count, "dst");
    CheckVector(api, src0, count, "src0");
    CheckVector(api, src1, count, "src1");
    for (int32_t i = 0; i < count; ++i) {
        dst.Data()[i] = static_cast<T>(f(src0.Data()[i], src1.Data()[i]));
    }
}

}  // namespace host

template <typename T>
inline void And(const LocalTensor<T>& dst, const LocalTensor<T>& src0, const LocalTensor<T>& src1,
                const int32_t& count)
{
    host::Bitwise2("And", dst, src0, src1, count, [](T a, T b) { return a & b; });
}

template <typename T>
inline void Or(const LocalTensor<T>& dst, const LocalTensor<T>& src0, const LocalTensor<T>& src1,
               const int32_t& count)
{
    host::Bitwise2("Or", dst, src0, src1, count, [](T a, T b) { return a | b; });
}

template <typename T>
inline void Not(const LocalTensor<T>& dst, const LocalTensor<T>& src, const int32_t& count)
{
    static_assert(std::is_same<T, int16_t>::value || std::is_same<T, uint16_t>::value,
                  "Not takes int16_t and uint16_t");
    host::CheckVector("Not", dst, count, "dst");
    host::CheckVector("Not", src, count, "src");
    for (int32_t i = 0; i < count; ++i) {
        dst.Data()[i] = static_cast<T>(~src.Data()[i]);
    }
}

}  // namespace AscendC

#endif  // ASCENDC_HOST_LOGIC_H

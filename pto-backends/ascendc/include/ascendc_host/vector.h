// Host implementation of the Ascend C API: vector instructions on UB tensors.
//
// Element-wise results are computed in float and rounded once to the destination type,
// round to nearest even; integers are computed exactly (int32 and int16 in int64, int64 in
// __int128), and a result outside the destination type, or an integer division by zero,
// stops the kernel with an `integer overflow` or `division by zero` error: the error the
// CPU reference raises, never a wrapped value.
#ifndef ASCENDC_HOST_VECTOR_H
#define ASCENDC_HOST_VECTOR_H

#include <algorithm>
#include <limits>

#include "tensor.h"

namespace AscendC {

struct UnaryRepeatParams {
    uint16_t dstBlkStride = 1;
    uint16_t srcBlkStride = 1;
    uint8_t dstRepStride = 8;
    uint8_t srcRepStride = 8;
};

struct BinaryRepeatParams {
    uint8_t dstBlkStride = 1;
    uint8_t src0BlkStride = 1;
    uint8_t src1BlkStride = 1;
    uint8_t dstRepStride = 8;
    uint8_t src0RepStride = 8;
    uint8_t src1RepStride = 8;
};

namespace host {

template <typename T>
struct Compute {
    using type = float;
};
template <>
struct Compute<int32_t> {
    using type = int64_t;
};
template <>
struct Compute<int16_t> {
    using type = int64_t;
};

template <>
struct Compute<int64_t> {
    using type = __int128;
};

template <typename T>
using Acc = typename Compute<T>::type;

// The decimal text of an integer (std::to_string has no __int128).
template <typename V>
inline std::string IntegerText(V v)
{
    if (v == 0) {
        return "0";
    }
    const bool negative = v < 0;
    std::string digits;
    while (v != 0) {
        const int d = static_cast<int>(v % 10);
        digits.push_back(static_cast<char>('0' + (d < 0 ? -d : d)));
        v /= 10;
    }
    if (negative) {
        digits.push_back('-');
    }
    return std::string(digits.rbegin(), digits.rend());
}

// `v` (computed in Acc<T>) stored as a T: an integer result must fit T.
template <typename T, typename V>
inline T Narrow(const char* api, V v)
{
    if constexpr (std::is_integral<T>::value && !std::is_floating_point<V>::value) {
        if (v < static_cast<V>(std::numeric_limits<T>::min()) || v > static_cast<V>(std::numeric_limits<T>::max())) {
            Fail(api, "integer overflow",
                 "the exact result " + IntegerText(v) + " is outside the element type's range " +
                     IntegerText(std::numeric_limits<T>::min()) + ".." + IntegerText(std::numeric_limits<T>::max()));
        }
    }
    return T(v);
}

// a / b: an integer division by zero is an error (and no trap).
template <typename V>
inline V Divide(V a, V b)
{
    if constexpr (!std::is_floating_point<V>::value) {
        if (b == 0) {
            Fail("Div", "division by zero", IntegerText(a) + " / 0");
        }
    }
    return a / b;
}

template <typename T>
inline void CheckVector(const char* api, const LocalTensor<T>& t, int64_t count, const char* which)
{
    if (BufferOf(t.GetPosition()) != Buffer::UB) {
        Fail(api, "position", std::string(which) + " is in " + PositionName(t.GetPosition()) + ", not in UB");
    }
    if (t.Address() % 32 != 0) {
        Fail(api, "32-byte alignment",
             std::string(which) + " UB address " + std::to_string(t.Address()) + " is not 32-byte aligned");
    }
    if (count < 0) {
        Fail(api, "count", "calCount " + std::to_string(count) + " is negative");
    }
    t.Check(api, 0, static_cast<uint64_t>(count));
    // A vector instruction (PIPE_V) reads its sources and writes "dst".
    if (count > 0) {
        Touch(api, PIPE_V, t, 0, static_cast<uint64_t>(count), which[0] == 'd');
    }
}


template <typename T, typename F>
inline void Map1(const char* api, const LocalTensor<T>& dst, const LocalTensor<T>& src, int32_t count, F f)
{
    CheckVector(api, dst, count, "dst");
    CheckVector(api, src, count, "src");
    for (int32_t i = 0; i < count; ++i) {
        dst.Data()[i] = Narrow<T>(api, f(static_cast<Acc<T>>(src.Data()[i])));
    }
}

template <typename T, typename F>
inline void Map2(const char* api, const LocalTensor<T>& dst, const LocalTensor<T>& a, const LocalTensor<T>& b,
                 int32_t count, F f)
{
    CheckVector(api, dst, count, "dst");
    CheckVector(api, a, count, "src0");
    CheckVector(api, b, count, "src1");
    for (int32_t i = 0; i < count; ++i) {
        dst.Data()[i] = Narrow<T>(api, f(static_cast<Acc<T>>(a.Data()[i]), static_cast<Acc<T>>(b.Data()[i])));
    }
}

// The repeat form: `repeatTimes` repeats of 256 bytes (8 blocks), the first `mask`
// elements of each (a count mask), at the given block and repeat strides.
template <typename T, typename R, typename F>
inline void Repeat2(const char* api, const LocalTensor<T>& dst, const LocalTensor<T>& a, const LocalTensor<T>& b,
                    uint64_t mask, R repeatTimes, const BinaryRepeatParams& p, F f)
{
    const int64_t repeats = static_cast<int64_t>(repeatTimes);
    if (repeats < 0 || repeats > 255) {
        Fail(api, "repeat limit", "repeatTimes " + std::to_string(repeats) + " is not in 0..255");
    }
    const uint64_t perRepeat = 256 / sizeof(T);
    if (mask == 0 || mask > perRepeat) {
        Fail(api, "mask", "mask " + std::to_string(mask) + " is not in 1.." + std::to_string(perRepeat));
    }
    const uint64_t perBlock = 32 / sizeof(T);
    CheckVector(api, dst, 0, "dst");
    CheckVector(api, a, 0, "src0");
    CheckVector(api, b, 0, "src1");
    Span ds, as, bs;
    for (int64_t r = 0; r < repeats; ++r) {
        for (uint64_t e = 0; e < mask; ++e) {
            const uint64_t blk = e / perBlock;
            const uint64_t in = e % perBlock;
            const uint64_t di = (r * p.dstRepStride + blk * p.dstBlkStride) * perBlock + in;
            const uint64_t ai = (r * p.src0RepStride + blk * p.src0BlkStride) * perBlock + in;
            const uint64_t bi = (r * p.src1RepStride + blk * p.src1BlkStride) * perBlock + in;
            dst.Check(api, di, 1);
            a.Check(api, ai, 1);
            b.Check(api, bi, 1);
            ds.Add(di);
            as.Add(ai);
            bs.Add(bi);
            dst.Data()[di] = Narrow<T>(api, f(static_cast<Acc<T>>(a.Data()[ai]), static_cast<Acc<T>>(b.Data()[bi])));
        }
    }
    as.Touch(api, PIPE_V, a, false);
    bs.Touch(api, PIPE_V, b, false);
    ds.Touch(api, PIPE_V, dst, true);
}

template <typename T, typename R, typename F>
inline void Repeat1(const char* api, const LocalTensor<T>& dst, const LocalTensor<T>& src, uint64_t mask,
                    R repeatTimes, const UnaryRepeatParams& p, F f)
{
    const int64_t repeats = static_cast<int64_t>(repeatTimes);
    if (repeats < 0 || repeats > 255) {
        Fail(api, "repeat limit", "repeatTimes " + std::to_string(repeats) + " is not in 0..255");
    }
    const uint64_t perRepeat = 256 / sizeof(T);
    if (mask == 0 || mask > perRepeat) {
        Fail(api, "mask", "mask " + std::to_string(mask) + " is not in 1.." + std::to_string(perRepeat));
    }
    const uint64_t perBlock = 32 / sizeof(T);
    CheckVector(api, dst, 0, "dst");
    CheckVector(api, src, 0, "src");
    Span ds, ss;
    for (int64_t r = 0; r < repeats; ++r) {
        for (uint64_t e = 0; e < mask; ++e) {
            const uint64_t blk = e / perBlock;
            const uint64_t in = e % perBlock;
            const uint64_t di = (r * p.dstRepStride + blk * p.dstBlkStride) * perBlock + in;
            const uint64_t si = (r * p.srcRepStride + blk * p.srcBlkStride) * perBlock + in;
            dst.Check(api, di, 1);
            src.Check(api, si, 1);
            ds.Add(di);
            ss.Add(si);
            dst.Data()[di] = Narrow<T>(api, f(static_cast<Acc<T>>(src.Data()[si])));
        }
    }
    ss.Touch(api, PIPE_V, src, false);
    ds.Touch(api, PIPE_V, dst, true);
}

}  // namespace host

#define ASCENDC_HOST_BINARY(Name, expr)                                                                       \
    template <typename T>                                                                                     \
    inline void Name(const LocalTensor<T>& dst, const LocalTensor<T>& src0, const LocalTensor<T>& src1,       \
                     const int32_t& calCount)                                                                 \
    {                                                                                                         \
        host::Map2(#Name, dst, src0, src1, calCount, [](host::Acc<T> a, host::Acc<T> b) { return (expr); }); \
    }                                                                                                         \
    template <typename T, typename R>                                                                         \
    inline void Name(const LocalTensor<T>& dst, const LocalTensor<T>& src0, const LocalTensor<T>& src1,       \
                     uint64_t mask, const R repeatTimes, const BinaryRepeatParams& params)                   \
    {                                                                                                         \
        host::Repeat2(#Name, dst, src0, src1, mask, repeatTimes, params,                                      \
                      [](host::Acc<T> a, host::Acc<T> b) { return (expr); });                                 \
    }

ASCENDC_HOST_BINARY(Add, a + b)
ASCENDC_HOST_BINARY(Sub, a - b)
ASCENDC_HOST_BINARY(Mul, a * b)
ASCENDC_HOST_BINARY(Div, host::Divide(a, b))
// Max and Min ignore a NaN operand, like IEEE maxNum.
ASCENDC_HOST_BINARY(Max, a != a ? b : (b != b ? a : (a > b ? a : b)))
ASCENDC_HOST_BINARY(Min, a != a ? b : (b != b ? a : (a < b ? a : b)))

#undef ASCENDC_HOST_BINARY

#define ASCENDC_HOST_SCALAR(Name, expr)                                                                         \
    template <typename T>                                                                                       \
    inline void Name(const LocalTensor<T>& dst, const LocalTensor<T>& src, const T& scalarValue,                \
                     const int32_t& calCount)                                                                   \
    {                                                                                                           \
        const host::Acc<T> b = static_cast<host::Acc<T>>(scalarValue);                                          \
        host::Map1(#Name, dst, src, calCount, [b](host::Acc<T> a) { return (expr); });                          \
    }                                                                                                           \
    template <typename T, typename R>                                                                           \
    inline void Name(const LocalTensor<T>& dst, const LocalTensor<T>& src, const T& scalarValue, uint64_t mask, \
                     const R repeatTimes, const UnaryRepeatParams& params)                                      \
    {                                                                                                           \
        const host::Acc<T> b = static_cast<host::Acc<T>>(scalarValue);                                          \
        host::Repeat1(#Name, dst, src, mask, repeatTimes, params, [b](host::Acc<T> a) { return (expr); });      \
    }

ASCENDC_HOST_SCALAR(Adds, a + b)
ASCENDC_HOST_SCALAR(Muls, a * b)
ASCENDC_HOST_SCALAR(Maxs, std::max(a, b))
ASCENDC_HOST_SCALAR(Mins, std::min(a, b))

#undef ASCENDC_HOST_SCALAR

#define ASCENDC_HOST_UNARY(Name, expr)                                                                 \
    template <typename T>                                                                              \
    inline void Name(const LocalTensor<T>& dst, const LocalTensor<T>& src, const int32_t& calCount)     \
    {                                                                                                  \
        host::Map1(#Name, dst, src, calCount, [](host::Acc<T> a) { return (expr); });                  \
    }

ASCENDC_HOST_UNARY(Exp, std::exp(a))
ASCENDC_HOST_UNARY(Ln, std::log(a))
ASCENDC_HOST_UNARY(Sqrt, std::sqrt(a))
ASCENDC_HOST_UNARY(Rsqrt, 1.0f / std::sqrt(a))
ASCENDC_HOST_UNARY(Reciprocal, 1.0f / a)
ASCENDC_HOST_UNARY(Abs, a < 0 ? -a : a)
ASCENDC_HOST_UNARY(Relu, a > 0 ? a : 0 * a)

#undef ASCENDC_HOST_UNARY

// The math library's element-wise functions (Sin, Cos, Erf, Floor, Ceil, Power, Fmod):
// float and half, with a caller-provided `sharedTmpBuffer` in UB. The host requires room
// for one float per element in it, what the lowering reserves.
namespace host {

template <typename T>
inline void CheckMath(const char* api, const LocalTensor<T>& dst, const LocalTensor<uint8_t>& tmp, uint32_t count)
{
    if (!std::is_same<T, float>::value && !std::is_same<T, half>::value) {
        Fail(api, "dtype", "the math API takes half and float");
    }
    CheckVector(api, tmp, 0, "sharedTmpBuffer");
    const uint64_t need = static_cast<uint64_t>(count) * sizeof(float);
    if (tmp.GetSize() < need) {
        Fail(api, "sharedTmpBuffer",
             "sharedTmpBuffer has " + std::to_string(tmp.GetSize()) + " bytes, " + std::to_string(count) +
                 " elements need " + std::to_string(need));
    }
}

}  // namespace host

#define ASCENDC_HOST_MATH_UNARY(Name, expr)                                                                 \
    template <typename T, bool isReuseSource = false>                                                       \
    inline void Name(const LocalTensor<T>& dstTensor, const LocalTensor<T>& srcTensor,                      \
                     const LocalTensor<uint8_t>& sharedTmpBuffer, const uint32_t calCount)                  \
    {                                                                                                       \
        host::CheckMath(#Name, dstTensor, sharedTmpBuffer, calCount);                                       \
        host::Map1(#Name, dstTensor, srcTensor, static_cast<int32_t>(calCount),                             \
                   [](host::Acc<T> a) { return (expr); });                                                  \
    }

ASCENDC_HOST_MATH_UNARY(Sin, std::sin(a))
ASCENDC_HOST_MATH_UNARY(Cos, std::cos(a))
ASCENDC_HOST_MATH_UNARY(Erf, std::erf(a))
ASCENDC_HOST_MATH_UNARY(Floor, std::floor(a))
ASCENDC_HOST_MATH_UNARY(Ceil, std::ceil(a))

#undef ASCENDC_HOST_MATH_UNARY

#define ASCENDC_HOST_MATH_BINARY(Name, expr)                                                                \
    template <typename T, bool isReuseSource = false>                                                       \
    inline void Name(const LocalTensor<T>& dstTensor, const LocalTensor<T>& src0Tensor,                     \
                     const LocalTensor<T>& src1Tensor, const LocalTensor<uint8_t>& sharedTmpBuffer,         \
                     const uint32_t calCount)                                                               \
    {                                                                                                       \
        host::CheckMath(#Name, dstTensor, sharedTmpBuffer, calCount);                                       \
        host::Map2(#Name, dstTensor, src0Tensor, src1Tensor, static_cast<int32_t>(calCount),                \
                   [](host::Acc<T> a, host::Acc<T> b) { return (expr); });                                  \
    }

// Power: a to the b; Fmod: the remainder truncated toward zero, the sign of a.
ASCENDC_HOST_MATH_BINARY(Power, std::pow(a, b))
ASCENDC_HOST_MATH_BINARY(Fmod, std::fmod(a, b))

#undef ASCENDC_HOST_MATH_BINARY

template <typename T>
inline void Duplicate(const LocalTensor<T>& dst, const T& scalarValue, const int32_t& calCount)
{
    host::CheckVector("Duplicate", dst, calCount, "dst");
    for (int32_t i = 0; i < calCount; ++i) {
        dst.Data()[i] = scalarValue;
    }
}

template <typename T>
inline void ArithProgression(const LocalTensor<T>& dst, const T firstValue, const T diffValue, const int32_t count)
{
    host::CheckVector("ArithProgression", dst, count, "dst");
    if constexpr (std::is_integral<T>::value) {
        // Exact, and checked like the other integer results.
        const host::Acc<T> first = static_cast<host::Acc<T>>(firstValue);
        const host::Acc<T> diff = static_cast<host::Acc<T>>(diffValue);
        for (int32_t i = 0; i < count; ++i) {
            dst.Data()[i] = host::Narrow<T>("ArithProgression", first + diff * i);
        }
    } else {
        const double first = static_cast<double>(static_cast<host::Acc<T>>(firstValue));
        const double diff = static_cast<double>(static_cast<host::Acc<T>>(diffValue));
        for (int32_t i = 0; i < count; ++i) {
            dst.Data()[i] = T(static_cast<host::Acc<T>>(first + diff * i));
        }
    }
}

namespace host {

template <typename T>
inline constexpr bool IsFloat = std::is_same<T, float>::value || std::is_same<T, half>::value ||
                                std::is_same<T, bfloat16_t>::value;

inline float RoundFloat(float x, RoundMode mode)
{
    switch (mode) {
        case RoundMode::CAST_FLOOR: return std::floor(x);
        case RoundMode::CAST_CEIL: return std::ceil(x);
        case RoundMode::CAST_ROUND: return std::round(x);
        case RoundMode::CAST_TRUNC: return std::trunc(x);
        default: return std::nearbyint(x);
    }
}

}  // namespace host

template <typename D, typename S>
inline void Cast(const LocalTensor<D>& dst, const LocalTensor<S>& src, const RoundMode& roundMode, const uint32_t calCount)
{
    const char* api = "Cast";
    host::CheckVector(api, dst, calCount, "dst");
    host::CheckVector(api, src, calCount, "src");
    const bool narrowing = sizeof(D) < sizeof(S) || (host::IsFloat<S> && !host::IsFloat<D>);
    if (roundMode == RoundMode::CAST_NONE && narrowing) {
        host::Fail(api, "round mode", "CAST_NONE on a narrowing conversion: name the rounding (CAST_RINT, CAST_TRUNC...)");
    }
    if (roundMode == RoundMode::CAST_ODD && !(std::is_same<S, float>::value && std::is_same<D, half>::value)) {
        host::Fail(api, "round mode", "CAST_ODD converts f32 to f16 only");
    }
    for (uint32_t i = 0; i < calCount; ++i) {
        const float x = static_cast<float>(static_cast<host::Acc<S>>(src.Data()[i]));
        if (host::IsFloat<D>) {
            // Float to float: the type's conversion rounds to nearest even; other modes first
            // round to an integer only when the destination is an integer.
            dst.Data()[i] = D(x);
        } else {
            const float r = host::RoundFloat(x, roundMode == RoundMode::CAST_NONE ? RoundMode::CAST_RINT : roundMode);
            const double lo = static_cast<double>(std::numeric_limits<int32_t>::min());
            const double hi = static_cast<double>(std::numeric_limits<int32_t>::max());
            const double c = std::isnan(r) ? 0.0 : std::min(std::max(static_cast<double>(r), lo), hi);
            dst.Data()[i] = static_cast<D>(static_cast<int64_t>(c));
        }
    }
}

namespace host {

template <typename T>
inline bool CompareValues(T a, T b, CMPMODE mode)
{
    const Acc<T> x = static_cast<Acc<T>>(a);
    const Acc<T> y = static_cast<Acc<T>>(b);
    switch (mode) {
        case CMPMODE::LT: return x < y;
        case CMPMODE::GT: return x > y;
        case CMPMODE::EQ: return x == y;
        case CMPMODE::LE: return x <= y;
        case CMPMODE::GE: return x >= y;
        case CMPMODE::NE: return x != y;
    }
    return false;
}

// `written`: the mask is the result (Compare), else a source (Select).
inline void CheckMask(const char* api, const LocalTensor<uint8_t>& mask, uint32_t count, bool written)
{
    CheckVector(api, mask, (count + 7) / 8, written ? "dst mask" : "selMask");
}

inline void SetBit(const LocalTensor<uint8_t>& mask, uint32_t i, bool value)
{
    uint8_t& byte = mask.Data()[i / 8];
    byte = static_cast<uint8_t>(value ? (byte | (1u << (i % 8))) : (byte & ~(1u << (i % 8))));
}

inline bool Bit(const LocalTensor<uint8_t>& mask, uint32_t i) { return (mask.Data()[i / 8] >> (i % 8)) & 1u; }

}  // namespace host

// dst: one bit per element, set where the comparison holds.
template <typename T, typename U>
inline void Compare(const LocalTensor<U>& dst, const LocalTensor<T>& src0, const LocalTensor<T>& src1, CMPMODE cmpMode,
                    uint32_t calCount)
{
    const char* api = "Compare";
    const LocalTensor<uint8_t> mask = dst.template ReinterpretCast<uint8_t>();
    host::CheckMask(api, mask, calCount, true);
    host::CheckVector(api, src0, calCount, "src0");
    host::CheckVector(api, src1, calCount, "src1");
    for (uint32_t i = 0; i < calCount; ++i) {
        host::SetBit(mask, i, host::CompareValues(src0.Data()[i], src1.Data()[i], cmpMode));
    }
}

template <typename T, typename U>
inline void CompareScalar(const LocalTensor<U>& dst, const LocalTensor<T>& src0, const T src1Scalar, CMPMODE cmpMode,
                          uint32_t calCount)
{
    const char* api = "CompareScalar";
    const LocalTensor<uint8_t> mask = dst.template ReinterpretCast<uint8_t>();
    host::CheckMask(api, mask, calCount, true);
    host::CheckVector(api, src0, calCount, "src0");
    for (uint32_t i = 0; i < calCount; ++i) {
        host::SetBit(mask, i, host::CompareValues(src0.Data()[i], src1Scalar, cmpMode));
    }
}

// dst[i] = bit i of selMask ? src0[i] : src1[i] (or the scalar).
template <typename T, typename U>
inline void Select(const LocalTensor<T>& dst, const LocalTensor<U>& selMask, const LocalTensor<T>& src0,
                   const LocalTensor<T>& src1, SELMODE selMode, uint32_t calCount)
{
    const char* api = "Select";
    if (selMode != SELMODE::VSEL_TENSOR_TENSOR_MODE) {
        host::Fail(api, "select mode", "two tensors need VSEL_TENSOR_TENSOR_MODE");
    }
    const LocalTensor<uint8_t> mask = selMask.template ReinterpretCast<uint8_t>();
    host::CheckMask(api, mask, calCount, false);
    host::CheckVector(api, dst, calCount, "dst");
    host::CheckVector(api, src0, calCount, "src0");
    host::CheckVector(api, src1, calCount, "src1");
    for (uint32_t i = 0; i < calCount; ++i) {
        dst.Data()[i] = host::Bit(mask, i) ? src0.Data()[i] : src1.Data()[i];
    }
}

template <typename T, typename U>
inline void Select(const LocalTensor<T>& dst, const LocalTensor<U>& selMask, const LocalTensor<T>& src0, T src1,
                   SELMODE selMode, uint32_t calCount)
{
    const char* api = "Select";
    if (selMode != SELMODE::VSEL_TENSOR_SCALAR_MODE) {
        host::Fail(api, "select mode", "a tensor and a scalar need VSEL_TENSOR_SCALAR_MODE");
    }
    const LocalTensor<uint8_t> mask = selMask.template ReinterpretCast<uint8_t>();
    host::CheckMask(api, mask, calCount, false);
    host::CheckVector(api, dst, calCount, "dst");
    host::CheckVector(api, src0, calCount, "src0");
    for (uint32_t i = 0; i < calCount; ++i) {
        dst.Data()[i] = host::Bit(mask, i) ? src0.Data()[i] : src1;
    }
}

namespace host {

template <typename T, typename F>
inline void Reduce(const char* api, const LocalTensor<T>& dst, const LocalTensor<T>& src, const LocalTensor<T>& work,
                   int32_t count, double init, F f)
{
    CheckVector(api, dst, 1, "dst");
    CheckVector(api, src, count, "src");
    CheckVector(api, work, 0, "sharedTmpBuffer");
    if (count <= 0) {
        Fail(api, "count", "count " + std::to_string(count) + " is not positive");
    }
    // The work buffer holds one partial result per 256-byte repeat.
    const uint64_t repeats = (static_cast<uint64_t>(count) * sizeof(T) + 255) / 256;
    if (work.GetSize() < repeats) {
        Fail(api, "work buffer",
             "sharedTmpBuffer has " + std::to_string(work.GetSize()) + " elements, the reduction of " +
                 std::to_string(count) + " needs " + std::to_string(repeats));
    }
    double acc = init;
    for (int32_t i = 0; i < count; ++i) {
        acc = f(acc, static_cast<double>(static_cast<Acc<T>>(src.Data()[i])));
    }
    dst.Data()[0] = T(static_cast<Acc<T>>(acc));
}

}  // namespace host

template <typename T>
inline void ReduceSum(const LocalTensor<T>& dstTensor, const LocalTensor<T>& srcTensor,
                      const LocalTensor<T>& sharedTmpBuffer, const int32_t count)
{
    host::Reduce("ReduceSum", dstTensor, srcTensor, sharedTmpBuffer, count, 0.0, [](double a, double x) { return a + x; });
}

template <typename T>
inline void ReduceMax(const LocalTensor<T>& dstTensor, const LocalTensor<T>& srcTensor,
                      const LocalTensor<T>& sharedTmpBuffer, const int32_t count, bool calIndex = false)
{
    if (calIndex) {
        host::Fail("ReduceMax", "unsupported", "calIndex is not implemented on the host");
    }
    host::Reduce("ReduceMax", dstTensor, srcTensor, sharedTmpBuffer, count, -HUGE_VAL,
                 [](double a, double x) { return x > a ? x : a; });
}

template <typename T>
inline void ReduceMin(const LocalTensor<T>& dstTensor, const LocalTensor<T>& srcTensor,
                      const LocalTensor<T>& sharedTmpBuffer, const int32_t count, bool calIndex = false)
{
    if (calIndex) {
        host::Fail("ReduceMin", "unsupported", "calIndex is not implemented on the host");
    }
    host::Reduce("ReduceMin", dstTensor, srcTensor, sharedTmpBuffer, count, HUGE_VAL,
                 [](double a, double x) { return x < a ? x : a; });
}

// WholeReduceSum / WholeReduceMax / WholeReduceMin: each of `repeatTimes` repeats reduces
// its first `mask` elements (a count mask, at most one repeat of 256 bytes, at
// `srcBlkStride` blocks between its blocks; repeats `srcRepStride` blocks apart) to one
// value, written `dstRepStride` results apart (one result, one element, per repeat:
// WholeReduceMax / Min only with ReduceOrder::ORDER_ONLY_VALUE, the value without its index).
enum class ReduceOrder { ORDER_VALUE_INDEX, ORDER_INDEX_VALUE, ORDER_ONLY_VALUE, ORDER_ONLY_INDEX };

namespace host {

// The checks every whole-repeat reduction (WholeReduce*, BlockReduce*) makes of its arguments:
// at most 255 repeats (`repeats` is named `repeatName` in the error, as the API calls it), a
// mask within one repeat, no negative stride, both operands in the vector unit's buffers.
template <typename T>
inline void CheckReduce(const char* api, const char* repeatName, const LocalTensor<T>& dst,
                        const LocalTensor<T>& src, int32_t repeats, int32_t mask, int32_t dstRepStride,
                        int32_t srcBlkStride, int32_t srcRepStride)
{
    if (repeats < 0 || repeats > 255) {
        Fail(api, "repeat limit", std::string(repeatName) + " " + std::to_string(repeats) + " is not in 0..255");
    }
    const int64_t perRepeat = 256 / sizeof(T);
    if (mask <= 0 || mask > perRepeat) {
        Fail(api, "mask", "mask " + std::to_string(mask) + " is not in 1.." + std::to_string(perRepeat));
    }
    if (dstRepStride < 0 || srcBlkStride < 0 || srcRepStride < 0) {
        Fail(api, "stride", "a stride is negative");
    }
    CheckVector(api, dst, 0, "dst");
    CheckVector(api, src, 0, "src");
}

template <typename T, typename F>
inline void WholeReduce(const char* api, const LocalTensor<T>& dst, const LocalTensor<T>& src, int32_t mask,
                        int32_t repeatTimes, int32_t dstRepStride, int32_t srcBlkStride, int32_t srcRepStride, F f)
{
    CheckReduce(api, "repeatTimes", dst, src, repeatTimes, mask, dstRepStride, srcBlkStride, srcRepStride);
    const int64_t perBlock = 32 / sizeof(T);
    Span ds, ss;
    for (int64_t r = 0; r < repeatTimes; ++r) {
        Acc<T> acc = 0;
        for (int64_t e = 0; e < mask; ++e) {
            const int64_t si = (r * srcRepStride + (e / perBlock) * srcBlkStride) * perBlock + e % perBlock;
            src.Check(api, si, 1);
            ss.Add(static_cast<uint64_t>(si));
            const Acc<T> x = static_cast<Acc<T>>(src.Data()[si]);
            acc = e == 0 ? x : f(acc, x);
        }
        const int64_t di = r * dstRepStride;
        dst.Check(api, di, 1);
        ds.Add(static_cast<uint64_t>(di));
        dst.Data()[di] = Narrow<T>(api, acc);
    }
    ss.Touch(api, PIPE_V, src, false);
    ds.Touch(api, PIPE_V, dst, true);
}

}  // namespace host

template <typename T>
inline void WholeReduceSum(const LocalTensor<T>& dst, const LocalTensor<T>& src, const int32_t mask,
                           const int32_t repeatTimes, const int32_t dstRepStride, const int32_t srcBlkStride,
                           const int32_t srcRepStride)
{
    host::WholeReduce("WholeReduceSum", dst, src, mask, repeatTimes, dstRepStride, srcBlkStride, srcRepStride,
                      [](host::Acc<T> a, host::Acc<T> x) { return a + x; });
}

// Max and Min ignore a NaN operand, like the element-wise Max and Min.
template <typename T>
inline void WholeReduceMax(const LocalTensor<T>& dst, const LocalTensor<T>& src, const int32_t mask,
                           const int32_t repeatTimes, const int32_t dstRepStride, const int32_t srcBlkStride,
                           const int32_t srcRepStride, ReduceOrder order = ReduceOrder::ORDER_VALUE_INDEX)
{
    if (order != ReduceOrder::ORDER_ONLY_VALUE) {
        host::Fail("WholeReduceMax", "unsupported", "only ReduceOrder::ORDER_ONLY_VALUE is implemented on the host");
    }
    host::WholeReduce("WholeReduceMax", dst, src, mask, repeatTimes, dstRepStride, srcBlkStride, srcRepStride,
                      [](host::Acc<T> a, host::Acc<T> x) { return a != a ? x : (x != x ? a : (x > a ? x : a)); });
}

template <typename T>
inline void WholeReduceMin(const LocalTensor<T>& dst, const LocalTensor<T>& src, const int32_t mask,
                           const int32_t repeatTimes, const int32_t dstRepStride, const int32_t srcBlkStride,
                           const int32_t srcRepStride, ReduceOrder order = ReduceOrder::ORDER_VALUE_INDEX)
{
    if (order != ReduceOrder::ORDER_ONLY_VALUE) {
        host::Fail("WholeReduceMin", "unsupported", "only ReduceOrder::ORDER_ONLY_VALUE is implemented on the host");
    }
    host::WholeReduce("WholeReduceMin", dst, src, mask, repeatTimes, dstRepStride, srcBlkStride, srcRepStride,
                      [](host::Acc<T> a, host::Acc<T> x) { return a != a ? x : (x != x ? a : (x < a ? x : a)); });
}


// BlockReduceSum / BlockReduceMax / BlockReduceMin: each of `repeatTime` repeats (`srcRepStride`
// blocks apart, its 8 blocks `srcBlkStride` blocks apart) reduces each 32-byte block's elements
// among its first `mask` (a count mask, at most one repeat) to one value; a repeat's 8 values
// go to 8 consecutive elements, repeats `dstRepStride` x 8 elements apart (the unit is one
// repeat's reduced length). A block none of whose elements is under the mask is not written
// (the host's choice: the documentation leaves it open; the lowering always masks whole
// repeats). Each repeat reads its source before writing, so a result may overwrite the
// source of its own or an earlier repeat, as pto-isa's in-place steps do.
namespace host {

template <typename T, typename F>
inline void BlockReduce(const char* api, const LocalTensor<T>& dst, const LocalTensor<T>& src, int32_t repeatTime,
                        int32_t mask, int32_t dstRepStride, int32_t srcBlkStride, int32_t srcRepStride, F f)
{
    CheckReduce(api, "repeatTime", dst, src, repeatTime, mask, dstRepStride, srcBlkStride, srcRepStride);
    const int64_t perBlock = 32 / sizeof(T);
    Span ds, ss;
    for (int64_t r = 0; r < repeatTime; ++r) {
        Acc<T> acc[8] = {};
        bool any[8] = {};
        for (int64_t e = 0; e < mask; ++e) {
            const int64_t blk = e / perBlock;
            const int64_t si = (r * srcRepStride + blk * srcBlkStride) * perBlock + e % perBlock;
            src.Check(api, si, 1);
            ss.Add(static_cast<uint64_t>(si));
            const Acc<T> x = static_cast<Acc<T>>(src.Data()[si]);
            acc[blk] = any[blk] ? f(acc[blk], x) : x;
            any[blk] = true;
        }
        for (int64_t blk = 0; blk < 8; ++blk) {
            if (!any[blk]) {
                continue;
            }
            const int64_t di = r * dstRepStride * 8 + blk;
            dst.Check(api, di, 1);
            ds.Add(static_cast<uint64_t>(di));
            dst.Data()[di] = Narrow<T>(api, acc[blk]);
        }
    }
    ss.Touch(api, PIPE_V, src, false);
    ds.Touch(api, PIPE_V, dst, true);
}

}  // namespace host

template <typename T, bool isSetMask = true>
inline void BlockReduceSum(const LocalTensor<T>& dst, const LocalTensor<T>& src, const int32_t repeatTime,
                           const int32_t mask, const int32_t dstRepStride, const int32_t srcBlkStride,
                           const int32_t srcRepStride)
{
    host::BlockReduce("BlockReduceSum", dst, src, repeatTime, mask, dstRepStride, srcBlkStride, srcRepStride,
                      [](host::Acc<T> a, host::Acc<T> x) { return a + x; });
}

// Max and Min ignore a NaN operand, like WholeReduceMax and WholeReduceMin.
template <typename T, bool isSetMask = true>
inline void BlockReduceMax(const LocalTensor<T>& dst, const LocalTensor<T>& src, const int32_t repeatTime,
                           const int32_t mask, const int32_t dstRepStride, const int32_t srcBlkStride,
                           const int32_t srcRepStride)
{
    host::BlockReduce("BlockReduceMax", dst, src, repeatTime, mask, dstRepStride, srcBlkStride, srcRepStride,
                      [](host::Acc<T> a, host::Acc<T> x) { return a != a ? x : (x != x ? a : (x > a ? x : a)); });
}

template <typename T, bool isSetMask = true>
inline void BlockReduceMin(const LocalTensor<T>& dst, const LocalTensor<T>& src, const int32_t repeatTime,
                           const int32_t mask, const int32_t dstRepStride, const int32_t srcBlkStride,
                           const int32_t srcRepStride)
{
    host::BlockReduce("BlockReduceMin", dst, src, repeatTime, mask, dstRepStride, srcBlkStride, srcRepStride,
                      [](host::Acc<T> a, host::Acc<T> x) { return a != a ? x : (x != x ? a : (x < a ? x : a)); });
}

// Brcb: each of `repeatTime` repeats takes the next 8 elements of `src0` (8 per repeat,
// consecutive) and fills one 32-byte block of `dst` with each, the blocks
// `dstBlkStride` blocks apart, repeats `dstRepStride` blocks apart. `src0` and `dst` may
// not overlap.
struct BrcbRepeatParams {
    BrcbRepeatParams() {}
    BrcbRepeatParams(const uint16_t dstBlkStrideIn, const uint16_t dstRepStrideIn)
        : dstRepStride(dstRepStrideIn), dstBlkStride(dstBlkStrideIn)
    {
    }
    uint16_t dstRepStride = 8;
    uint16_t dstBlkStride = 1;
};

template <typename T>
inline void Brcb(const LocalTensor<T>& dst, const LocalTensor<T>& src0, const uint8_t repeatTime,
                 const BrcbRepeatParams& repeatParams)
{
    const char* api = "Brcb";
    static_assert(sizeof(T) == 2 || sizeof(T) == 4, "Brcb takes 16- and 32-bit elements");
    const int64_t perBlock = 32 / sizeof(T);
    const int64_t repeats = repeatTime;
    host::CheckVector(api, dst, 0, "dst");
    host::CheckVector(api, src0, 0, "src0");
    src0.Check(api, 0, static_cast<uint64_t>(8 * repeats));
    host::Touch(api, PIPE_V, src0, 0, static_cast<uint64_t>(8 * repeats), false);
    const int64_t srcStart = static_cast<int64_t>(src0.Address());
    const int64_t srcEnd = srcStart + 8 * repeats * static_cast<int64_t>(sizeof(T));
    for (int64_t r = 0; r < repeats; ++r) {
        for (int64_t i = 0; i < 8; ++i) {
            const T v = src0.Data()[r * 8 + i];
            const int64_t at = (r * repeatParams.dstRepStride + i * repeatParams.dstBlkStride) * perBlock;
            dst.Check(api, static_cast<uint64_t>(at), static_cast<uint64_t>(perBlock));
            host::Touch(api, PIPE_V, dst, static_cast<uint64_t>(at), static_cast<uint64_t>(perBlock), true);
            const int64_t byte = static_cast<int64_t>(dst.Address()) + at * static_cast<int64_t>(sizeof(T));
            if (byte < srcEnd && srcStart < byte + 32) {
                host::Fail(api, "overlap", "dst block at UB address " + std::to_string(byte) +
                                               " overlaps src0 (UB " + std::to_string(srcStart) + ".." +
                                               std::to_string(srcEnd) + ")");
            }
            for (int64_t e = 0; e < perBlock; ++e) {
                dst.Data()[at + e] = v;
            }
        }
    }
}

}  // namespace AscendC

#endif  // ASCENDC_HOST_VECTOR_H

// Host implementation of the Ascend C API: qualifiers, scalar types, enums, the error
// channel and the per-block state.
#ifndef ASCENDC_HOST_COMMON_H
#define ASCENDC_HOST_COMMON_H

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <type_traits>

#ifndef ASCENDC_HOST_UB_BYTES
#error "ASCENDC_HOST_UB_BYTES (the device profile's unified buffer size) must be defined"
#endif
#ifndef ASCENDC_HOST_L1_BYTES
#error "ASCENDC_HOST_L1_BYTES must be defined"
#endif
#ifndef ASCENDC_HOST_L0A_BYTES
#error "ASCENDC_HOST_L0A_BYTES must be defined"
#endif
#ifndef ASCENDC_HOST_L0B_BYTES
#error "ASCENDC_HOST_L0B_BYTES must be defined"
#endif
#ifndef ASCENDC_HOST_L0C_BYTES
#error "ASCENDC_HOST_L0C_BYTES must be defined"
#endif

// Device qualifiers: nothing on the host.
#define __global__
#define __aicore__
#define __gm__
#define GM_ADDR uint8_t*

#define GET_TILING_DATA_WITH_STRUCT(tiling_struct, tiling_data, tiling_arg) \
    tiling_struct tiling_data;                                            \
    std::memcpy(&tiling_data, (tiling_arg), sizeof(tiling_struct))

namespace AscendC {
namespace host {

// What is running: set by the harness (block) and by the generated code (instruction).
struct State {
    int64_t blockIdx = 0;
    int64_t blockNum = 1;
    int64_t inst = -1;
    const char* instText = "";
    uint32_t flags[32][8] = {};
};

inline State& CurrentState()
{
    static State state;
    return state;
}

// Reports a broken rule of the device and stops: one line on stderr, exit status 3.
[[noreturn]] inline void Fail(const char* api, const char* rule, const std::string& detail)
{
    const State& s = CurrentState();
    if (s.inst >= 0) {
        std::fprintf(stderr, "ascendc-host: block %lld: inst %lld (%s): %s: %s: %s\n",
                     static_cast<long long>(s.blockIdx), static_cast<long long>(s.inst), s.instText, api,
                     rule, detail.c_str());
    } else {
        std::fprintf(stderr, "ascendc-host: block %lld: %s: %s: %s\n", static_cast<long long>(s.blockIdx),
                     api, rule, detail.c_str());
    }
    std::fflush(stderr);
    std::exit(3);
}

inline void SetInst(int64_t index, const char* text)
{
    CurrentState().inst = index;
    CurrentState().instText = text;
}

inline void BeginBlock(int64_t idx, int64_t num)
{
    State& s = CurrentState();
    s = State{};
    s.blockIdx = idx;
    s.blockNum = num;
}

// IEEE binary16, round to nearest even from float.
inline uint16_t FloatToHalfBits(float value)
{
    uint32_t x;
    std::memcpy(&x, &value, 4);
    const uint32_t sign = (x >> 16) & 0x8000u;
    const uint32_t absx = x & 0x7fffffffu;
    if (absx >= 0x7f800000u) {  // inf or nan
        return static_cast<uint16_t>(sign | 0x7c00u | (absx > 0x7f800000u ? 0x200u : 0u));
    }
    if (absx >= 0x477ff000u) {  // rounds to >= 65520: overflow to inf
        return static_cast<uint16_t>(sign | 0x7c00u);
    }
    if (absx < 0x38800000u) {  // subnormal half (or zero)
        if (absx < 0x33000000u) {
            return static_cast<uint16_t>(sign);
        }
        const uint32_t exp = absx >> 23;
        const uint32_t mant = (absx & 0x7fffffu) | 0x800000u;
        const uint32_t shift = 126u - exp;  // 14..24
        uint32_t half = mant >> shift;
        const uint32_t rem = mant & ((1u << shift) - 1u);
        const uint32_t mid = 1u << (shift - 1u);
        if (rem > mid || (rem == mid && (half & 1u))) {
            ++half;
        }
        return static_cast<uint16_t>(sign | half);
    }
    uint32_t half = ((absx >> 13) - (112u << 10));
    const uint32_t rem = absx & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (half & 1u))) {
        ++half;
    }
    return static_cast<uint16_t>(sign | half);
}

inline float HalfBitsToFloat(uint16_t h)
{
    const uint32_t sign = (static_cast<uint32_t>(h) & 0x8000u) << 16;
    uint32_t exp = (h >> 10) & 0x1fu;
    uint32_t mant = h & 0x3ffu;
    uint32_t x;
    if (exp == 0) {
        if (mant == 0) {
            x = sign;
        } else {
            exp = 113;
            while ((mant & 0x400u) == 0) {
                mant <<= 1;
                --exp;
            }
            mant &= 0x3ffu;
            x = sign | (exp << 23) | (mant << 13);
        }
    } else if (exp == 31) {
        x = sign | 0x7f800000u | (mant << 13);
    } else {
        x = sign | ((exp + 112u) << 23) | (mant << 13);
    }
    float f;
    std::memcpy(&f, &x, 4);
    return f;
}

inline uint16_t FloatToBf16Bits(float value)
{
    uint32_t x;
    std::memcpy(&x, &value, 4);
    if ((x & 0x7fffffffu) > 0x7f800000u) {
        return static_cast<uint16_t>((x >> 16) | 0x40u);
    }
    const uint32_t rounding = 0x7fffu + ((x >> 16) & 1u);
    return static_cast<uint16_t>((x + rounding) >> 16);
}

inline float Bf16BitsToFloat(uint16_t b)
{
    const uint32_t x = static_cast<uint32_t>(b) << 16;
    float f;
    std::memcpy(&f, &x, 4);
    return f;
}

}  // namespace host
}  // namespace AscendC

// The device's 16-bit float types: storage, conversions through float.
struct half {
    uint16_t bits = 0;
    half() = default;
    template <typename U, typename = typename std::enable_if<std::is_arithmetic<U>::value>::type>
    half(U value) : bits(AscendC::host::FloatToHalfBits(static_cast<float>(value)))
    {
    }
    operator float() const { return AscendC::host::HalfBitsToFloat(bits); }
};

struct bfloat16_t {
    uint16_t bits = 0;
    bfloat16_t() = default;
    template <typename U, typename = typename std::enable_if<std::is_arithmetic<U>::value>::type>
    bfloat16_t(U value) : bits(AscendC::host::FloatToBf16Bits(static_cast<float>(value)))
    {
    }
    operator float() const { return AscendC::host::Bf16BitsToFloat(bits); }
};

namespace AscendC {

enum class TPosition : uint8_t { GM, A1, A2, B1, B2, C1, C2, CO1, CO2, VECIN, VECOUT, VECCALC, LCM };
using QuePosition = TPosition;

enum class RoundMode : uint8_t { CAST_NONE, CAST_RINT, CAST_FLOOR, CAST_CEIL, CAST_ROUND, CAST_TRUNC, CAST_ODD };

enum class CMPMODE : uint8_t { LT, GT, EQ, LE, GE, NE };

enum class SELMODE : uint8_t { VSEL_CMPMASK_SPR, VSEL_TENSOR_SCALAR_MODE, VSEL_TENSOR_TENSOR_MODE };

enum pipe_t : uint8_t { PIPE_S, PIPE_V, PIPE_M, PIPE_MTE1, PIPE_MTE2, PIPE_MTE3, PIPE_FIX, PIPE_ALL };

enum class HardEvent : uint8_t {
    MTE2_MTE1,
    MTE1_MTE2,
    MTE1_M,
    M_MTE1,
    MTE2_V,
    V_MTE2,
    MTE3_V,
    V_MTE3,
    M_V,
    V_M,
    V_V,
    MTE3_MTE2,
    MTE2_MTE3,
    S_V,
    V_S,
    S_MTE2,
    MTE2_S,
    S_MTE3,
    MTE3_S,
    MTE2_FIX,
    FIX_MTE2,
    FIX_S,
    M_FIX,
    FIX_M,
    FIX_V,
    V_FIX,
    MTE3_MTE1,
};

using event_t = int32_t;
constexpr event_t EVENT_ID0 = 0;
constexpr event_t EVENT_ID1 = 1;
constexpr event_t EVENT_ID2 = 2;
constexpr event_t EVENT_ID3 = 3;
constexpr event_t EVENT_ID4 = 4;
constexpr event_t EVENT_ID5 = 5;
constexpr event_t EVENT_ID6 = 6;
constexpr event_t EVENT_ID7 = 7;

inline int64_t GetBlockIdx() { return host::CurrentState().blockIdx; }
inline int64_t GetBlockNum() { return host::CurrentState().blockNum; }

// Pipes run in program order on the host: barriers and flags only check their pairing.
template <pipe_t pipe>
inline void PipeBarrier()
{
}

template <HardEvent event>
inline void SetFlag(event_t id)
{
    if (id < 0 || id > 7) {
        host::Fail("SetFlag", "event id", "event id " + std::to_string(id) + " is not in 0..7");
    }
    ++host::CurrentState().flags[static_cast<int>(event)][id];
}

template <HardEvent event>
inline void WaitFlag(event_t id)
{
    if (id < 0 || id > 7) {
        host::Fail("WaitFlag", "event id", "event id " + std::to_string(id) + " is not in 0..7");
    }
    uint32_t& pending = host::CurrentState().flags[static_cast<int>(event)][id];
    if (pending == 0) {
        host::Fail("WaitFlag", "synchronisation",
                   "WaitFlag of event " + std::to_string(static_cast<int>(event)) + " id " + std::to_string(id) +
                       " without a SetFlag before it: the pipe would wait forever");
    }
    --pending;
}

}  // namespace AscendC

#define PTO_INST(index, text) ::AscendC::host::SetInst((index), (text))
// An index value as an element of type T (an iota's start): exact, and an integer outside
// T's range stops the kernel, as the simulator does, instead of wrapping.
#define PTO_INDEX_AS(T, value) ::AscendC::host::Narrow<T>("iota", static_cast<int64_t>(value))

#endif  // ASCENDC_HOST_COMMON_H

// Host implementation of the Ascend C API: qualifiers, scalar types, enums, the error
// channel and the per-block state.
#ifndef ASCENDC_HOST_COMMON_H
#define ASCENDC_HOST_COMMON_H

#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <type_traits>

// What the SoC compiled for has (generated from pto-backends/src/ascendc/capability.rs:
// ASCENDC_HOST_SOC_NAME, ASCENDC_HOST_NPU_ARCH, ASCENDC_HOST_CAP_<ID> with _CALL and _SOURCE).
#include "ascendc_host_soc.h"

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

// The core types of a split-architecture AI core (`g_coreType` of the CPU debug mode): MIX
// stands for a coupled core, which has both units.
constexpr int32_t MIX = 0;
constexpr int32_t AIC = 1;
constexpr int32_t AIV = 2;

// The kernel types of KERNEL_TASK_TYPE_DEFAULT (the API's KernelMetaType).
enum KernelMetaType {
    KERNEL_TYPE_AIV_ONLY,
    KERNEL_TYPE_AIC_ONLY,
    KERNEL_TYPE_MIX_AIV_1_0,
    KERNEL_TYPE_MIX_AIC_1_0,
    KERNEL_TYPE_MIX_AIC_1_1,
    KERNEL_TYPE_MIX_AIC_1_2,
    KERNEL_TYPE_AICORE,
    KERNEL_TYPE_VECTORCORE,
    KERNEL_TYPE_MIX_AICORE,
    KERNEL_TYPE_MIX_VECTOR_CORE,
    KERNEL_TYPE_MAX
};

namespace host {

// The kernel type of a launch on a coupled SoC (no KernelMetaType).
constexpr int COUPLED = -1;

struct CoreGroup;

// What is running: set by the harness (block, core) and by the generated code
// (instruction). One per thread: the cores of a split AI core run as threads.
struct State {
    int64_t blockIdx = 0;
    int64_t blockNum = 1;
    int64_t inst = -1;
    const char* instText = "";
    // The split architecture: the core type, the AI core (block of the launch), the AIV's
    // index in it, GetTaskRatio(), the launched kernel type and the block's cross-core flags.
    int32_t coreType = MIX;
    int64_t aiCore = 0;
    int64_t subBlockIdx = 0;
    int64_t taskRatio = 1;
    int kernelType = COUPLED;
    const char* kernel = "";
    CoreGroup* group = nullptr;
};

inline State& CurrentState()
{
    static thread_local State state;
    return state;
}

// "AIC", "AIV 1": the core running, for messages.
inline std::string CoreName(const State& s)
{
    return s.coreType == AIC ? std::string("AIC") : "AIV " + std::to_string(s.subBlockIdx);
}

// Reports a broken rule of the device and stops: one line on stderr, exit status 3.
[[noreturn]] inline void Fail(const char* api, const char* rule, const std::string& detail)
{
    const State& s = CurrentState();
    std::string where;
    if (s.coreType == MIX) {
        where = "block " + std::to_string(s.blockIdx);
    } else {
        where = "kernel " + std::string(s.kernel) + ", block " + std::to_string(s.aiCore) + " (" + CoreName(s) + ")";
    }
    if (s.inst >= 0) {
        std::fprintf(stderr, "ascendc-host: %s: inst %lld (%s): %s: %s: %s\n", where.c_str(),
                     static_cast<long long>(s.inst), s.instText, api, rule, detail.c_str());
    } else {
        std::fprintf(stderr, "ascendc-host: %s: %s: %s: %s\n", where.c_str(), api, rule, detail.c_str());
    }
    std::fflush(stderr);
    // Other cores may be running (threads): end the process without running destructors.
    std::_Exit(3);
}

// Refuses a call path the SoC does not have (`has` is an ASCENDC_HOST_CAP_<ID>): on the
// device such a call is a compile error or an impl stub that does nothing.
inline void RequireCap(bool has, const char* api, const char* call, const char* source)
{
    if (!has) {
        Fail(api, "not on this SoC",
             std::string(call) + " does not exist on " + ASCENDC_HOST_SOC_NAME + " (" + source + ")");
    }
}

#define ASCENDC_HOST_REQUIRE(api, id) \
    ::AscendC::host::RequireCap(ASCENDC_HOST_CAP_##id, api, ASCENDC_HOST_CAP_##id##_CALL, ASCENDC_HOST_CAP_##id##_SOURCE)

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

// The synchronisation events, src_dst (mirror-cann/asc-devkit impl/basic_api/kernel_event.h,
// HardEvent), and FIX_V / V_FIX of the capability table's EVENT_FIX_V row.
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
    MTE3_MTE1,
    MTE1_MTE3,
    MTE1_V,
    MTE2_M,
    M_MTE2,
    V_MTE1,
    M_FIX,
    FIX_M,
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
    M_S,
    FIX_MTE3,
    MTE1_FIX,
    FIX_MTE1,
    FIX_FIX,
    FIX_V,
    V_FIX,
};

constexpr int EVENT_COUNT = static_cast<int>(HardEvent::V_FIX) + 1;

// Event ids per event (kernel_event.h: eventID in [0, QUE_MAX_EVENT)).
constexpr int32_t QUE_MAX_EVENT = 8;

using TEventID = int8_t;

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

// The split architecture (910B, dav-c220): one cube core (AIC) and two vector cores (AIV)
// per AI core, which exchange data only through GM. On the AIV of a MIX_AIC_1_2 kernel
// GetBlockIdx() is in [0, 2 * GetBlockNum()) and GetTaskRatio() is 2; GetSubBlockIdx() is
// the AIV's index in its AI core (0 or 1), as kernels use it.
inline int64_t GetSubBlockIdx() { return host::CurrentState().subBlockIdx; }
inline int64_t GetTaskRatio() { return host::CurrentState().taskRatio; }

// The user's part of the workspace: the host reserves no system workspace before it.
inline uint8_t* GetUserWorkspace(uint8_t* workspace) { return workspace; }

namespace host {

// The cross-core flags of one AI core (CrossCoreSetFlag / CrossCoreWaitFlag, mode 2): a
// counter per flag id on each core. A set of the AIC counts on both AIVs; a wait of the AIC
// passes once both AIVs have set (it takes one set of each). A wait on a zero counter
// blocks until another core sets it; a counter holds at most 15.
struct CoreGroup {
    std::mutex mutex;
    std::condition_variable changed;
    uint32_t toAiv[2][16] = {};    // sets of the AIC not yet waited for, per AIV
    uint32_t fromAiv[2][16] = {};  // sets of each AIV not yet waited for by the AIC
    int waitingOn[3] = {-1, -1, -1};  // the flag each core waits for (AIC, AIV 0, AIV 1)
    bool done[3] = {};
};

constexpr uint16_t CROSS_CORE_FLAGS = 11;  // ids 0..10 on Atlas A2
constexpr uint32_t CROSS_CORE_MAX_COUNT = 15;

inline int CoreSlot(const State& s)
{
    return s.coreType == AIC ? 0 : 1 + static_cast<int>(s.subBlockIdx);
}

inline bool FlagReady(const CoreGroup& g, int slot, int flag)
{
    if (slot == 0) {
        return g.fromAiv[0][flag] > 0 && g.fromAiv[1][flag] > 0;
    }
    return g.toAiv[slot - 1][flag] > 0;
}

inline const char* SlotName(int slot)
{
    return slot == 0 ? "AIC" : (slot == 1 ? "AIV 0" : "AIV 1");
}

// Whether no core of the group can make progress: each has finished or waits for a flag
// that is not set.
inline bool Deadlocked(const CoreGroup& g)
{
    for (int c = 0; c < 3; ++c) {
        if (g.done[c]) {
            continue;
        }
        if (g.waitingOn[c] < 0 || FlagReady(g, c, g.waitingOn[c])) {
            return false;
        }
    }
    return true;
}

inline std::string GroupState(const CoreGroup& g)
{
    std::string out;
    for (int c = 0; c < 3; ++c) {
        out += out.empty() ? "" : "; ";
        out += SlotName(c);
        out += g.done[c] ? ": finished" : (g.waitingOn[c] >= 0 ? ": waits for flag " + std::to_string(g.waitingOn[c]) : ": running");
    }
    return out;
}

inline CoreGroup& CrossCoreGroup(const char* api, uint16_t flagId)
{
    State& s = CurrentState();
    if (s.group == nullptr) {
        Fail(api, "split cores",
             s.coreType == MIX ? "cross-core flags are of the split architecture: this SoC's cube and vector units are one core"
                               : "cross-core flags need a mix kernel (KERNEL_TYPE_MIX_AIC_1_2): this one runs on one core per block");
    }
    if (flagId >= CROSS_CORE_FLAGS) {
        Fail(api, "flag id", "flag id " + std::to_string(flagId) + " is not in 0..10");
    }
    return *s.group;
}

// Milliseconds a cross-core wait may block before the run stops (ASCENDC_HOST_FLAG_TIMEOUT_MS,
// default 60000): a core that never sets the flag must not hang the caller. A wait that no
// core can satisfy any more stops at once (Deadlocked).
inline int64_t FlagTimeoutMs()
{
    const char* text = std::getenv("ASCENDC_HOST_FLAG_TIMEOUT_MS");
    const long long value = text != nullptr ? std::atoll(text) : 0;
    return value > 0 ? value : 60000;
}

}  // namespace host

template <uint8_t modeId, pipe_t pipe>
inline void CrossCoreSetFlag(uint16_t flagId)
{
    const char* api = "CrossCoreSetFlag";
    host::CoreGroup& g = host::CrossCoreGroup(api, flagId);
    if (modeId != 2) {
        host::Fail(api, "unsupported",
                   "mode " + std::to_string(modeId) + " is not implemented on the host (mode 2: the AIC and the AIVs of one AI core)");
    }
    host::State& s = host::CurrentState();
    std::lock_guard<std::mutex> lock(g.mutex);
    const int slot = host::CoreSlot(s);
    if (slot == 0) {
        for (int v = 0; v < 2; ++v) {
            if (g.toAiv[v][flagId] >= host::CROSS_CORE_MAX_COUNT) {
                host::Fail(api, "flag counter",
                           "flag " + std::to_string(flagId) + " of AIV " + std::to_string(v) + " is set " +
                               std::to_string(host::CROSS_CORE_MAX_COUNT) + " times without a wait: the counter holds at most 15");
            }
            ++g.toAiv[v][flagId];
        }
    } else {
        uint32_t& count = g.fromAiv[slot - 1][flagId];
        if (count >= host::CROSS_CORE_MAX_COUNT) {
            host::Fail(api, "flag counter",
                       "flag " + std::to_string(flagId) + " is set " + std::to_string(host::CROSS_CORE_MAX_COUNT) +
                           " times without a wait of the AIC: the counter holds at most 15");
        }
        ++count;
    }
    g.changed.notify_all();
}

template <uint8_t modeId = 0, pipe_t pipe = PIPE_S>
inline void CrossCoreWaitFlag(uint16_t flagId)
{
    const char* api = "CrossCoreWaitFlag";
    host::CoreGroup& g = host::CrossCoreGroup(api, flagId);
    host::State& s = host::CurrentState();
    const int slot = host::CoreSlot(s);
    std::unique_lock<std::mutex> lock(g.mutex);
    g.waitingOn[slot] = flagId;
    const auto start = std::chrono::steady_clock::now();
    const int64_t timeout = host::FlagTimeoutMs();
    while (!host::FlagReady(g, slot, flagId)) {
        if (host::Deadlocked(g)) {
            host::Fail(api, "cross-core synchronisation",
                       "flag " + std::to_string(flagId) + " is never set: no core of the block can set it (" +
                           host::GroupState(g) + "): the wait would never end");
        }
        g.changed.wait_for(lock, std::chrono::milliseconds(20));
        const auto waited = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - start);
        if (!host::FlagReady(g, slot, flagId) && waited.count() > timeout) {
            host::Fail(api, "cross-core synchronisation",
                       "flag " + std::to_string(flagId) + " not set after " + std::to_string(timeout) +
                           " ms (ASCENDC_HOST_FLAG_TIMEOUT_MS) (" + host::GroupState(g) + ")");
        }
    }
    g.waitingOn[slot] = -1;
    if (slot == 0) {
        --g.fromAiv[0][flagId];
        --g.fromAiv[1][flagId];
    } else {
        --g.toAiv[slot - 1][flagId];
    }
}

namespace host {

inline const char* KernelTypeName(int type)
{
    switch (type) {
        case KERNEL_TYPE_AIV_ONLY:
            return "KERNEL_TYPE_AIV_ONLY";
        case KERNEL_TYPE_AIC_ONLY:
            return "KERNEL_TYPE_AIC_ONLY";
        case KERNEL_TYPE_MIX_AIC_1_2:
            return "KERNEL_TYPE_MIX_AIC_1_2";
        case COUPLED:
            return "a coupled core";
        default:
            return "another kernel type";
    }
}

// KERNEL_TASK_TYPE_DEFAULT: the declared type must be the one the kernel is launched as.
inline void DeclareKernelType(int type)
{
    const State& s = CurrentState();
    if (s.kernelType == COUPLED) {
        Fail("KERNEL_TASK_TYPE_DEFAULT", "kernel type",
             std::string(KernelTypeName(type)) + " is of the split architecture: this SoC's cores are coupled");
    }
    if (type != s.kernelType) {
        Fail("KERNEL_TASK_TYPE_DEFAULT", "kernel type",
             std::string("the kernel declares ") + KernelTypeName(type) + ", it is launched as " +
                 KernelTypeName(s.kernelType));
    }
}

inline void BeginCore(int64_t aiCore, int64_t blockNum, int kernelType, const char* kernel, int32_t coreType,
                      int64_t sub, CoreGroup* group)
{
    State& s = CurrentState();
    s = State{};
    const bool mix = kernelType == KERNEL_TYPE_MIX_AIC_1_2;
    s.blockIdx = mix && coreType == AIV ? aiCore * 2 + sub : aiCore;
    s.blockNum = blockNum;
    s.coreType = coreType;
    s.aiCore = aiCore;
    s.subBlockIdx = sub;
    s.taskRatio = mix && coreType == AIV ? 2 : 1;
    s.kernelType = kernelType;
    s.kernel = kernel;
    s.group = group;
}

// Runs a kernel of a split-architecture SoC the way the CPU debug mode does: per block,
// one core (AIV_ONLY, AIC_ONLY) or one AIC and two AIVs as threads (MIX_AIC_1_2), with the
// block's cross-core flags; blocks in turn. Every flag must end at zero.
inline void Launch(const char* kernel, int kernelType, int64_t blockDim, const std::function<void()>& run)
{
    for (int64_t block = 0; block < blockDim; ++block) {
        if (kernelType == KERNEL_TYPE_AIV_ONLY || kernelType == KERNEL_TYPE_AIC_ONLY) {
            BeginCore(block, blockDim, kernelType, kernel, kernelType == KERNEL_TYPE_AIV_ONLY ? AIV : AIC, 0, nullptr);
            run();
            continue;
        }
        if (kernelType != KERNEL_TYPE_MIX_AIC_1_2) {
            BeginCore(block, blockDim, kernelType, kernel, AIV, 0, nullptr);
            Fail("Launch", "unsupported", std::string(KernelTypeName(kernelType)) + " is not implemented on the host");
        }
        CoreGroup group;
        std::thread cores[3];
        for (int c = 0; c < 3; ++c) {
            cores[c] = std::thread([&, c]() {
                BeginCore(block, blockDim, kernelType, kernel, c == 0 ? AIC : AIV, c == 0 ? 0 : c - 1, &group);
                run();
                std::lock_guard<std::mutex> lock(group.mutex);
                group.done[c] = true;
                group.changed.notify_all();
            });
        }
        for (std::thread& core : cores) {
            core.join();
        }
        BeginCore(block, blockDim, kernelType, kernel, AIC, 0, nullptr);
        for (int f = 0; f < CROSS_CORE_FLAGS; ++f) {
            for (int v = 0; v < 2; ++v) {
                if (group.toAiv[v][f] != 0 || group.fromAiv[v][f] != 0) {
                    Fail("CrossCoreSetFlag", "cross-core synchronisation",
                         "after the kernel, flag " + std::to_string(f) + " is left set (" +
                             std::to_string(group.toAiv[v][f]) + " sets of the AIC not waited for by AIV " +
                             std::to_string(v) + ", " + std::to_string(group.fromAiv[v][f]) +
                             " of AIV " + std::to_string(v) + " not waited for by the AIC): a set without its wait");
                }
            }
        }
    }
}

}  // namespace host
}  // namespace AscendC

// Which core runs (`if ASCEND_IS_AIC { ... }`): on the device `if constexpr`, here a test.
#define ASCEND_IS_AIC (::AscendC::host::CurrentState().coreType == ::AscendC::AIC)
#define ASCEND_IS_AIV (::AscendC::host::CurrentState().coreType == ::AscendC::AIV)
#define KERNEL_TASK_TYPE_DEFAULT(type) ::AscendC::host::DeclareKernelType(type)

#define PTO_INST(index, text) ::AscendC::host::SetInst((index), (text))
// An index value as an element of type T (an iota's start): exact, and an integer outside
// T's range stops the kernel, as the simulator does, instead of wrapping.
#define PTO_INDEX_AS(T, value) ::AscendC::host::Narrow<T>("iota", static_cast<int64_t>(value))

#endif  // ASCENDC_HOST_COMMON_H

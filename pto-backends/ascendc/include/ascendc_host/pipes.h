// Host implementation of the Ascend C API: the pipes of an AI core, their synchronisation
// (SetFlag / WaitFlag, PipeBarrier, the event ids of TPipe) and the race checker.
//
// On the device the scalar unit issues each instruction to its pipe (S, V, M, MTE1, MTE2,
// MTE3, FIX: mirror-cann/asc-devkit impl/basic_api/kernel_event.h, SUPPORTED_PIPE) and the
// pipes run concurrently: two instructions of different pipes are ordered only by a
// SetFlag<HardEvent::P_Q> on the earlier one's pipe P and a WaitFlag of the same event and
// id on the later one's pipe Q (docs/zh/api/SIMD-API/基础API/同步控制/核内同步/SetFlag-WaitFlag(ISASI).md),
// by a TQue's EnQue / DeQue and FreeTensor / AllocTensor (which set and wait the events of
// GetQueEvt in kernel_event.h: VECIN MTE2_V / V_MTE2, VECOUT V_MTE3 / MTE3_V, A1 / B1
// MTE2_MTE1 / MTE1_MTE2, A2 / B2 MTE1_M / M_MTE1, CO1 M_FIX / FIX_M), or by
// PipeBarrier<PIPE_ALL>. The host runs every call at once, in program order, so it computes
// what the device would only if those orders cover every conflicting pair. The checker
// proves that they do:
// - each pipe has a vector clock; an instruction ticks its pipe's own entry; SetFlag keeps
//   the setting pipe's clock in the flag, WaitFlag joins it into the waiting pipe's;
// - the scalar unit issues in program order and stalls on its loads and on WaitFlag<*_S>,
//   so every instruction is ordered after the scalar work issued before it (the scalar
//   clock is joined into each pipe at issue);
// - every access to a local buffer (UB, L1, L0A, L0B, L0C) is recorded per 32-byte block
//   (the unit of DataCopy and of the UB addresses, 总体约束说明.md: "DataBlock（32字节）是
//   搬运操作的基本寻址粒度"): the last write and the last read of each pipe;
// - an access that conflicts with an earlier one of another pipe (read after write, write
//   after read, write after write on an overlapping range) whose clock the accessing pipe
//   has not seen is a race: the run stops naming both calls, the range and the event that
//   orders them.
// Order within one pipe is taken as given (PipeBarrier<pipe> only ticks its pipe): only
// cross-pipe hazards are checked. GM is not tracked.
//
// A flag is one bit per (HardEvent, event id) (kernel_event.h: set_flag / wait_flag of an
// event and an id; QUE_MAX_EVENT ids per event; the wait "blocks while the bit is 0, and sets
// it to 0 when it is 1", TQueSync's doc): SetFlag of a set flag, or WaitFlag of a clear one
// (the pipe would wait forever: the host runs in program order) stops the run. The ids come
// from the TPipe (TPipe::AllocEventID / ReleaseEventID, or FetchEventID for a SetFlag and
// WaitFlag issued at once: docs/zh/api/SIMD-API/基础API/资源管理/Pipe和Que框架/TPipe/
// AllocEventID.md, FetchEventID.md), and a TQue takes
// its ids from the same pool: a SetFlag on an id a TQue holds stops the run (a fixed
// EVENT_ID0 beside TQues is the usual cause).
#ifndef ASCENDC_HOST_PIPES_H
#define ASCENDC_HOST_PIPES_H

#include <vector>

#include "common.h"

namespace AscendC {
namespace host {

constexpr int PIPES = 7;

inline const char* PipeName(int pipe)
{
    static const char* const names[PIPES] = {"PIPE_S", "PIPE_V", "PIPE_M", "PIPE_MTE1", "PIPE_MTE2", "PIPE_MTE3",
                                             "PIPE_FIX"};
    return pipe >= 0 && pipe < PIPES ? names[pipe] : "PIPE_ALL";
}

// The short name of a pipe in a HardEvent's name ("MTE2" of MTE2_V).
inline const char* PipeShort(int pipe)
{
    static const char* const names[PIPES] = {"S", "V", "M", "MTE1", "MTE2", "MTE3", "FIX"};
    return names[pipe];
}

struct EventInfo {
    HardEvent event;
    const char* name;
    pipe_t src;
    pipe_t dst;
};

// The events of HardEvent (kernel_event.h), each with the pipe that sets it and the pipe
// that waits for it (its name: src_dst).
inline const EventInfo* Events()
{
    static const EventInfo events[EVENT_COUNT] = {
        {HardEvent::MTE2_MTE1, "MTE2_MTE1", PIPE_MTE2, PIPE_MTE1}, {HardEvent::MTE1_MTE2, "MTE1_MTE2", PIPE_MTE1, PIPE_MTE2},
        {HardEvent::MTE1_M, "MTE1_M", PIPE_MTE1, PIPE_M},          {HardEvent::M_MTE1, "M_MTE1", PIPE_M, PIPE_MTE1},
        {HardEvent::MTE2_V, "MTE2_V", PIPE_MTE2, PIPE_V},          {HardEvent::V_MTE2, "V_MTE2", PIPE_V, PIPE_MTE2},
        {HardEvent::MTE3_V, "MTE3_V", PIPE_MTE3, PIPE_V},          {HardEvent::V_MTE3, "V_MTE3", PIPE_V, PIPE_MTE3},
        {HardEvent::M_V, "M_V", PIPE_M, PIPE_V},                   {HardEvent::V_M, "V_M", PIPE_V, PIPE_M},
        {HardEvent::V_V, "V_V", PIPE_V, PIPE_V},                   {HardEvent::MTE3_MTE1, "MTE3_MTE1", PIPE_MTE3, PIPE_MTE1},
        {HardEvent::MTE1_MTE3, "MTE1_MTE3", PIPE_MTE1, PIPE_MTE3}, {HardEvent::MTE1_V, "MTE1_V", PIPE_MTE1, PIPE_V},
        {HardEvent::MTE2_M, "MTE2_M", PIPE_MTE2, PIPE_M},          {HardEvent::M_MTE2, "M_MTE2", PIPE_M, PIPE_MTE2},
        {HardEvent::V_MTE1, "V_MTE1", PIPE_V, PIPE_MTE1},          {HardEvent::M_FIX, "M_FIX", PIPE_M, PIPE_FIX},
        {HardEvent::FIX_M, "FIX_M", PIPE_FIX, PIPE_M},             {HardEvent::MTE3_MTE2, "MTE3_MTE2", PIPE_MTE3, PIPE_MTE2},
        {HardEvent::MTE2_MTE3, "MTE2_MTE3", PIPE_MTE2, PIPE_MTE3}, {HardEvent::S_V, "S_V", PIPE_S, PIPE_V},
        {HardEvent::V_S, "V_S", PIPE_V, PIPE_S},                   {HardEvent::S_MTE2, "S_MTE2", PIPE_S, PIPE_MTE2},
        {HardEvent::MTE2_S, "MTE2_S", PIPE_MTE2, PIPE_S},          {HardEvent::S_MTE3, "S_MTE3", PIPE_S, PIPE_MTE3},
        {HardEvent::MTE3_S, "MTE3_S", PIPE_MTE3, PIPE_S},          {HardEvent::MTE2_FIX, "MTE2_FIX", PIPE_MTE2, PIPE_FIX},
        {HardEvent::FIX_MTE2, "FIX_MTE2", PIPE_FIX, PIPE_MTE2},    {HardEvent::FIX_S, "FIX_S", PIPE_FIX, PIPE_S},
        {HardEvent::M_S, "M_S", PIPE_M, PIPE_S},                   {HardEvent::FIX_MTE3, "FIX_MTE3", PIPE_FIX, PIPE_MTE3},
        {HardEvent::MTE1_FIX, "MTE1_FIX", PIPE_MTE1, PIPE_FIX},    {HardEvent::FIX_MTE1, "FIX_MTE1", PIPE_FIX, PIPE_MTE1},
        {HardEvent::FIX_FIX, "FIX_FIX", PIPE_FIX, PIPE_FIX},       {HardEvent::FIX_V, "FIX_V", PIPE_FIX, PIPE_V},
        {HardEvent::V_FIX, "V_FIX", PIPE_V, PIPE_FIX},
    };
    return events;
}

inline const EventInfo& Event(HardEvent event) { return Events()[static_cast<int>(event)]; }

// What orders an access of pipe `from` before one of pipe `to`: the HardEvent from_to if
// there is one, else PipeBarrier<PIPE_ALL>.
inline std::string NeededSync(int from, int to)
{
    const std::string name = std::string(PipeShort(from)) + "_" + PipeShort(to);
    for (int e = 0; e < EVENT_COUNT; ++e) {
        if (name == Events()[e].name) {
            return "SetFlag/WaitFlag<HardEvent::" + name + ">";
        }
    }
    return "PipeBarrier<PIPE_ALL> (no HardEvent " + name + ")";
}

// One recorded access: which call (the API, the kernel instruction running, the ordinal of
// the access on this core), its pipe and that pipe's clock, and the byte range.
struct Site {
    const char* api;
    int64_t inst;
    const char* instText;
    uint64_t ordinal;
    int pipe;
    uint32_t stamp;
    bool write;
    int buffer;
    uint64_t lo;
    uint64_t hi;
};

// The race state of one core: pipe clocks, flags, event ids, accesses.
struct Pipes {
    uint32_t clock[PIPES][PIPES] = {};
    bool flag[EVENT_COUNT][QUE_MAX_EVENT] = {};
    uint32_t flagClock[EVENT_COUNT][QUE_MAX_EVENT][PIPES] = {};
    // Who holds each event id of the TPipe: 0 nobody, 1 AllocEventID, 2 a TQue.
    uint8_t owner[EVENT_COUNT][QUE_MAX_EVENT] = {};
    std::vector<Site> sites;
    // Per buffer, per 32-byte block: 1 + the site of the last write, then of the last read
    // of each pipe (0: none).
    std::vector<uint32_t> shadow[5];
    // Whether the next access of the same call may extend the last site.
    bool mergeable = false;
};

inline Pipes& CurrentPipes()
{
    static thread_local Pipes pipes;
    return pipes;
}

inline void ResetPipes() { CurrentPipes() = Pipes{}; }

inline void Join(uint32_t* into, const uint32_t* from)
{
    for (int p = 0; p < PIPES; ++p) {
        into[p] = into[p] > from[p] ? into[p] : from[p];
    }
}

// Issues one instruction to `pipe`: after the scalar work before it, one tick of the pipe.
inline void Issue(int pipe)
{
    Pipes& ps = CurrentPipes();
    if (pipe != PIPE_S) {
        Join(ps.clock[pipe], ps.clock[PIPE_S]);
    }
    ++ps.clock[pipe][pipe];
}

inline std::string SiteText(const Site& s)
{
    std::string text = s.api;
    if (s.inst >= 0) {
        text += " (inst " + std::to_string(s.inst) + " `" + s.instText + "`, access " + std::to_string(s.ordinal) + ")";
    } else {
        text += " (access " + std::to_string(s.ordinal) + ")";
    }
    return text + " on " + PipeName(s.pipe);
}

[[noreturn]] inline void Race(const Site& before, const Site& now, const char* bufferName)
{
    const uint64_t lo = before.lo > now.lo ? before.lo : now.lo;
    const uint64_t hi = before.hi < now.hi ? before.hi : now.hi;
    const char* kind = before.write ? (now.write ? "write after write" : "read after write") : "write after read";
    Fail(now.api, "pipe race",
         std::string(kind) + " on " + bufferName + " bytes [" + std::to_string(lo) + ", " + std::to_string(hi) +
             "): " + SiteText(now) + (now.write ? " writes" : " reads") + " what " + SiteText(before) +
             (before.write ? " wrote" : " read") + ", and nothing orders them: needs " +
             NeededSync(before.pipe, now.pipe) + " between them");
}

// Records an access of `pipe` to bytes [lo, hi) of local buffer `buffer` (capacity bytes
// `capacity`) and checks it against the earlier accesses of the other pipes.
inline void Access(const char* api, int pipe, int buffer, const char* bufferName, uint64_t capacity, uint64_t lo,
                   uint64_t hi, bool write)
{
    if (hi <= lo) {
        return;
    }
    Pipes& ps = CurrentPipes();
    const State& s = CurrentState();
    std::vector<uint32_t>& shadow = ps.shadow[buffer];
    if (shadow.empty()) {
        shadow.assign((capacity + 31) / 32 * (1 + PIPES), 0);
    }
    bool merged = false;
    if (ps.mergeable && !ps.sites.empty()) {
        Site& last = ps.sites.back();
        if (last.api == api && last.pipe == pipe && last.write == write && last.buffer == buffer &&
            last.inst == s.inst) {
            last.lo = lo < last.lo ? lo : last.lo;
            last.hi = hi > last.hi ? hi : last.hi;
            merged = true;
        }
    }
    if (!merged) {
        Issue(pipe);
        ps.sites.push_back(Site{api, s.inst, s.instText, ps.sites.size(), pipe, ps.clock[pipe][pipe], write, buffer, lo,
                                hi});
        ps.mergeable = true;
    }
    const uint32_t self = static_cast<uint32_t>(ps.sites.size());
    Site now = ps.sites.back();
    now.lo = lo;
    now.hi = hi;
    const uint32_t* seen = ps.clock[pipe];
    const uint64_t end = (hi + 31) / 32 < shadow.size() / (1 + PIPES) ? (hi + 31) / 32 : shadow.size() / (1 + PIPES);
    for (uint64_t b = lo / 32; b < end; ++b) {
        uint32_t* slot = &shadow[b * (1 + PIPES)];
        if (slot[0] != 0 && slot[0] != self) {
            const Site& w = ps.sites[slot[0] - 1];
            if (w.pipe != pipe && w.stamp > seen[w.pipe]) {
                Race(w, now, bufferName);
            }
        }
        if (write) {
            for (int p = 0; p < PIPES; ++p) {
                if (p == pipe || slot[1 + p] == 0) {
                    continue;
                }
                const Site& r = ps.sites[slot[1 + p] - 1];
                if (r.stamp > seen[p]) {
                    Race(r, now, bufferName);
                }
            }
            slot[0] = self;
            for (int p = 0; p < PIPES; ++p) {
                slot[1 + p] = 0;
            }
        } else {
            slot[1 + pipe] = self;
        }
    }
}

inline void CheckEventId(const char* api, HardEvent event, int32_t id)
{
    if (static_cast<int>(event) < 0 || static_cast<int>(event) >= EVENT_COUNT) {
        Fail(api, "event", "no such HardEvent");
    }
    if (id < 0 || id >= QUE_MAX_EVENT) {
        Fail(api, "event id",
             "event id " + std::to_string(id) + " of HardEvent::" + Event(event).name + " is not in 0.." +
                 std::to_string(QUE_MAX_EVENT - 1));
    }
}

// SetFlag: an instruction of the event's source pipe; the flag keeps that pipe's clock.
inline void SetFlagBit(const char* api, HardEvent event, int32_t id, bool byQueue)
{
    CheckEventId(api, event, id);
    Pipes& ps = CurrentPipes();
    const int e = static_cast<int>(event);
    if (!byQueue && ps.owner[e][id] == 2) {
        Fail(api, "event id",
             std::string("event id ") + std::to_string(id) + " of HardEvent::" + Event(event).name +
                 " is held by a TQue of the TPipe (its EnQue / FreeTensor set it): take ids with "
                 "TPipe::AllocEventID or FetchEventID (AllocEventID.md), not a fixed EVENT_ID");
    }
    if (ps.flag[e][id]) {
        Fail(api, "synchronisation",
             std::string("SetFlag of HardEvent::") + Event(event).name + " id " + std::to_string(id) +
                 ", which is already set and not yet waited for: a flag is one bit, the first set would be lost");
    }
    const int src = Event(event).src;
    Issue(src);
    ps.flag[e][id] = true;
    for (int p = 0; p < PIPES; ++p) {
        ps.flagClock[e][id][p] = ps.clock[src][p];
    }
    ps.mergeable = false;
}

// WaitFlag: an instruction of the event's destination pipe, after the flag's setter.
inline void WaitFlagBit(const char* api, HardEvent event, int32_t id)
{
    CheckEventId(api, event, id);
    Pipes& ps = CurrentPipes();
    const int e = static_cast<int>(event);
    if (!ps.flag[e][id]) {
        Fail(api, "synchronisation",
             std::string("WaitFlag of HardEvent::") + Event(event).name + " id " + std::to_string(id) +
                 " without a SetFlag before it: the pipe would wait forever");
    }
    const int dst = Event(event).dst;
    Issue(dst);
    Join(ps.clock[dst], ps.flagClock[e][id]);
    ps.flag[e][id] = false;
    ps.mergeable = false;
}

// PipeBarrier<PIPE_ALL>: every pipe after everything issued before it.
inline void BarrierAll()
{
    Pipes& ps = CurrentPipes();
    uint32_t all[PIPES] = {};
    for (int p = 0; p < PIPES; ++p) {
        Join(all, ps.clock[p]);
    }
    for (int p = 0; p < PIPES; ++p) {
        Join(ps.clock[p], all);
    }
    ps.mergeable = false;
}

// The TPipe's event ids (AllocEventID.md: an id is held until ReleaseEventID; FetchEventID
// returns a free id without holding it).
inline int32_t FreeEventId(const char* api, HardEvent event)
{
    const Pipes& ps = CurrentPipes();
    for (int32_t id = 0; id < QUE_MAX_EVENT; ++id) {
        if (ps.owner[static_cast<int>(event)][id] == 0 && !ps.flag[static_cast<int>(event)][id]) {
            return id;
        }
    }
    Fail(api, "event id",
         std::string("all ") + std::to_string(QUE_MAX_EVENT) + " ids of HardEvent::" + Event(event).name +
             " are held or set (ReleaseEventID / WaitFlag first)");
}

inline int32_t HoldEventId(const char* api, HardEvent event, uint8_t owner)
{
    const int32_t id = FreeEventId(api, event);
    CurrentPipes().owner[static_cast<int>(event)][id] = owner;
    return id;
}

inline void ReleaseEventId(const char* api, HardEvent event, int32_t id, uint8_t owner)
{
    CheckEventId(api, event, id);
    uint8_t& held = CurrentPipes().owner[static_cast<int>(event)][id];
    if (held != owner) {
        Fail(api, "event id",
             std::string("ReleaseEventID of HardEvent::") + Event(event).name + " id " + std::to_string(id) +
                 (held == 0 ? ", which is not held (AllocEventID first)" : ", which a TQue holds"));
    }
    held = 0;
}

}  // namespace host

// The device's pipes run concurrently: PipeBarrier<pipe> orders the instructions of one
// pipe (taken as given here), PipeBarrier<PIPE_ALL> every pipe after all before it.
template <pipe_t pipe>
inline void PipeBarrier()
{
    if (pipe == PIPE_ALL) {
        host::BarrierAll();
    } else {
        host::Issue(pipe);
        host::CurrentPipes().mergeable = false;
    }
}

template <HardEvent event>
inline void SetFlag(event_t id)
{
    host::SetFlagBit("SetFlag", event, id, false);
}

template <HardEvent event>
inline void WaitFlag(event_t id)
{
    host::WaitFlagBit("WaitFlag", event, id);
}

}  // namespace AscendC

#endif  // ASCENDC_HOST_PIPES_H

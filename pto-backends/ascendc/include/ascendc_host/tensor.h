// Host implementation of the Ascend C API: LocalTensor, GlobalTensor, TPipe, TQue, TBuf.
#ifndef ASCENDC_HOST_TENSOR_H
#define ASCENDC_HOST_TENSOR_H

#include <memory>
#include <vector>

#include "common.h"
#include "pipes.h"

namespace AscendC {
namespace host {

// The physical on-core buffers.
enum class Buffer : uint8_t { UB, L1, L0A, L0B, L0C };

inline const char* BufferName(Buffer b)
{
    switch (b) {
        case Buffer::UB: return "UB";
        case Buffer::L1: return "L1";
        case Buffer::L0A: return "L0A";
        case Buffer::L0B: return "L0B";
        case Buffer::L0C: return "L0C";
    }
    return "?";
}

inline uint64_t Capacity(Buffer b)
{
    switch (b) {
        case Buffer::UB: return ASCENDC_HOST_UB_BYTES;
        case Buffer::L1: return ASCENDC_HOST_L1_BYTES;
        case Buffer::L0A: return ASCENDC_HOST_L0A_BYTES;
        case Buffer::L0B: return ASCENDC_HOST_L0B_BYTES;
        case Buffer::L0C: return ASCENDC_HOST_L0C_BYTES;
    }
    return 0;
}

inline Buffer BufferOf(TPosition pos)
{
    switch (pos) {
        case TPosition::A1:
        case TPosition::B1:
        case TPosition::C1: return Buffer::L1;
        case TPosition::A2: return Buffer::L0A;
        case TPosition::B2: return Buffer::L0B;
        case TPosition::CO1: return Buffer::L0C;
        default: return Buffer::UB;
    }
}

inline const char* PositionName(TPosition pos)
{
    switch (pos) {
        case TPosition::GM: return "GM";
        case TPosition::A1: return "A1";
        case TPosition::A2: return "A2";
        case TPosition::B1: return "B1";
        case TPosition::B2: return "B2";
        case TPosition::C1: return "C1";
        case TPosition::C2: return "C2";
        case TPosition::CO1: return "CO1";
        case TPosition::CO2: return "CO2";
        case TPosition::VECIN: return "VECIN";
        case TPosition::VECOUT: return "VECOUT";
        case TPosition::VECCALC: return "VECCALC";
        case TPosition::LCM: return "LCM";
    }
    return "?";
}

}  // namespace host

template <typename T>
class LocalTensor;

namespace host {

// Bytes reserved by the live TPipe per buffer, and the memory behind them.
struct Arena {
    std::vector<uint8_t> bytes;
    uint64_t used = 0;
};

template <typename T>
void Touch(const char* api, int pipe, const LocalTensor<T>& t, uint64_t index, uint64_t count, bool write);

}  // namespace host

template <typename T>
class LocalTensor {
public:
    LocalTensor() = default;
    LocalTensor(T* data, uint32_t size, TPosition pos, uint64_t address)
        : data_(data), size_(size), pos_(pos), address_(address)
    {
    }

    // The tensor from element `offset` on.
    LocalTensor operator[](const uint32_t offset) const
    {
        if (offset > size_) {
            host::Fail("LocalTensor::operator[]", "bounds",
                       "offset " + std::to_string(offset) + " past a tensor of " + std::to_string(size_) +
                           " elements");
        }
        return LocalTensor(data_ + offset, size_ - offset, pos_, address_ + static_cast<uint64_t>(offset) * sizeof(T));
    }

    // Scalar accesses: instructions of the scalar pipe (PIPE_S).
    T GetValue(const uint32_t index) const
    {
        Check("LocalTensor::GetValue", index, 1);
        host::Touch("LocalTensor::GetValue", PIPE_S, *this, index, 1, false);
        return data_[index];
    }

    void SetValue(const uint32_t index, const T value) const
    {
        Check("LocalTensor::SetValue", index, 1);
        host::Touch("LocalTensor::SetValue", PIPE_S, *this, index, 1, true);
        data_[index] = value;
    }

    uint32_t GetSize() const { return size_; }
    TPosition GetPosition() const { return pos_; }

    template <typename U>
    LocalTensor<U> ReinterpretCast() const
    {
        return LocalTensor<U>(reinterpret_cast<U*>(data_), static_cast<uint32_t>(size_ * sizeof(T) / sizeof(U)),
                              pos_, address_);
    }

    // Host-side access for the API's implementation.
    T* Data() const { return data_; }
    uint64_t Address() const { return address_; }

    // Fails unless elements [index, index + count) are inside the tensor.
    void Check(const char* api, uint64_t index, uint64_t count) const
    {
        if (data_ == nullptr) {
            host::Fail(api, "bounds", "the tensor is not bound to a buffer");
        }
        if (index + count > size_) {
            host::Fail(api, "bounds",
                       "elements [" + std::to_string(index) + ", " + std::to_string(index + count) +
                           ") of a tensor of " + std::to_string(size_) + " elements in " +
                           host::PositionName(pos_));
        }
    }

private:
    T* data_ = nullptr;
    uint32_t size_ = 0;
    TPosition pos_ = TPosition::VECCALC;
    uint64_t address_ = 0;
};

namespace host {

// Records an access of `pipe` to elements [index, index + count) of `t` for the race
// checker (pipes.h).
template <typename T>
inline void Touch(const char* api, int pipe, const LocalTensor<T>& t, uint64_t index, uint64_t count, bool write)
{
    const Buffer b = BufferOf(t.GetPosition());
    const uint64_t lo = t.Address() + index * sizeof(T);
    Access(api, pipe, static_cast<int>(b), BufferName(b), Capacity(b), lo, lo + count * sizeof(T), write);
}

// The span of elements a strided call touches, for the race checker.
struct Span {
    uint64_t lo = ~0ull;
    uint64_t hi = 0;
    void Add(uint64_t i)
    {
        lo = i < lo ? i : lo;
        hi = i + 1 > hi ? i + 1 : hi;
    }
    template <typename T>
    void Touch(const char* api, int pipe, const LocalTensor<T>& t, bool write) const
    {
        if (hi > lo) {
            host::Touch(api, pipe, t, lo, hi - lo, write);
        }
    }
};

// The events a TQue at `pos` sets and waits (kernel_event.h, GetQueEvt): `forward` from
// EnQue to DeQue, `back` from FreeTensor to the next AllocTensor of the buffer. A queue
// within one pipe (VECCALC) has none.
struct QueEvents {
    bool synced;
    HardEvent forward;
    HardEvent back;
};

constexpr QueEvents QueEventsOf(TPosition pos)
{
    switch (pos) {
        case TPosition::VECIN: return {true, HardEvent::MTE2_V, HardEvent::V_MTE2};
        case TPosition::VECOUT: return {true, HardEvent::V_MTE3, HardEvent::MTE3_V};
        case TPosition::A1:
        case TPosition::B1: return {true, HardEvent::MTE2_MTE1, HardEvent::MTE1_MTE2};
        case TPosition::A2:
        case TPosition::B2: return {true, HardEvent::MTE1_M, HardEvent::M_MTE1};
        case TPosition::CO1: return {true, HardEvent::M_FIX, HardEvent::FIX_M};
        default: return {false, HardEvent::V_V, HardEvent::V_V};
    }
}

}  // namespace host

template <typename T>
class GlobalTensor {
public:
    void SetGlobalBuffer(__gm__ T* buffer, uint64_t bufferSize)
    {
        data_ = buffer;
        size_ = bufferSize;
    }

    GlobalTensor operator[](const uint64_t offset) const
    {
        if (offset > size_) {
            host::Fail("GlobalTensor::operator[]", "bounds",
                       "offset " + std::to_string(offset) + " past a GM tensor of " + std::to_string(size_) +
                           " elements");
        }
        GlobalTensor t;
        t.data_ = data_ + offset;
        t.size_ = size_ - offset;
        return t;
    }

    T GetValue(const uint64_t index) const
    {
        Check("GlobalTensor::GetValue", index, 1);
        return data_[index];
    }

    void SetValue(const uint64_t index, const T value) const
    {
        Check("GlobalTensor::SetValue", index, 1);
        data_[index] = value;
    }

    uint64_t GetSize() const { return size_; }
    T* Data() const { return data_; }

    void Check(const char* api, uint64_t index, uint64_t count) const
    {
        if (data_ == nullptr) {
            host::Fail(api, "bounds", "SetGlobalBuffer was not called");
        }
        if (index + count > size_) {
            host::Fail(api, "GM bounds",
                       "elements [" + std::to_string(index) + ", " + std::to_string(index + count) +
                           ") of a GM tensor of " + std::to_string(size_) + " elements");
        }
    }

private:
    T* data_ = nullptr;
    uint64_t size_ = 0;
};

// The memory one TQue or TBuf was given by TPipe::InitBuffer.
struct TBufferHandle {
    uint8_t* data = nullptr;
    uint64_t address = 0;
    uint32_t len = 0;
    uint8_t num = 0;
    TPosition pos = TPosition::VECCALC;
};

template <TPosition pos, int32_t depth>
class TQue {
public:
    TQue() = default;
    TQue(const TQue&) = delete;
    TQue& operator=(const TQue&) = delete;

    ~TQue()
    {
        for (uint8_t i = 0; i < buffer_.num; ++i) {
            if (state_[i] != Free) {
                host::Fail("TQue", "queue discipline",
                           std::string("a tensor of the ") + host::PositionName(pos) + " queue at " +
                               host::BufferName(host::BufferOf(pos)) + " address " +
                               std::to_string(buffer_.address + i * static_cast<uint64_t>(buffer_.len)) +
                               " was not freed (FreeTensor) before the kernel ended");
            }
        }
    }

    template <typename T>
    LocalTensor<T> AllocTensor()
    {
        Bound("TQue::AllocTensor");
        for (uint8_t i = 0; i < buffer_.num; ++i) {
            if (state_[i] == Free) {
                state_[i] = Allocated;
                if (freeId_[i] >= 0) {
                    host::WaitFlagBit("TQue::AllocTensor", events_.back, freeId_[i]);
                    host::ReleaseEventId("TQue::AllocTensor", events_.back, freeId_[i], 2);
                    freeId_[i] = -1;
                }
                return Slot<T>(i);
            }
        }
        host::Fail("TQue::AllocTensor", "queue discipline",
                   std::string("all ") + std::to_string(buffer_.num) + " buffer(s) of the " + host::PositionName(pos) +
                       " queue are in use: AllocTensor past the queue's depth (FreeTensor first)");
    }

    template <typename T>
    bool EnQue(const LocalTensor<T>& tensor)
    {
        const int i = Find("TQue::EnQue", tensor.Data());
        if (state_[i] != Allocated) {
            host::Fail("TQue::EnQue", "queue discipline", "EnQue of a tensor that is already queued");
        }
        if (static_cast<int32_t>(fifo_.size()) >= depth) {
            host::Fail("TQue::EnQue", "queue discipline",
                       "EnQue past the queue depth " + std::to_string(depth));
        }
        state_[i] = Queued;
        fifo_.push_back(i);
        if (events_.synced) {
            enQueId_[i] = host::HoldEventId("TQue::EnQue", events_.forward, 2);
            host::SetFlagBit("TQue::EnQue", events_.forward, enQueId_[i], true);
        }
        return true;
    }

    template <typename T>
    LocalTensor<T> DeQue()
    {
        Bound("TQue::DeQue");
        if (fifo_.empty()) {
            host::Fail("TQue::DeQue", "queue discipline",
                       std::string("DeQue of an empty ") + host::PositionName(pos) + " queue (EnQue first)");
        }
        const int i = fifo_.front();
        fifo_.erase(fifo_.begin());
        state_[i] = Allocated;
        if (enQueId_[i] >= 0) {
            host::WaitFlagBit("TQue::DeQue", events_.forward, enQueId_[i]);
            host::ReleaseEventId("TQue::DeQue", events_.forward, enQueId_[i], 2);
            enQueId_[i] = -1;
        }
        return Slot<T>(static_cast<uint8_t>(i));
    }

    template <typename T>
    void FreeTensor(LocalTensor<T>& tensor)
    {
        const int i = Find("TQue::FreeTensor", tensor.Data());
        if (state_[i] == Free) {
            host::Fail("TQue::FreeTensor", "queue discipline", "FreeTensor of a tensor that is not allocated");
        }
        if (state_[i] == Queued) {
            host::Fail("TQue::FreeTensor", "queue discipline", "FreeTensor of a tensor still in the queue (DeQue first)");
        }
        state_[i] = Free;
        if (events_.synced) {
            freeId_[i] = host::HoldEventId("TQue::FreeTensor", events_.back, 2);
            host::SetFlagBit("TQue::FreeTensor", events_.back, freeId_[i], true);
        }
    }

    TBufferHandle& Handle() { return buffer_; }
    void Reset(uint8_t num)
    {
        state_.assign(num, Free);
        fifo_.clear();
        enQueId_.assign(num, -1);
        freeId_.assign(num, -1);
    }

private:
    enum SlotState { Free, Allocated, Queued };

    void Bound(const char* api) const
    {
        if (buffer_.data == nullptr) {
            host::Fail(api, "initialisation", "the queue has no buffer: call TPipe::InitBuffer first");
        }
    }

    template <typename T>
    LocalTensor<T> Slot(uint8_t i) const
    {
        return LocalTensor<T>(reinterpret_cast<T*>(buffer_.data + static_cast<uint64_t>(i) * buffer_.len),
                              static_cast<uint32_t>(buffer_.len / sizeof(T)), pos,
                              buffer_.address + static_cast<uint64_t>(i) * buffer_.len);
    }

    int Find(const char* api, const void* data) const
    {
        Bound(api);
        for (uint8_t i = 0; i < buffer_.num; ++i) {
            if (buffer_.data + static_cast<uint64_t>(i) * buffer_.len == data) {
                return i;
            }
        }
        host::Fail(api, "queue discipline", "the tensor does not belong to this queue");
    }

    TBufferHandle buffer_;
    std::vector<SlotState> state_;
    std::vector<int> fifo_;
    // The event ids each buffer holds: of its EnQue until its DeQue, of its FreeTensor until
    // its next AllocTensor (-1: none).
    static constexpr host::QueEvents events_ = host::QueEventsOf(pos);
    std::vector<int32_t> enQueId_;
    std::vector<int32_t> freeId_;
};

template <TPosition pos>
class TBuf {
public:
    template <typename T>
    LocalTensor<T> Get() const
    {
        return Get<T>(buffer_.len / sizeof(T));
    }

    template <typename T>
    LocalTensor<T> Get(uint32_t len) const
    {
        return GetWithOffset<T>(len, 0);
    }

    template <typename T>
    LocalTensor<T> GetWithOffset(uint32_t size, uint32_t bufOffset) const
    {
        if (buffer_.data == nullptr) {
            host::Fail("TBuf::Get", "initialisation", "the buffer has no memory: call TPipe::InitBuffer first");
        }
        if (bufOffset % 32 != 0) {
            host::Fail("TBuf::GetWithOffset", "32-byte alignment",
                       "offset " + std::to_string(bufOffset) + " is not a multiple of 32 bytes");
        }
        if (static_cast<uint64_t>(bufOffset) + static_cast<uint64_t>(size) * sizeof(T) > buffer_.len) {
            host::Fail("TBuf::GetWithOffset", "bounds",
                       std::to_string(size) + " elements of " + std::to_string(sizeof(T)) + " bytes at offset " +
                           std::to_string(bufOffset) + " exceed the buffer's " + std::to_string(buffer_.len) + " bytes");
        }
        return LocalTensor<T>(reinterpret_cast<T*>(buffer_.data + bufOffset), size, pos, buffer_.address + bufOffset);
    }

    TBufferHandle& Handle() { return buffer_; }

private:
    TBufferHandle buffer_;
};

class TPipe;

namespace host {

inline TPipe*& CurrentTPipe()
{
    static thread_local TPipe* pipe = nullptr;
    return pipe;
}

}  // namespace host

// GetTPipePtr(): the TPipe of the kernel running on this core.
inline TPipe* GetTPipePtr()
{
    if (host::CurrentTPipe() == nullptr) {
        host::Fail("GetTPipePtr", "initialisation", "no TPipe is alive on this core");
    }
    return host::CurrentTPipe();
}

class TPipe {
public:
    TPipe()
    {
        // A kernel's TPipe starts its core's pipes, flags and event ids afresh.
        host::ResetPipes();
        host::CurrentTPipe() = this;
        for (int b = 0; b < 5; ++b) {
            const uint64_t capacity = host::Capacity(static_cast<host::Buffer>(b));
            // Fresh device memory is not zero: 0xff reads as NaN in f16 and f32.
            arenas_[b].bytes.assign(capacity, 0xff);
        }
    }
    TPipe(const TPipe&) = delete;
    TPipe& operator=(const TPipe&) = delete;

    template <TPosition pos, int32_t depth>
    bool InitBuffer(TQue<pos, depth>& que, uint8_t num, uint32_t len)
    {
        if (num == 0) {
            host::Fail("TPipe::InitBuffer", "queue discipline", "a queue needs at least one buffer");
        }
        Reserve("TPipe::InitBuffer", que.Handle(), pos, num, len);
        que.Reset(num);
        return true;
    }

    template <TPosition pos>
    bool InitBuffer(TBuf<pos>& buf, uint32_t len)
    {
        Reserve("TPipe::InitBuffer", buf.Handle(), pos, 1, len);
        return true;
    }

    ~TPipe()
    {
        if (host::CurrentTPipe() == this) {
            host::CurrentTPipe() = nullptr;
        }
    }

    void Destroy() {}

    // AllocEventID.md: an id of `evt` held until ReleaseEventID.
    template <HardEvent evt>
    TEventID AllocEventID()
    {
        return static_cast<TEventID>(host::HoldEventId("TPipe::AllocEventID", evt, 1));
    }

    template <HardEvent evt>
    void ReleaseEventID(TEventID id)
    {
        host::ReleaseEventId("TPipe::ReleaseEventID", evt, id, 1);
    }

    // FetchEventID.md: an id of `evt` free now, not held: for a SetFlag and its WaitFlag
    // issued together.
    template <HardEvent evt>
    TEventID FetchEventID()
    {
        return static_cast<TEventID>(host::FreeEventId("TPipe::FetchEventID", evt));
    }

    TEventID FetchEventID(HardEvent evt) { return static_cast<TEventID>(host::FreeEventId("TPipe::FetchEventID", evt)); }

private:
    void Reserve(const char* api, TBufferHandle& handle, TPosition pos, uint8_t num, uint32_t len)
    {
        if (handle.data != nullptr) {
            host::Fail(api, "initialisation", "the queue or buffer was already initialised");
        }
        if (len % 32 != 0) {
            host::Fail(api, "32-byte alignment",
                       "buffer length " + std::to_string(len) + " is not a multiple of 32 bytes");
        }
        const host::Buffer b = host::BufferOf(pos);
        const int32_t core = host::CurrentState().coreType;
        if (core == AIC && b == host::Buffer::UB) {
            host::Fail(api, "split cores",
                       std::string(host::PositionName(pos)) +
                           " is in UB, which the cube core (AIC) does not have: UB is on the vector cores "
                           "(AIV), which the cube core reaches only through GM (a workspace) and cross-core flags");
        }
        if (core == AIV && b != host::Buffer::UB) {
            host::Fail(api, "split cores",
                       std::string(host::PositionName(pos)) + " is in " + host::BufferName(b) +
                           ", which the vector core (AIV) does not have: L1 and L0A/B/C are on the cube core "
                           "(AIC), which the vector cores reach only through GM (a workspace) and cross-core flags");
        }
        host::Arena& arena = arenas_[static_cast<int>(b)];
        const uint64_t bytes = static_cast<uint64_t>(num) * len;
        if (arena.used + bytes > arena.bytes.size()) {
            host::Fail(api, "buffer capacity",
                       std::string(host::PositionName(pos)) + " needs " + std::to_string(bytes) + " bytes after " +
                           std::to_string(arena.used) + " already reserved, " + std::to_string(arena.used + bytes) +
                           " in total: over the device's " + std::to_string(arena.bytes.size()) + " bytes of " +
                           host::BufferName(b));
        }
        handle.data = arena.bytes.data() + arena.used;
        handle.address = arena.used;
        handle.len = len;
        handle.num = num;
        handle.pos = pos;
        arena.used += bytes;
    }

    host::Arena arenas_[5];
};

}  // namespace AscendC

#endif  // ASCENDC_HOST_TENSOR_H

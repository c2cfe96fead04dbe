// Host implementation of the Ascend C API: DataCopy and DataCopyPad between GM and UB, and
// within UB.
#ifndef ASCENDC_HOST_COPY_H
#define ASCENDC_HOST_COPY_H

#include "tensor.h"

namespace AscendC {

struct DataCopyParams {
    uint16_t blockCount = 1;  // blocks
    uint16_t blockLen = 0;    // 32-byte units
    uint16_t srcStride = 0;   // 32-byte units between blocks
    uint16_t dstStride = 0;   // 32-byte units between blocks
};

struct DataCopyExtParams {
    uint16_t blockCount = 1;
    uint32_t blockLen = 0;   // bytes
    uint32_t srcStride = 0;  // GM -> UB: bytes; UB -> GM: 32-byte units
    uint32_t dstStride = 0;  // GM -> UB: 32-byte units; UB -> GM: bytes
    uint32_t rsv = 0;
};

template <typename T>
struct DataCopyPadExtParams {
    bool isPad = false;
    uint8_t leftPadding = 0;   // elements
    uint8_t rightPadding = 0;  // elements
    T paddingValue = T();
};

namespace host {

template <typename T>
inline void CheckUbAligned(const char* api, const LocalTensor<T>& t, const char* which)
{
    if (t.Address() % 32 != 0) {
        Fail(api, "32-byte alignment",
             std::string(which) + " UB address " + std::to_string(t.Address()) + " is not 32-byte aligned");
    }
}

inline void CheckBlocks(const char* api, uint32_t blockCount, uint32_t blockLenBytes)
{
    if (blockCount == 0 || blockCount > 4095) {
        Fail(api, "block count", "blockCount " + std::to_string(blockCount) + " is not in 1..4095");
    }
    if (blockLenBytes == 0) {
        Fail(api, "block length", "blockLen is 0");
    }
}

// The pipe of a copy between on-core buffers: UB -> UB is a vector instruction
// (copy_ubuf_to_ubuf), UB -> L1 goes through MTE3 (kernel_event.h, GetQueEvt: UB -> L1 is
// MTE3_MTE1).
inline int LocalCopyPipe(TPosition dst) { return BufferOf(dst) == Buffer::UB ? PIPE_V : PIPE_MTE3; }

inline uint64_t Align32(uint64_t bytes) { return (bytes + 31) / 32 * 32; }

template <typename T>
inline void CheckCount(const char* api, uint32_t count)
{
    if ((static_cast<uint64_t>(count) * sizeof(T)) % 32 != 0) {
        Fail(api, "32-byte alignment",
             std::to_string(count) + " elements of " + std::to_string(sizeof(T)) + " bytes are " +
                 std::to_string(static_cast<uint64_t>(count) * sizeof(T)) +
                 " bytes, not a multiple of 32: use DataCopyPad for ragged lengths");
    }
}

}  // namespace host

// GM -> UB (or L1), in 32-byte blocks.
template <typename T>
inline void DataCopy(const LocalTensor<T>& dst, const GlobalTensor<T>& src, const DataCopyParams& p)
{
    const char* api = "DataCopy";
    host::CheckBlocks(api, p.blockCount, p.blockLen * 32u);
    host::CheckUbAligned(api, dst, "destination");
    const uint64_t len = p.blockLen * 32u / sizeof(T);
    host::Span ds;
    for (uint32_t i = 0; i < p.blockCount; ++i) {
        const uint64_t s = i * (p.blockLen + p.srcStride) * 32u / sizeof(T);
        const uint64_t d = i * (p.blockLen + p.dstStride) * 32u / sizeof(T);
        src.Check(api, s, len);
        dst.Check(api, d, len);
        ds.Add(d);
        ds.Add(d + len - 1);
        std::memcpy(dst.Data() + d, src.Data() + s, len * sizeof(T));
    }
    ds.Touch(api, PIPE_MTE2, dst, true);  // GM -> UB / L1: MTE2
}

// UB (or L1) -> GM, in 32-byte blocks.
template <typename T>
inline void DataCopy(const GlobalTensor<T>& dst, const LocalTensor<T>& src, const DataCopyParams& p)
{
    const char* api = "DataCopy";
    host::CheckBlocks(api, p.blockCount, p.blockLen * 32u);
    host::CheckUbAligned(api, src, "source");
    const uint64_t len = p.blockLen * 32u / sizeof(T);
    host::Span ss;
    for (uint32_t i = 0; i < p.blockCount; ++i) {
        const uint64_t s = i * (p.blockLen + p.srcStride) * 32u / sizeof(T);
        const uint64_t d = i * (p.blockLen + p.dstStride) * 32u / sizeof(T);
        src.Check(api, s, len);
        dst.Check(api, d, len);
        ss.Add(s);
        ss.Add(s + len - 1);
        std::memcpy(dst.Data() + d, src.Data() + s, len * sizeof(T));
    }
    ss.Touch(api, PIPE_MTE3, src, false);  // UB -> GM: MTE3
}

// Between on-core buffers (UB -> UB, UB -> L1), in 32-byte blocks.
template <typename T>
inline void DataCopy(const LocalTensor<T>& dst, const LocalTensor<T>& src, const DataCopyParams& p)
{
    const char* api = "DataCopy";
    host::CheckBlocks(api, p.blockCount, p.blockLen * 32u);
    host::CheckUbAligned(api, dst, "destination");
    host::CheckUbAligned(api, src, "source");
    const uint64_t len = p.blockLen * 32u / sizeof(T);
    host::Span ss, ds;
    for (uint32_t i = 0; i < p.blockCount; ++i) {
        const uint64_t s = i * (p.blockLen + p.srcStride) * 32u / sizeof(T);
        const uint64_t d = i * (p.blockLen + p.dstStride) * 32u / sizeof(T);
        src.Check(api, s, len);
        dst.Check(api, d, len);
        ss.Add(s);
        ss.Add(s + len - 1);
        ds.Add(d);
        ds.Add(d + len - 1);
        std::memmove(dst.Data() + d, src.Data() + s, len * sizeof(T));
    }
    const int pipe = host::LocalCopyPipe(dst.GetPosition());
    ss.Touch(api, pipe, src, false);
    ds.Touch(api, pipe, dst, true);
}

// Contiguous forms: `count` elements, a multiple of 32 bytes.
template <typename T>
inline void DataCopy(const LocalTensor<T>& dst, const GlobalTensor<T>& src, const uint32_t count)
{
    host::CheckCount<T>("DataCopy", count);
    DataCopy(dst, src, DataCopyParams{1, static_cast<uint16_t>(count * sizeof(T) / 32), 0, 0});
}

template <typename T>
inline void DataCopy(const GlobalTensor<T>& dst, const LocalTensor<T>& src, const uint32_t count)
{
    host::CheckCount<T>("DataCopy", count);
    DataCopy(dst, src, DataCopyParams{1, static_cast<uint16_t>(count * sizeof(T) / 32), 0, 0});
}

template <typename T>
inline void DataCopy(const LocalTensor<T>& dst, const LocalTensor<T>& src, const uint32_t count)
{
    host::CheckCount<T>("DataCopy", count);
    const char* api = "DataCopy";
    host::CheckUbAligned(api, dst, "destination");
    host::CheckUbAligned(api, src, "source");
    src.Check(api, 0, count);
    dst.Check(api, 0, count);
    const int pipe = host::LocalCopyPipe(dst.GetPosition());
    host::Touch(api, pipe, src, 0, count, false);
    host::Touch(api, pipe, dst, 0, count, true);
    std::memmove(dst.Data(), src.Data(), static_cast<uint64_t>(count) * sizeof(T));
}

// GM -> UB with byte-exact blocks: each block lands 32-byte aligned in UB, padded (when
// isPad) with paddingValue on the left and right.
template <typename T>
inline void DataCopyPad(const LocalTensor<T>& dst, const GlobalTensor<T>& src, const DataCopyExtParams& p,
                        const DataCopyPadExtParams<T>& pad)
{
    const char* api = "DataCopyPad";
    host::CheckBlocks(api, p.blockCount, p.blockLen);
    host::CheckUbAligned(api, dst, "destination");
    if (p.blockLen % sizeof(T) != 0 || p.srcStride % sizeof(T) != 0) {
        host::Fail(api, "element alignment", "blockLen and srcStride must be whole elements");
    }
    const uint64_t elems = p.blockLen / sizeof(T);
    const uint64_t footprint = host::Align32((pad.leftPadding + elems + pad.rightPadding) * sizeof(T));
    if ((pad.leftPadding + pad.rightPadding) * sizeof(T) > 32) {
        host::Fail(api, "padding", "left + right padding exceeds 32 bytes");
    }
    host::Span ds;
    for (uint32_t i = 0; i < p.blockCount; ++i) {
        const uint64_t s = i * static_cast<uint64_t>(p.blockLen + p.srcStride) / sizeof(T);
        const uint64_t d = i * (footprint + p.dstStride * 32ull) / sizeof(T);
        src.Check(api, s, elems);
        dst.Check(api, d, footprint / sizeof(T));
        if (pad.isPad) {
            for (uint64_t e = 0; e < pad.leftPadding; ++e) {
                dst.Data()[d + e] = pad.paddingValue;
            }
            for (uint64_t e = 0; e < pad.rightPadding; ++e) {
                dst.Data()[d + pad.leftPadding + elems + e] = pad.paddingValue;
            }
        }
        std::memcpy(dst.Data() + d + pad.leftPadding, src.Data() + s, elems * sizeof(T));
        ds.Add(d);
        ds.Add(d + footprint / sizeof(T) - 1);
    }
    ds.Touch(api, PIPE_MTE2, dst, true);
}

// UB -> GM with byte-exact blocks: each block starts 32-byte aligned in UB.
template <typename T>
inline void DataCopyPad(const GlobalTensor<T>& dst, const LocalTensor<T>& src, const DataCopyExtParams& p)
{
    const char* api = "DataCopyPad";
    host::CheckBlocks(api, p.blockCount, p.blockLen);
    host::CheckUbAligned(api, src, "source");
    if (p.blockLen % sizeof(T) != 0 || p.dstStride % sizeof(T) != 0) {
        host::Fail(api, "element alignment", "blockLen and dstStride must be whole elements");
    }
    const uint64_t elems = p.blockLen / sizeof(T);
    const uint64_t footprint = host::Align32(p.blockLen);
    host::Span ss;
    for (uint32_t i = 0; i < p.blockCount; ++i) {
        const uint64_t s = i * (footprint + p.srcStride * 32ull) / sizeof(T);
        const uint64_t d = i * static_cast<uint64_t>(p.blockLen + p.dstStride) / sizeof(T);
        src.Check(api, s, elems);
        dst.Check(api, d, elems);
        ss.Add(s);
        ss.Add(s + elems - 1);
        std::memcpy(dst.Data() + d, src.Data() + s, elems * sizeof(T));
    }
    ss.Touch(api, PIPE_MTE3, src, false);
}

}  // namespace AscendC

#endif  // ASCENDC_HOST_COPY_H

// Host implementation of the Ascend C API: the cube path. GM / UB -> L1 (Nd2Nz),
// InitConstValue, LoadData L1 -> L0A / L0B, Mmad into L0C, Fixpipe out.
//
// Layouts, with c0 = 32 / sizeof(T) elements and 512-byte fractals of 16 x c0:
// - L1 (Nz): element (r, c) of a matrix with R rows (dstNzC0Stride) at
//   (c / c0) * R * c0 + r * c0 + c % c0: columns of fractals.
// - L0A and L0B: fractals in the order LoadData writes them, read by Mmad as rows of
//   fractals: element (r, c) of an [M, K] (L0A) or [K, N] (L0B) operand at
//   ((r / 16) * (cols / c0) + c / c0) * 16 * c0 + (r % 16) * c0 + c % c0.
// - L0C (f32, 16 x 16 fractals): element (r, c) of an [M, N] result at
//   (c / 16) * M * 16 + r * 16 + c % 16.
#ifndef ASCENDC_HOST_CUBE_H
#define ASCENDC_HOST_CUBE_H

#include <functional>

#include "copy.h"
#include "tensor.h"

namespace AscendC {

struct Nd2NzParams {
    uint16_t ndNum = 1;
    uint16_t nValue = 0;             // rows
    uint16_t dValue = 0;             // columns
    uint16_t srcNdMatrixStride = 0;  // elements between ND matrices
    uint16_t srcDValue = 0;          // elements between source rows
    uint16_t dstNzC0Stride = 0;      // 32-byte units between fractal columns
    uint16_t dstNzNStride = 1;       // 32-byte units between rows
    uint16_t dstNzMatrixStride = 0;  // elements between Nz matrices
};

template <typename T>
struct InitConstValueParams {
    uint16_t repeatTimes = 0;
    uint16_t blockNum = 0;  // 32-byte blocks per repeat
    uint16_t dstGap = 0;    // 32-byte blocks between repeats
    T initValue = T();
};

struct LoadData2DParams {
    uint16_t startIndex = 0;  // first source fractal
    uint8_t repeatTimes = 0;  // fractals
    uint16_t srcStride = 0;   // fractals between sources
    uint8_t sid = 0;
    uint16_t dstGap = 0;  // fractals between destinations, after the first
    bool ifTranspose = false;
    uint8_t addrMode = 0;
};

struct MmadParams {
    uint16_t m = 0;
    uint16_t n = 0;
    uint16_t k = 0;
    bool isBias = false;
    int32_t fmOffset = 0;
    bool enSsparse = false;
    bool enWinogradA = false;
    bool enWinogradB = false;
    uint8_t unitFlag = 0;
    bool kDirectionAlign = false;
    bool cmatrixSource = false;
    bool cmatrixInitVal = true;  // true: C = A B; false: C += A B
};

enum class QuantMode_t : uint8_t { NoQuant, F322F16, F322BF16, DEQF16, VDEQF16, QF322B8_PRE, REQ8, VREQ8 };

struct FixpipeParamsV220 {
    uint16_t nSize = 0;
    uint16_t mSize = 0;
    uint16_t srcStride = 0;  // rows of the L0C matrix between fractal columns
    uint32_t dstStride = 0;  // elements between destination rows
    QuantMode_t quantPre = QuantMode_t::NoQuant;
    uint64_t deqScalar = 0;
    uint16_t ndNum = 1;
    uint16_t srcNdStride = 0;
    uint16_t dstNdStride = 0;
    bool reluEn = false;
    uint8_t unitFlag = 0;
    bool isChannelSplit = false;
};

namespace host {

template <typename T>
inline void CheckBuffer(const char* api, const LocalTensor<T>& t, Buffer expected, const char* which)
{
    if (BufferOf(t.GetPosition()) != expected) {
        Fail(api, "position",
             std::string(which) + " is in " + PositionName(t.GetPosition()) + ", not in " + BufferName(expected));
    }
}

template <typename T>
inline void Nd2Nz(const char* api, T* dst, uint64_t dstSize, const T* src, const Nd2NzParams& p,
                  const std::function<void(uint64_t, uint64_t)>& checkSrc)
{
    const uint64_t c0 = 32 / sizeof(T);
    if (p.ndNum != 1) {
        Fail(api, "unsupported", "ndNum other than 1 is not implemented on the host");
    }
    if (p.dstNzC0Stride < p.nValue) {
        Fail(api, "layout", "dstNzC0Stride " + std::to_string(p.dstNzC0Stride) + " is below nValue " +
                                std::to_string(p.nValue) + ": fractal columns would overlap");
    }
    for (uint64_t r = 0; r < p.nValue; ++r) {
        checkSrc(r * p.srcDValue, p.dValue);
        for (uint64_t c = 0; c < p.dValue; ++c) {
            const uint64_t d = (c / c0) * p.dstNzC0Stride * c0 + r * p.dstNzNStride * c0 + c % c0;
            if (d >= dstSize) {
                Fail(api, "bounds", "Nz element " + std::to_string(d) + " past a tensor of " + std::to_string(dstSize));
            }
            dst[d] = src[r * p.srcDValue + c];
        }
    }
}

}  // namespace host

// GM -> L1, ND to Nz.
template <typename T>
inline void DataCopy(const LocalTensor<T>& dst, const GlobalTensor<T>& src, const Nd2NzParams& p)
{
    const char* api = "DataCopy(Nd2Nz)";
    host::CheckBuffer(api, dst, host::Buffer::L1, "dst");
    host::CheckUbAligned(api, dst, "destination");
    host::Nd2Nz<T>(api, dst.Data(), dst.GetSize(), src.Data(), p,
                   [&](uint64_t at, uint64_t n) { src.Check(api, at, n); });
}

// UB -> L1, ND to Nz.
template <typename T>
inline void DataCopy(const LocalTensor<T>& dst, const LocalTensor<T>& src, const Nd2NzParams& p)
{
    const char* api = "DataCopy(Nd2Nz)";
    host::CheckBuffer(api, dst, host::Buffer::L1, "dst");
    host::CheckBuffer(api, src, host::Buffer::UB, "src");
    host::CheckUbAligned(api, src, "source");
    host::Nd2Nz<T>(api, dst.Data(), dst.GetSize(), src.Data(), p,
                   [&](uint64_t at, uint64_t n) { src.Check(api, at, n); });
}

template <typename T>
inline void InitConstValue(const LocalTensor<T>& dst, const InitConstValueParams<T>& p)
{
    const char* api = "InitConstValue";
    host::CheckBuffer(api, dst, host::Buffer::L1, "dst");
    const uint64_t perBlock = 32 / sizeof(T);
    for (uint64_t r = 0; r < p.repeatTimes; ++r) {
        const uint64_t start = r * (p.blockNum + p.dstGap) * perBlock;
        dst.Check(api, start, p.blockNum * perBlock);
        for (uint64_t i = 0; i < p.blockNum * perBlock; ++i) {
            dst.Data()[start + i] = p.initValue;
        }
    }
}

// L1 -> L0A / L0B: `repeatTimes` 512-byte fractals from `startIndex`, `srcStride` apart;
// with ifTranspose each 16 x 16 fractal of a 16-bit type is transposed.
template <typename T>
inline void LoadData(const LocalTensor<T>& dst, const LocalTensor<T>& src, const LoadData2DParams& p)
{
    const char* api = "LoadData";
    host::CheckBuffer(api, src, host::Buffer::L1, "src");
    const host::Buffer to = host::BufferOf(dst.GetPosition());
    if (to != host::Buffer::L0A && to != host::Buffer::L0B) {
        host::Fail(api, "position", std::string("dst is in ") + host::PositionName(dst.GetPosition()) +
                                        ", not in L0A or L0B");
    }
    if (dst.Address() % 512 != 0) {
        host::Fail(api, "512-byte alignment", "L0 address " + std::to_string(dst.Address()) +
                                                  " is not on a fractal boundary");
    }
    if (p.ifTranspose && sizeof(T) != 2) {
        host::Fail(api, "transpose", "LoadData transposes fractals of 16-bit types only");
    }
    const uint64_t fractal = 512 / sizeof(T);
    for (uint64_t i = 0; i < p.repeatTimes; ++i) {
        const uint64_t s = (p.startIndex + i * p.srcStride) * fractal;
        const uint64_t d = i * (1 + p.dstGap) * fractal;
        src.Check(api, s, fractal);
        dst.Check(api, d, fractal);
        if (p.ifTranspose) {
            for (uint64_t r = 0; r < 16; ++r) {
                for (uint64_t c = 0; c < 16; ++c) {
                    dst.Data()[d + c * 16 + r] = src.Data()[s + r * 16 + c];
                }
            }
        } else {
            std::memcpy(dst.Data() + d, src.Data() + s, 512);
        }
    }
}

struct LoadData2dTransposeParams {
    uint16_t startIndex = 0;  // first source fractal
    uint8_t repeatTimes = 0;  // blocks
    uint16_t srcStride = 0;   // fractals between the sources of consecutive blocks
    uint16_t dstGap = 0;      // fractals between destination blocks
    uint16_t dstFracGap = 0;  // 32-bit: fractals between the two halves of a destination block
    uint8_t addrMode = 0;
};

// L1 -> L0B with transposition. 16-bit types: one 16 x 16 fractal per repeat. 32-bit types:
// one 16 x 16 block per repeat, read from two adjacent 16 x 8 source fractals (columns 0-7,
// 8-15) and written transposed as two 16 x 8 fractals (the block's rows 0-7, 8-15 become
// their columns).
template <typename T>
inline void LoadDataWithTranspose(const LocalTensor<T>& dst, const LocalTensor<T>& src,
                                  const LoadData2dTransposeParams& p)
{
    const char* api = "LoadDataWithTranspose";
    host::CheckBuffer(api, src, host::Buffer::L1, "src");
    host::CheckBuffer(api, dst, host::Buffer::L0B, "dst");
    if (dst.Address() % 512 != 0) {
        host::Fail(api, "512-byte alignment", "L0B address " + std::to_string(dst.Address()) +
                                                  " is not on a fractal boundary");
    }
    const uint64_t fractal = 512 / sizeof(T);
    if (sizeof(T) == 2) {
        LoadData2DParams q;
        q.startIndex = p.startIndex;
        q.repeatTimes = p.repeatTimes;
        q.srcStride = p.srcStride;
        q.dstGap = p.dstGap;
        q.ifTranspose = true;
        LoadData(dst, src, q);
        return;
    }
    if (sizeof(T) != 4) {
        host::Fail(api, "dtype", "16- and 32-bit types only");
    }
    for (uint64_t i = 0; i < p.repeatTimes; ++i) {
        const uint64_t s = (p.startIndex + i * p.srcStride) * fractal;
        const uint64_t d0 = i * (2 + p.dstGap + p.dstFracGap) * fractal;
        const uint64_t d1 = d0 + (1 + p.dstFracGap) * fractal;
        src.Check(api, s, 2 * fractal);
        dst.Check(api, d0, fractal);
        dst.Check(api, d1, fractal);
        for (uint64_t r = 0; r < 16; ++r) {
            for (uint64_t c = 0; c < 16; ++c) {
                const T v = src.Data()[s + (c / 8) * fractal + r * 8 + c % 8];
                dst.Data()[(r / 8 == 0 ? d0 : d1) + c * 8 + r % 8] = v;
            }
        }
    }
}

// L0C[m, n] (+)= L0A[m, k] L0B[k, n], in f32.
template <typename D, typename A, typename B>
inline void Mmad(const LocalTensor<D>& dst, const LocalTensor<A>& fm, const LocalTensor<B>& filter, const MmadParams& p)
{
    const char* api = "Mmad";
    host::CheckBuffer(api, dst, host::Buffer::L0C, "dst");
    host::CheckBuffer(api, fm, host::Buffer::L0A, "fm");
    host::CheckBuffer(api, filter, host::Buffer::L0B, "filter");
    if (p.m % 16 != 0 || p.n % 16 != 0 || p.k % 16 != 0) {
        host::Fail(api, "fractal shape", "m, n, k (" + std::to_string(p.m) + ", " + std::to_string(p.n) + ", " +
                                             std::to_string(p.k) + ") must be multiples of 16 on the host");
    }
    const uint64_t ca = 32 / sizeof(A);
    const uint64_t cb = 32 / sizeof(B);
    fm.Check(api, 0, static_cast<uint64_t>(p.m) * p.k);
    filter.Check(api, 0, static_cast<uint64_t>(p.k) * p.n);
    dst.Check(api, 0, static_cast<uint64_t>(p.m) * p.n);
    for (uint64_t r = 0; r < p.m; ++r) {
        for (uint64_t c = 0; c < p.n; ++c) {
            float acc = 0.0f;
            for (uint64_t k = 0; k < p.k; ++k) {
                const float a = static_cast<float>(
                    fm.Data()[((r / 16) * (p.k / ca) + k / ca) * 16 * ca + (r % 16) * ca + k % ca]);
                const float b = static_cast<float>(
                    filter.Data()[((k / 16) * (p.n / cb) + c / cb) * 16 * cb + (k % 16) * cb + c % cb]);
                acc += a * b;
            }
            D& out = dst.Data()[(c / 16) * p.m * 16 + r * 16 + c % 16];
            out = p.cmatrixInitVal ? D(acc) : D(static_cast<float>(out) + acc);
        }
    }
}

namespace host {

template <typename T, typename U>
inline void CheckQuant(const char* api, QuantMode_t mode)
{
    const bool ok = (std::is_same<T, float>::value && mode == QuantMode_t::NoQuant) ||
                    (std::is_same<T, half>::value && mode == QuantMode_t::F322F16) ||
                    (std::is_same<T, bfloat16_t>::value && mode == QuantMode_t::F322BF16);
    if (!std::is_same<U, float>::value || !ok) {
        Fail(api, "quantization", "quantPre does not convert the f32 accumulator to the destination type");
    }
}

}  // namespace host

// L0C (Nz) -> UB, row-major with dstStride elements per row, converted per quantPre.
template <typename T, typename U>
inline void Fixpipe(const LocalTensor<T>& dst, const LocalTensor<U>& src, const FixpipeParamsV220& p)
{
    const char* api = "Fixpipe";
    host::CheckBuffer(api, src, host::Buffer::L0C, "src");
    host::CheckBuffer(api, dst, host::Buffer::UB, "dst");
    host::CheckUbAligned(api, dst, "destination");
    host::CheckQuant<T, U>(api, p.quantPre);
    if (p.ndNum != 1) {
        host::Fail(api, "unsupported", "ndNum other than 1 is not implemented on the host");
    }
    for (uint64_t r = 0; r < p.mSize; ++r) {
        dst.Check(api, r * p.dstStride, p.nSize);
        for (uint64_t c = 0; c < p.nSize; ++c) {
            const uint64_t s = (c / 16) * p.srcStride * 16 + r * 16 + c % 16;
            src.Check(api, s, 1);
            const float v = static_cast<float>(src.Data()[s]);
            dst.Data()[r * p.dstStride + c] = T(p.reluEn && v < 0 ? 0.0f : v);
        }
    }
}

// L0C (Nz) -> GM, row-major with dstStride elements per row.
template <typename T, typename U>
inline void Fixpipe(const GlobalTensor<T>& dst, const LocalTensor<U>& src, const FixpipeParamsV220& p)
{
    const char* api = "Fixpipe";
    host::CheckBuffer(api, src, host::Buffer::L0C, "src");
    host::CheckQuant<T, U>(api, p.quantPre);
    for (uint64_t r = 0; r < p.mSize; ++r) {
        dst.Check(api, r * p.dstStride, p.nSize);
        for (uint64_t c = 0; c < p.nSize; ++c) {
            const uint64_t s = (c / 16) * p.srcStride * 16 + r * 16 + c % 16;
            src.Check(api, s, 1);
            const float v = static_cast<float>(src.Data()[s]);
            dst.Data()[r * p.dstStride + c] = T(p.reluEn && v < 0 ? 0.0f : v);
        }
    }
}

}  // namespace AscendC

#endif  // ASCENDC_HOST_CUBE_H

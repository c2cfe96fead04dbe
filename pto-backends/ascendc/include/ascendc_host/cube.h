// Host implementation of the Ascend C API: the cube path. GM / UB -> L1 (Nd2Nz),
// InitConstValue, LoadData and LoadDataWithTranspose L1 -> L0A / L0B, Mmad into L0C,
// Fixpipe out.
//
// The layouts are the documented ones (mirror-cann/asc-devkit, docs/zh/api/SIMD-API/基础API/
// 矩阵计算（ISASI）/Mmad计算/Mmad.md, table 2 for Atlas A2; the fractal shapes of
// 矩阵计算的搬入/LoadData_2D.md), with c0 = 32 / sizeof(T) elements, 16-row fractals of
// 512 bytes, and ceil-aligned extents (Mmad.md: m, n, k need not be multiples of 16; the
// padding of the last fractals is ignored):
// - L1 (Nz, DataCopy with Nd2NzParams): element (r, c) of an ND matrix at
//   (c / c0) * dstNzC0Stride * c0 + r * dstNzNStride * c0 + c % c0: columns of fractals.
// - L0A (Zz): element (m, k) of the [M, K] left matrix at
//   ((m / 16) * ceil(K / c0) + k / c0) * 16 * c0 + (m % 16) * c0 + k % c0: rows of
//   fractals, each row-major. With M = 1 (GEMV) Mmad reads L0A as ND: element k at k.
// - L0B (Zn): element (k, n) of the [K, N] right matrix at
//   ((k / c0) * ceil(N / 16) + n / 16) * 16 * c0 + (n % 16) * c0 + k % c0: rows of
//   fractals along K, each column-major (b16: (k, n) of a 16 x 16 fractal at n * 16 + k).
// - L0C (Nz, 16 x 16 fractals): element (m, n) of the [M, N] result at
//   ((n / 16) * ceil16(M) + m) * 16 + n % 16.
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
    uint16_t startIndex = 0;  // first source fractal (512 bytes)
    uint8_t repeatTimes = 0;  // fractals
    uint16_t srcStride = 0;   // 512-byte fractals from one source fractal's start to the next
    uint8_t sid = 0;
    uint16_t dstGap = 0;  // 512-byte fractals between one destination fractal's end and the next
    bool ifTranspose = false;
    uint8_t addrMode = 0;
};

// The constructors are the documented ones (include/basic_api/kernel_struct_mm.h of the API).
struct MmadParams {
    MmadParams() = default;
    MmadParams(uint16_t mIn, uint16_t nIn, uint16_t kIn, bool isBiasIn, int32_t fmOffsetIn, bool enSsparseIn,
               bool enWinogradAIn, bool enWinogradBIn)
        : m(mIn), n(nIn), k(kIn), isBias(isBiasIn), fmOffset(fmOffsetIn), enSsparse(enSsparseIn),
          enWinogradA(enWinogradAIn), enWinogradB(enWinogradBIn)
    {
    }
    MmadParams(uint16_t mIn, uint16_t nIn, uint16_t kIn, uint8_t unitFlagIn, bool cmatrixSourceIn,
               bool cmatrixInitValIn)
        : m(mIn), n(nIn), k(kIn), unitFlag(unitFlagIn), cmatrixSource(cmatrixSourceIn),
          cmatrixInitVal(cmatrixInitValIn)
    {
    }
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

// Members and constructors in the documented order (include/basic_api/kernel_struct_fixpipe.h).
struct FixpipeParamsV220 {
    FixpipeParamsV220() = default;
    FixpipeParamsV220(uint16_t nSizeIn, uint16_t mSizeIn, uint16_t srcStrideIn, uint32_t dstStrideIn, bool reluEnIn)
        : nSize(nSizeIn), mSize(mSizeIn), srcStride(srcStrideIn), dstStride(dstStrideIn), reluEn(reluEnIn)
    {
    }
    FixpipeParamsV220(uint16_t nSizeIn, uint16_t mSizeIn, uint16_t srcStrideIn, uint32_t dstStrideIn, bool reluEnIn,
                      QuantMode_t quantPreIn, uint64_t deqScalarIn, uint16_t ndNumIn, uint16_t srcNdStrideIn,
                      uint16_t dstNdStrideIn, uint8_t unitFlagIn)
        : nSize(nSizeIn), mSize(mSizeIn), srcStride(srcStrideIn), dstStride(dstStrideIn), reluEn(reluEnIn),
          quantPre(quantPreIn), deqScalar(deqScalarIn), ndNum(ndNumIn), srcNdStride(srcNdStrideIn),
          dstNdStride(dstNdStrideIn), unitFlag(unitFlagIn)
    {
    }
    uint16_t nSize = 0;
    uint16_t mSize = 0;
    uint16_t srcStride = 0;  // rows of the L0C matrix between fractal columns
    uint32_t dstStride = 0;  // elements between destination rows
    bool reluEn = false;
    QuantMode_t quantPre = QuantMode_t::NoQuant;
    uint64_t deqScalar = 0;
    uint16_t ndNum = 1;
    uint16_t srcNdStride = 0;
    uint16_t dstNdStride = 0;
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

inline uint64_t CeilDiv(uint64_t a, uint64_t b) { return (a + b - 1) / b; }

// DataCopy with Nd2NzParams (asc-devkit docs/zh/api/SIMD-API/基础API/Memory矢量计算/数据搬运/
// DataCopy: ND2NZ): ndNum matrices of nValue x dValue, srcNdMatrixStride elements apart in
// the source and dstNzMatrixStride elements apart in the destination.
template <typename T>
inline void Nd2Nz(const char* api, T* dst, uint64_t dstSize, const T* src, const Nd2NzParams& p,
                  const std::function<void(uint64_t, uint64_t)>& checkSrc, Span& written)
{
    const uint64_t c0 = 32 / sizeof(T);
    if (p.dstNzC0Stride < p.nValue) {
        Fail(api, "layout", "dstNzC0Stride " + std::to_string(p.dstNzC0Stride) + " is below nValue " +
                                std::to_string(p.nValue) + ": fractal columns would overlap");
    }
    for (uint64_t m = 0; m < p.ndNum; ++m) {
        const uint64_t srcBase = m * p.srcNdMatrixStride;
        const uint64_t dstBase = m * p.dstNzMatrixStride;
        for (uint64_t r = 0; r < p.nValue; ++r) {
            checkSrc(srcBase + r * p.srcDValue, p.dValue);
            for (uint64_t c = 0; c < p.dValue; ++c) {
                const uint64_t d = dstBase + (c / c0) * p.dstNzC0Stride * c0 + r * p.dstNzNStride * c0 + c % c0;
                if (d >= dstSize) {
                    Fail(api, "bounds",
                         "Nz element " + std::to_string(d) + " past a tensor of " + std::to_string(dstSize));
                }
                dst[d] = src[srcBase + r * p.srcDValue + c];
                written.Add(d);
            }
        }
    }
}

template <typename T>
inline void CheckL0(const char* api, const LocalTensor<T>& dst)
{
    const Buffer to = BufferOf(dst.GetPosition());
    if (to != Buffer::L0A && to != Buffer::L0B) {
        Fail(api, "position", std::string("dst is in ") + PositionName(dst.GetPosition()) + ", not in L0A or L0B");
    }
    if (dst.Address() % 512 != 0) {
        Fail(api, "512-byte alignment",
             "L0 address " + std::to_string(dst.Address()) + " is not on a fractal boundary");
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
    host::Span written;
    host::Nd2Nz<T>(api, dst.Data(), dst.GetSize(), src.Data(), p,
                   [&](uint64_t at, uint64_t n) { src.Check(api, at, n); }, written);
    written.Touch(api, PIPE_MTE2, dst, true);  // GM -> L1: MTE2
}

// UB -> L1, ND to Nz.
template <typename T>
inline void DataCopy(const LocalTensor<T>& dst, const LocalTensor<T>& src, const Nd2NzParams& p)
{
    const char* api = "DataCopy(Nd2Nz)";
    host::CheckBuffer(api, dst, host::Buffer::L1, "dst");
    host::CheckBuffer(api, src, host::Buffer::UB, "src");
    host::CheckUbAligned(api, src, "source");
    host::Span read, written;
    host::Nd2Nz<T>(api, dst.Data(), dst.GetSize(), src.Data(), p,
                   [&](uint64_t at, uint64_t n) {
                       src.Check(api, at, n);
                       if (n > 0) {
                           read.Add(at);
                           read.Add(at + n - 1);
                       }
                   },
                   written);
    // UB -> L1: MTE3 (kernel_event.h, GetQueEvt: UB -> L1 is MTE3_MTE1).
    read.Touch(api, PIPE_MTE3, src, false);
    written.Touch(api, PIPE_MTE3, dst, true);
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
        // The lowering orders it before the copy after it with PipeBarrier<PIPE_MTE2>: MTE2.
        host::Touch(api, PIPE_MTE2, dst, start, p.blockNum * perBlock, true);
        for (uint64_t i = 0; i < p.blockNum * perBlock; ++i) {
            dst.Data()[start + i] = p.initValue;
        }
    }
}

// L1 -> L0A / L0B, 2D v1 (矩阵计算的搬入/LoadData_2D.md): repeat i copies the 512-byte fractal
// startIndex + i * srcStride to fractal i * (1 + dstGap) of dst; with ifTranspose (b16 only)
// each 16 x 16 fractal is transposed.
template <typename T>
inline void LoadData(const LocalTensor<T>& dst, const LocalTensor<T>& src, const LoadData2DParams& p)
{
    const char* api = "LoadData";
    ASCENDC_HOST_REQUIRE(api, LOAD_DATA_2D_V1);
    host::CheckBuffer(api, src, host::Buffer::L1, "src");
    host::CheckL0(api, dst);
    if (p.ifTranspose && sizeof(T) != 2) {
        host::Fail(api, "transpose", "ifTranspose is for 16-bit types only (LoadData_2D.md, ifTranspose)");
    }
    const uint64_t fractal = 512 / sizeof(T);
    for (uint64_t i = 0; i < p.repeatTimes; ++i) {
        const uint64_t s = (p.startIndex + i * p.srcStride) * fractal;
        const uint64_t d = i * (1 + p.dstGap) * fractal;
        src.Check(api, s, fractal);
        dst.Check(api, d, fractal);
        host::Touch(api, PIPE_MTE1, src, s, fractal, false);  // L1 -> L0A / L0B: MTE1
        host::Touch(api, PIPE_MTE1, dst, d, fractal, true);
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
    uint16_t startIndex = 0;  // first source square (b8: 32 x 32, b16: 16 x 16, b32: 16 x 16 elements)
    uint8_t repeatTimes = 0;  // squares
    uint16_t srcStride = 0;   // squares from one source square's start to the next
    uint16_t dstGap = 0;      // 512-byte fractals between a repeat's first fractal's end and the next's start
    uint16_t dstFracGap = 0;  // b8 / b32: 512-byte fractals between the two fractals of one repeat
    uint8_t addrMode = 0;
};

// L1 -> L0A / L0B with transposition (矩阵计算的搬入/LoadDataWithTranspose.md, table 3, and the
// sample's pseudo-code examples/01_simd_cpp_api/03_basic_api/03_matrix_compute/load_data_l12l0/
// scripts/load_data_with_transpose.py). Each repeat reads one square from the source and
// writes it transposed as 512-byte fractals:
// - b16: the square is one 16 x 16 fractal;
// - b8: two consecutive 16 x 32 fractals are a 32 x 32 square (rows 0-15, 16-31); its
//   transpose is split by rows into two 16 x 32 fractals;
// - b32: two consecutive 16 x 8 fractals are a 16 x 16 square (columns 0-7, 8-15); its
//   transpose is split by columns into two 16 x 8 fractals.
// The first fractal of repeat i is at fractal i * (dstGap + 1) of dst, the second
// (dstFracGap + 1) fractals after it.
template <typename T>
inline void LoadDataWithTranspose(const LocalTensor<T>& dst, const LocalTensor<T>& src,
                                  const LoadData2dTransposeParams& p)
{
    const char* api = "LoadDataWithTranspose";
    ASCENDC_HOST_REQUIRE(api, LOAD_DATA_WITH_TRANSPOSE);
    if (sizeof(T) == 4) {
        ASCENDC_HOST_REQUIRE(api, LOAD_DATA_WITH_TRANSPOSE_B32);
    }
    host::CheckBuffer(api, src, host::Buffer::L1, "src");
    host::CheckL0(api, dst);
    if (src.Address() % 32 != 0) {
        host::Fail(api, "32-byte alignment", "L1 address " + std::to_string(src.Address()) + " is not 32-byte aligned");
    }
    if (sizeof(T) != 1 && sizeof(T) != 2 && sizeof(T) != 4) {
        host::Fail(api, "dtype", "8-, 16- and 32-bit types only");
    }
    const uint64_t fractal = 512 / sizeof(T);
    const uint64_t fractals = sizeof(T) == 2 ? 1 : 2;
    const uint64_t square = fractal * fractals;
    for (uint64_t i = 0; i < p.repeatTimes; ++i) {
        const uint64_t s = (p.startIndex + i * p.srcStride) * square;
        const uint64_t d = i * (p.dstGap + 1) * fractal;
        src.Check(api, s, square);
        host::Touch(api, PIPE_MTE1, src, s, square, false);
        for (uint64_t j = 0; j < fractals; ++j) {
            dst.Check(api, d + j * (p.dstFracGap + 1) * fractal, fractal);
            host::Touch(api, PIPE_MTE1, dst, d + j * (p.dstFracGap + 1) * fractal, fractal, true);
        }
        const T* in = src.Data() + s;
        T* out = dst.Data();
        if (sizeof(T) == 2) {
            for (uint64_t r = 0; r < 16; ++r) {
                for (uint64_t c = 0; c < 16; ++c) {
                    out[d + c * 16 + r] = in[r * 16 + c];
                }
            }
        } else if (sizeof(T) == 1) {
            // Square S[r][c] = in[r * 32 + c] (32 x 32); fractal j holds rows 16j.. of S^T.
            for (uint64_t r = 0; r < 32; ++r) {
                for (uint64_t c = 0; c < 32; ++c) {
                    const uint64_t j = c / 16;
                    out[d + j * (p.dstFracGap + 1) * fractal + (c % 16) * 32 + r] = in[r * 32 + c];
                }
            }
        } else {
            // Square S[r][c] = fractal c / 8, row r, column c % 8 (16 x 16); fractal j holds
            // columns 8j.. of S^T: S^T[c][r] at row c, column r % 8 of fractal r / 8.
            for (uint64_t r = 0; r < 16; ++r) {
                for (uint64_t c = 0; c < 16; ++c) {
                    const uint64_t j = r / 8;
                    out[d + j * (p.dstFracGap + 1) * fractal + c * 8 + r % 8] = in[(c / 8) * fractal + r * 8 + c % 8];
                }
            }
        }
    }
}

namespace host {

// The Mmad type combinations (Mmad.md, tables 7, 11 and 12), each a row of the capability
// table: true when the SoC has it, else the call is refused.
template <typename D, typename A, typename B>
inline void CheckMmadTypes(const char* api)
{
    constexpr bool halfIn = std::is_same<A, half>::value && std::is_same<B, half>::value;
    constexpr bool bf16In = std::is_same<A, bfloat16_t>::value && std::is_same<B, bfloat16_t>::value;
    constexpr bool floatIn = std::is_same<A, float>::value && std::is_same<B, float>::value;
    constexpr bool s8In = std::is_same<A, int8_t>::value && std::is_same<B, int8_t>::value;
    if (halfIn && std::is_same<D, float>::value) {
        ASCENDC_HOST_REQUIRE(api, MMAD_F16_F32);
    } else if (halfIn && std::is_same<D, half>::value) {
        ASCENDC_HOST_REQUIRE(api, MMAD_F16_F16);
    } else if (bf16In && std::is_same<D, float>::value) {
        ASCENDC_HOST_REQUIRE(api, MMAD_BF16_F32);
    } else if (floatIn && std::is_same<D, float>::value) {
        ASCENDC_HOST_REQUIRE(api, MMAD_F32_F32);
    } else if (s8In && std::is_same<D, int32_t>::value) {
        ASCENDC_HOST_REQUIRE(api, MMAD_S8_S32);
    } else {
        Fail(api, "types", "no Mmad of these operand and result types (Mmad.md, tables 7, 11, 12)");
    }
}

}  // namespace host

// L0C[m, n] (+)= L0A[m, k] L0B[k, n]: A Zz (ND when m = 1), B Zn, C Nz (see the top of the
// file). Float and half products accumulate in float, int8 in int32; a half L0C (Kirin)
// holds each result rounded to half (the device's internal precision of the half
// accumulation is not documented: this is the product rounded once per Mmad).
template <typename D, typename A, typename B>
inline void Mmad(const LocalTensor<D>& dst, const LocalTensor<A>& fm, const LocalTensor<B>& filter, const MmadParams& p)
{
    const char* api = "Mmad";
    host::CheckMmadTypes<D, A, B>(api);
    host::CheckBuffer(api, dst, host::Buffer::L0C, "dst");
    host::CheckBuffer(api, fm, host::Buffer::L0A, "fm");
    host::CheckBuffer(api, filter, host::Buffer::L0B, "filter");
    if (p.m == 0 || p.n == 0 || p.k == 0) {
        return;  // a NOP (Mmad.md, constraints)
    }
    if (p.cmatrixSource) {
        host::Fail(api, "unsupported", "cmatrixSource (C from the bias table) is not implemented on the host");
    }
    const uint64_t ca = 32 / sizeof(A);
    const uint64_t cb = 32 / sizeof(B);
    const uint64_t kfa = host::CeilDiv(p.k, ca);
    const uint64_t nf = host::CeilDiv(p.n, 16);
    const uint64_t mp = host::CeilDiv(p.m, 16) * 16;
    const bool gemv = p.m == 1;
    fm.Check(api, 0, gemv ? p.k : host::CeilDiv(p.m, 16) * 16 * kfa * ca);
    filter.Check(api, 0, host::CeilDiv(p.k, cb) * cb * nf * 16);
    dst.Check(api, 0, mp * nf * 16);
    // The cube (PIPE_M) reads L0A and L0B and writes (or accumulates into) L0C.
    host::Touch(api, PIPE_M, fm, 0, gemv ? p.k : host::CeilDiv(p.m, 16) * 16 * kfa * ca, false);
    host::Touch(api, PIPE_M, filter, 0, host::CeilDiv(p.k, cb) * cb * nf * 16, false);
    host::Touch(api, PIPE_M, dst, 0, mp * nf * 16, true);
    // The accumulator of the device: float for the float L0C (and, an assumption, for
    // Kirin's half L0C before rounding), int32 for int8 products (kept in int64 here).
    using Acc = typename std::conditional<std::is_same<D, int32_t>::value, int64_t, float>::type;
    for (uint64_t r = 0; r < p.m; ++r) {
        for (uint64_t c = 0; c < p.n; ++c) {
            Acc acc = 0;
            for (uint64_t k = 0; k < p.k; ++k) {
                const uint64_t ia = gemv ? k : ((r / 16) * kfa + k / ca) * 16 * ca + (r % 16) * ca + k % ca;
                const uint64_t ib = ((k / cb) * nf + c / 16) * 16 * cb + (c % 16) * cb + k % cb;
                acc += static_cast<Acc>(static_cast<float>(fm.Data()[ia])) *
                       static_cast<Acc>(static_cast<float>(filter.Data()[ib]));
            }
            D& out = dst.Data()[((c / 16) * mp + r) * 16 + c % 16];
            const bool init = p.cmatrixInitVal && !p.isBias;
            if constexpr (std::is_same<D, int32_t>::value) {
                out = static_cast<D>(init ? acc : out + acc);
            } else {
                out = D(static_cast<float>(init ? acc : static_cast<float>(out) + acc));
            }
        }
    }
}

namespace host {

template <typename T, typename U>
inline void CheckQuant(const char* api, QuantMode_t mode)
{
    const bool ok = (std::is_same<U, float>::value &&
                     ((std::is_same<T, float>::value && mode == QuantMode_t::NoQuant) ||
                      (std::is_same<T, half>::value && mode == QuantMode_t::F322F16) ||
                      (std::is_same<T, bfloat16_t>::value && mode == QuantMode_t::F322BF16))) ||
                    (std::is_same<U, half>::value && std::is_same<T, half>::value && mode == QuantMode_t::NoQuant) ||
                    (std::is_same<U, int32_t>::value && std::is_same<T, int32_t>::value && mode == QuantMode_t::NoQuant);
    if (!ok) {
        Fail(api, "quantization", "quantPre does not convert the accumulator to the destination type");
    }
}

// Fixpipe's NZ2ND out of L0C (矩阵计算的搬出/Fixpipe（L0C到GM数据搬运）.md): row r, column c
// of the [mSize, nSize] result from L0C element ((c / 16) * srcStride + r) * 16 + c % 16 to
// r * dstStride + c.
template <typename T, typename U, typename Dst>
inline void FixpipeNz2Nd(const char* api, const Dst& dst, const LocalTensor<U>& src, const FixpipeParamsV220& p)
{
    CheckQuant<T, U>(api, p.quantPre);
    if (p.ndNum != 1) {
        Fail(api, "unsupported", "ndNum other than 1 is not implemented on the host");
    }
    Span read;
    for (uint64_t r = 0; r < p.mSize; ++r) {
        dst.Check(api, r * p.dstStride, p.nSize);
        for (uint64_t c = 0; c < p.nSize; ++c) {
            const uint64_t s = ((c / 16) * p.srcStride + r) * 16 + c % 16;
            src.Check(api, s, 1);
            read.Add(s);
            const float v = static_cast<float>(src.Data()[s]);
            dst.Data()[r * p.dstStride + c] = T(p.reluEn && v < 0 ? 0.0f : v);
        }
    }
    read.Touch(api, PIPE_FIX, src, false);  // out of L0C: the Fixpipe (PIPE_FIX)
}

}  // namespace host

// L0C (Nz) -> UB: no SoC here has it (Fixpipe（L0C到UB数据搬运）.md); the capability table
// refuses it.
template <typename T, typename U>
inline void Fixpipe(const LocalTensor<T>& dst, const LocalTensor<U>& src, const FixpipeParamsV220& p)
{
    const char* api = "Fixpipe";
    ASCENDC_HOST_REQUIRE(api, FIXPIPE_L0C_TO_UB);
    host::CheckBuffer(api, src, host::Buffer::L0C, "src");
    host::CheckBuffer(api, dst, host::Buffer::UB, "dst");
    host::CheckUbAligned(api, dst, "destination");
    host::FixpipeNz2Nd<T, U>(api, dst, src, p);
    if (p.mSize > 0) {
        host::Touch(api, PIPE_FIX, dst, 0, static_cast<uint64_t>(p.mSize - 1) * p.dstStride + p.nSize, true);
    }
}

// L0C (Nz) -> GM, row-major with dstStride elements per row.
template <typename T, typename U>
inline void Fixpipe(const GlobalTensor<T>& dst, const LocalTensor<U>& src, const FixpipeParamsV220& p)
{
    const char* api = "Fixpipe";
    ASCENDC_HOST_REQUIRE(api, FIXPIPE_L0C_TO_GM);
    host::CheckBuffer(api, src, host::Buffer::L0C, "src");
    host::FixpipeNz2Nd<T, U>(api, dst, src, p);
}

}  // namespace AscendC

#endif  // ASCENDC_HOST_CUBE_H

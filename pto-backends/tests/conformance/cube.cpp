// Conformance cases of the cube path: each is a call sequence of a public sample or doc
// example (cited), with expected values from a plain matrix product or the documented
// element mapping.
#include "harness.h"

using namespace AscendC;
using namespace conformance;

namespace {

const char* const BASIC = "mirror-cann/asc-devkit: examples/01_simd_cpp_api/00_introduction/02_matrix/"
                          "matmul_basic_api/matmul_basic_api.asc (the __NPU_ARCH__ 2201 branch)";
const char* const L12L0 = "mirror-cann/asc-devkit: examples/01_simd_cpp_api/03_basic_api/03_matrix_compute/"
                          "load_data_l12l0/load_data_l12l0.asc";
const char* const MMAD_DOC = "mirror-cann/asc-devkit: docs/zh/api/SIMD-API/基础API/矩阵计算（ISASI）/Mmad计算/Mmad.md, "
                             "table 2 (A Zz, B Zn, C Nz) and the M=30, K=70, N=40 example";
const char* const LOAD2D_DOC = "mirror-cann/asc-devkit: docs/zh/api/SIMD-API/基础API/矩阵计算（ISASI）/矩阵计算的搬入/"
                               "LoadData_2D.md, table of LoadData2DParams and its examples";
const char* const TRANSPOSE_DOC = "mirror-cann/asc-devkit: docs/zh/api/SIMD-API/基础API/矩阵计算（ISASI）/矩阵计算的搬入/"
                                  "LoadDataWithTranspose.md, table 3 and its examples; the pseudo-code "
                                  "examples/01_simd_cpp_api/03_basic_api/03_matrix_compute/load_data_l12l0/"
                                  "scripts/load_data_with_transpose.py";
const char* const FIXPIPE_DOC = "mirror-cann/asc-devkit: docs/zh/api/SIMD-API/基础API/矩阵计算（ISASI）/矩阵计算的搬出/"
                                "Fixpipe（L0C到GM数据搬运）.md (NZ2ND, srcStride, dstStride)";

// The matmul sample's whole sequence at [M, K] x [K, N], f16 in, f32 in L0C, f16 out (F322F16).
template <uint32_t M, uint32_t K, uint32_t N>
void BasicApi()
{
    const std::vector<float> a = Integers(M * K, -3, 3, 1);
    const std::vector<float> b = Integers(K * N, -3, 3, 2);
    std::vector<half> ah = As<half>(a), bh = As<half>(b), ch(M * N);
    GlobalTensor<half> aGM, bGM, cGM;
    aGM.SetGlobalBuffer(ah.data(), ah.size());
    bGM.SetGlobalBuffer(bh.data(), bh.size());
    cGM.SetGlobalBuffer(ch.data(), ch.size());
    Memory mem(M * K * 2, K * N * 2, M * K * 2, K * N * 2, M * N * 4);
    LocalTensor<half> a1 = mem.a1.Get<half>(), b1 = mem.b1.Get<half>();
    LocalTensor<half> a2 = mem.a2.Get<half>(), b2 = mem.b2.Get<half>();
    LocalTensor<float> c = mem.co1.Get<float>();
    DataCopy(a1, aGM, Nd2NzParams{1, M, K, 0, K, M, 1, 0});
    DataCopy(b1, bGM, Nd2NzParams{1, K, N, 0, N, K, 1, 0});
    SetFlag<HardEvent::MTE2_MTE1>(EVENT_ID0);
    WaitFlag<HardEvent::MTE2_MTE1>(EVENT_ID0);
    for (uint32_t i = 0; i < M / 16; ++i) {  // A: Nz -> Zz
        LoadData(a2[i * K * 16], a1[i * 512 / sizeof(half)], LoadData2DParams{0, K / 16, M / 16, 0, 0, false, 0});
    }
    for (uint32_t i = 0; i < K / 16; ++i) {  // B: Nz -> Zn, transposed
        LoadData(b2[i * N * 16], b1[i * 512 / sizeof(half)], LoadData2DParams{0, N / 16, K / 16, 0, 0, true, 0});
    }
    SetFlag<HardEvent::MTE1_M>(EVENT_ID0);
    WaitFlag<HardEvent::MTE1_M>(EVENT_ID0);
    MmadParams mp;  // the sample's MmadParams{baseM, baseN, baseK, 0, false, true}
    mp.m = M;
    mp.n = N;
    mp.k = K;
    mp.cmatrixInitVal = true;
    Mmad(c, a2, b2, mp);
    SetFlag<HardEvent::M_FIX>(EVENT_ID0);
    WaitFlag<HardEvent::M_FIX>(EVENT_ID0);
    FixpipeParamsV220 fp;  // the sample's {baseN, baseM, baseM, N, false, F322F16, 0, 1, 0, 0, 0}
    fp.nSize = N;
    fp.mSize = M;
    fp.srcStride = M;
    fp.dstStride = N;
    fp.quantPre = QuantMode_t::F322F16;
    Fixpipe(cGM, c, fp);
    PipeBarrier<PIPE_ALL>();
    ExpectMatrix("C", ch.data(), N, MatMul(a, b, M, K, N), M, N);
}

CONFORMANCE_CASE(matmul_basic_api_128x64x256, BASIC) { BasicApi<128, 64, 256>(); }
CONFORMANCE_CASE(matmul_basic_api_32x32x32, BASIC) { BasicApi<32, 32, 32>(); }
CONFORMANCE_CASE(matmul_basic_api_16x48x80, BASIC) { BasicApi<16, 48, 80>(); }
CONFORMANCE_CASE(matmul_basic_api_64x128x32, BASIC) { BasicApi<64, 128, 32>(); }

// load_data_l12l0, scenario 6: half, A [m, k] (Nz -> Zz), B given as [n, k] ("isBtranspose"):
// its Nz is already Zn, loaded without transposition (SplitB), f32 out.
template <uint32_t m, uint32_t n, uint32_t k>
void HalfBTransposedInput()
{
    const std::vector<float> a = Integers(m * k, -3, 3, 3);
    const std::vector<float> bt = Integers(n * k, -3, 3, 4);  // [n, k]
    std::vector<half> ah = As<half>(a), bh = As<half>(bt);
    std::vector<float> cf(m * n);
    GlobalTensor<half> aGM, bGM;
    GlobalTensor<float> cGM;
    aGM.SetGlobalBuffer(ah.data(), ah.size());
    bGM.SetGlobalBuffer(bh.data(), bh.size());
    cGM.SetGlobalBuffer(cf.data(), cf.size());
    const uint16_t mA = CeilAlign(m, 16), kA = CeilAlign(k, 16), nA = CeilAlign(n, 16);
    Memory mem(mA * kA * 2, nA * kA * 2, mA * kA * 2, kA * nA * 2, mA * nA * 4);
    LocalTensor<half> a1 = mem.a1.Get<half>(), b1 = mem.b1.Get<half>();
    LocalTensor<half> a2 = mem.a2.Get<half>(), b2 = mem.b2.Get<half>();
    LocalTensor<float> c = mem.co1.Get<float>();
    DataCopy(a1, aGM, Nd2NzParams{1, m, k, 0, k, mA, 1, 0});
    DataCopy(b1, bGM, Nd2NzParams{1, n, k, 0, k, nA, 1, 0});
    SetFlag<HardEvent::MTE2_MTE1>(EVENT_ID0);
    WaitFlag<HardEvent::MTE2_MTE1>(EVENT_ID0);
    LoadData2DParams pa;
    pa.repeatTimes = kA / 16;
    pa.srcStride = mA / 16;
    for (uint32_t i = 0; i < mA / 16; ++i) {
        LoadData(a2[i * (kA / 16) * 256], a1[i * 256], pa);
    }
    LoadData2DParams pb;
    pb.repeatTimes = nA / 16;
    pb.srcStride = 1;
    for (uint32_t i = 0; i < kA / 16; ++i) {
        LoadData(b2[i * (nA / 16) * 256], b1[i * (nA / 16) * 256], pb);
    }
    SetFlag<HardEvent::MTE1_M>(EVENT_ID0);
    WaitFlag<HardEvent::MTE1_M>(EVENT_ID0);
    MmadParams mp;
    mp.m = m;
    mp.n = n;
    mp.k = k;
    Mmad(c, a2, b2, mp);
    SetFlag<HardEvent::M_FIX>(EVENT_ID0);
    WaitFlag<HardEvent::M_FIX>(EVENT_ID0);
    FixpipeParamsV220 fp;
    fp.nSize = n;
    fp.mSize = m;
    fp.srcStride = mA;
    fp.dstStride = n;
    Fixpipe(cGM, c, fp);
    ExpectMatrix("C", cf.data(), n, MatMul(a, Transposed(bt, n, k), m, k, n), m, n);
}

CONFORMANCE_CASE(load_data_l12l0_half_b_nk_40x50x70, L12L0) { HalfBTransposedInput<40, 50, 70>(); }
CONFORMANCE_CASE(load_data_l12l0_half_b_nk_64x64x64, L12L0) { HalfBTransposedInput<64, 64, 64>(); }

// load_data_l12l0, scenario 11: float, A [m, k] Nz -> Zz (16 x 8 fractals), B given as [n, k]:
// Nz is Zn, loaded without transposition per 8-column block of K.
template <uint32_t m, uint32_t n, uint32_t k>
void FloatBTransposedInput()
{
    const std::vector<float> a = Integers(m * k, -3, 3, 5);
    const std::vector<float> bt = Integers(n * k, -3, 3, 6);
    std::vector<float> ah = a, bh = bt, cf(m * n);
    GlobalTensor<float> aGM, bGM, cGM;
    aGM.SetGlobalBuffer(ah.data(), ah.size());
    bGM.SetGlobalBuffer(bh.data(), bh.size());
    cGM.SetGlobalBuffer(cf.data(), cf.size());
    const uint16_t mA = CeilAlign(m, 16), kA = CeilAlign(k, 8), nA = CeilAlign(n, 16);
    Memory mem(mA * kA * 4, nA * kA * 4, mA * kA * 4, kA * nA * 4, mA * nA * 4);
    LocalTensor<float> a1 = mem.a1.Get<float>(), b1 = mem.b1.Get<float>();
    LocalTensor<float> a2 = mem.a2.Get<float>(), b2 = mem.b2.Get<float>();
    LocalTensor<float> c = mem.co1.Get<float>();
    DataCopy(a1, aGM, Nd2NzParams{1, m, k, 0, k, mA, 1, 0});
    DataCopy(b1, bGM, Nd2NzParams{1, n, k, 0, k, nA, 1, 0});
    SetFlag<HardEvent::MTE2_MTE1>(EVENT_ID0);
    WaitFlag<HardEvent::MTE2_MTE1>(EVENT_ID0);
    LoadData2DParams pa;
    pa.repeatTimes = kA / 8;
    pa.srcStride = mA / 16;
    for (uint32_t i = 0; i < mA / 16; ++i) {
        LoadData(a2[i * (kA / 8) * 128], a1[i * 128], pa);
    }
    LoadData2DParams pb;
    pb.repeatTimes = nA / 16;
    pb.srcStride = 1;
    for (uint32_t i = 0; i < kA / 8; ++i) {
        LoadData(b2[i * (nA / 16) * 128], b1[i * (nA / 16) * 128], pb);
    }
    SetFlag<HardEvent::MTE1_M>(EVENT_ID0);  // as the sample does before Mmad
    WaitFlag<HardEvent::MTE1_M>(EVENT_ID0);
    MmadParams mp;
    mp.m = m;
    mp.n = n;
    mp.k = k;
    Mmad(c, a2, b2, mp);
    SetFlag<HardEvent::M_FIX>(EVENT_ID0);  // as the sample does before the copy out
    WaitFlag<HardEvent::M_FIX>(EVENT_ID0);
    FixpipeParamsV220 fp;
    fp.nSize = n;
    fp.mSize = m;
    fp.srcStride = mA;
    fp.dstStride = n;
    Fixpipe(cGM, c, fp);
    ExpectMatrix("C", cf.data(), n, MatMul(a, Transposed(bt, n, k), m, k, n), m, n);
}

CONFORMANCE_CASE(load_data_l12l0_float_b_nk_40x50x70, L12L0) { FloatBTransposedInput<40, 50, 70>(); }
CONFORMANCE_CASE(load_data_l12l0_float_b_nk_32x32x32, L12L0) { FloatBTransposedInput<32, 32, 32>(); }

// load_data_l12l0, scenario 14 (isL1Nz = false): float A given as [k, m] and B as [k, n], both
// laid out Zz in L1 by one Nd2Nz of ndNum 16-row matrices, and both loaded with
// LoadDataWithTranspose (b32: 16 x 16 squares of two 16 x 8 fractals).
template <uint32_t m, uint32_t n, uint32_t k>
void FloatZzTransposed()
{
    const std::vector<float> at = Integers(k * m, -3, 3, 7);  // [k, m]
    const std::vector<float> b = Integers(k * n, -3, 3, 8);   // [k, n]
    std::vector<float> ah = at, bh = b, cf(m * n);
    GlobalTensor<float> aGM, bGM, cGM;
    aGM.SetGlobalBuffer(ah.data(), ah.size());
    bGM.SetGlobalBuffer(bh.data(), bh.size());
    cGM.SetGlobalBuffer(cf.data(), cf.size());
    static_assert(m % 16 == 0 && n % 16 == 0 && k % 16 == 0, "whole squares");
    Memory mem(k * m * 4, k * n * 4, m * k * 4, k * n * 4, m * n * 4);
    LocalTensor<float> a1 = mem.a1.Get<float>(), b1 = mem.b1.Get<float>();
    LocalTensor<float> a2 = mem.a2.Get<float>(), b2 = mem.b2.Get<float>();
    LocalTensor<float> c = mem.co1.Get<float>();
    DataCopy(a1, aGM, Nd2NzParams{k / 16, 16, m, 16 * m, m, 16, 1, 16 * m});
    DataCopy(b1, bGM, Nd2NzParams{k / 16, 16, n, 16 * n, n, 16, 1, 16 * n});
    SetFlag<HardEvent::MTE2_MTE1>(EVENT_ID0);
    WaitFlag<HardEvent::MTE2_MTE1>(EVENT_ID0);
    LoadData2dTransposeParams pa;  // SplitATransposeForB32, !isL1Nz
    pa.repeatTimes = k / 16;
    pa.srcStride = m / 16;
    pa.dstGap = 1;
    pa.dstFracGap = 0;
    for (uint32_t i = 0; i < m / 16; ++i) {
        LoadDataWithTranspose(a2[i * (k / 16) * 256], a1[i * 256], pa);
    }
    LoadData2dTransposeParams pb;  // SplitBTransposeForB32, !isL1Nz
    pb.repeatTimes = n / 16;
    pb.srcStride = 1;
    pb.dstGap = 0;
    pb.dstFracGap = n / 16 - 1;
    for (uint32_t i = 0; i < k / 16; ++i) {
        LoadDataWithTranspose(b2[i * (n / 16) * 256], b1[i * (n / 16) * 256], pb);
    }
    SetFlag<HardEvent::MTE1_M>(EVENT_ID0);  // as the sample does before Mmad
    WaitFlag<HardEvent::MTE1_M>(EVENT_ID0);
    MmadParams mp;
    mp.m = m;
    mp.n = n;
    mp.k = k;
    mp.kDirectionAlign = true;
    Mmad(c, a2, b2, mp);
    SetFlag<HardEvent::M_FIX>(EVENT_ID0);  // as the sample does before the copy out
    WaitFlag<HardEvent::M_FIX>(EVENT_ID0);
    FixpipeParamsV220 fp;
    fp.nSize = n;
    fp.mSize = m;
    fp.srcStride = m;
    fp.dstStride = n;
    Fixpipe(cGM, c, fp);
    ExpectMatrix("C", cf.data(), n, MatMul(Transposed(at, k, m), b, m, k, n), m, n);
}

CONFORMANCE_CASE(load_data_l12l0_float_zz_transposed_32x48x64, L12L0) { FloatZzTransposed<32, 48, 64>(); }
CONFORMANCE_CASE(load_data_l12l0_float_zz_transposed_16x16x16, L12L0) { FloatZzTransposed<16, 16, 16>(); }

CONFORMANCE_CASE(mmad_half_zz_zn_nz_30x40x70, MMAD_DOC) { MmadLayouts<half, float>(30, 40, 70); }
CONFORMANCE_CASE(mmad_float_zz_zn_nz_30x40x70, MMAD_DOC) { MmadLayouts<float, float>(30, 40, 70); }
CONFORMANCE_CASE(mmad_bf16_zz_zn_nz_32x48x64, MMAD_DOC) { MmadLayouts<bfloat16_t, float>(32, 48, 64); }
CONFORMANCE_CASE(mmad_int8_zz_zn_nz_30x40x70, MMAD_DOC) { MmadLayouts<int8_t, int32_t>(30, 40, 70); }
CONFORMANCE_CASE(mmad_half_gemv_1x32x64, MMAD_DOC) { MmadLayouts<half, float>(1, 32, 64); }

// LoadData 2D v1 without transposition, per element width: fractal startIndex + i * srcStride
// to fractal i * (1 + dstGap), 512 bytes each (the doc's "srcStride 2, dstGap 2" example).
template <typename T>
void LoadData2dMapping()
{
    const uint32_t f = 512 / sizeof(T);
    Memory mem(16 * 512, 0, 16 * 512, 0, 0);
    LocalTensor<T> src = mem.a1.Get<T>(), dst = mem.a2.Get<T>();
    for (uint32_t i = 0; i < src.GetSize(); ++i) src.SetValue(i, T(static_cast<float>(i % 97)));
    for (uint32_t i = 0; i < dst.GetSize(); ++i) dst.SetValue(i, T(-1.0f));
    LoadData2DParams p;
    p.startIndex = 1;
    p.repeatTimes = 4;
    p.srcStride = 2;
    p.dstGap = 2;
    LoadData(dst, src, p);
    PipeBarrier<PIPE_ALL>();  // the scalar reads the result after every pipe is done
    for (uint32_t i = 0; i < 4; ++i) {
        for (uint32_t e = 0; e < f; ++e) {
            const float got = static_cast<float>(dst.GetValue(i * 3 * f + e));
            const float want = static_cast<float>((1 + 2 * i) * f + e) - 97.0f * (((1 + 2 * i) * f + e) / 97);
            if (got != want) {
                Mismatch("fractal " + std::to_string(i) + " element " + std::to_string(e) + " is " +
                         std::to_string(got) + ", expected " + std::to_string(want));
            }
        }
    }
}

CONFORMANCE_CASE(load_data_2d_b8_strides, LOAD2D_DOC) { LoadData2dMapping<int8_t>(); }
CONFORMANCE_CASE(load_data_2d_b16_strides, LOAD2D_DOC) { LoadData2dMapping<half>(); }
CONFORMANCE_CASE(load_data_2d_b32_strides, LOAD2D_DOC) { LoadData2dMapping<float>(); }

// LoadData 2D v1 with ifTranspose (b16 only): each 16 x 16 fractal transposed.
CONFORMANCE_CASE(load_data_2d_b16_transpose, LOAD2D_DOC)
{
    Memory mem(4 * 512, 0, 4 * 512, 0, 0);
    LocalTensor<half> src = mem.a1.Get<half>(), dst = mem.a2.Get<half>();
    for (uint32_t i = 0; i < 512; ++i) src.SetValue(i, half(static_cast<float>(i % 256) + 1000.0f * (i / 256)));
    LoadData2DParams p;
    p.repeatTimes = 2;
    p.srcStride = 1;
    p.ifTranspose = true;
    LoadData(dst, src, p);
    PipeBarrier<PIPE_ALL>();  // the scalar reads the result after every pipe is done
    for (uint32_t f = 0; f < 2; ++f) {
        for (uint32_t r = 0; r < 16; ++r) {
            for (uint32_t c = 0; c < 16; ++c) {
                const float got = static_cast<float>(dst.GetValue(f * 256 + r * 16 + c));
                const float want = static_cast<float>(c * 16 + r) + 1000.0f * f;
                if (got != want) {
                    Mismatch("fractal " + std::to_string(f) + " (" + std::to_string(r) + ", " + std::to_string(c) +
                             ") is " + std::to_string(got) + ", expected " + std::to_string(want));
                }
            }
        }
    }
}

// LoadDataWithTranspose per element width, with the doc's parameter sets, against the
// documented squares: b16 one 16 x 16 fractal; b8 two 16 x 32 fractals as a 32 x 32 square
// (rows), split by rows after the transpose; b32 two 16 x 8 fractals as a 16 x 16 square
// (columns), split by columns after the transpose.
template <typename T>
void TransposeMapping(uint16_t repeat, uint16_t srcStride, uint16_t dstGap, uint16_t dstFracGap)
{
    const uint32_t f = 512 / sizeof(T);
    const uint32_t fracs = sizeof(T) == 2 ? 1 : 2;
    const uint32_t side = sizeof(T) == 1 ? 32 : 16;
    Memory mem(32 * 512, 0, 32 * 512, 0, 0);
    LocalTensor<T> src = mem.a1.Get<T>(), dst = mem.a2.Get<T>();
    auto value = [](uint32_t i) { return static_cast<float>(i % 101); };
    for (uint32_t i = 0; i < src.GetSize(); ++i) src.SetValue(i, T(value(i)));
    for (uint32_t i = 0; i < dst.GetSize(); ++i) dst.SetValue(i, T(-1.0f));
    LoadData2dTransposeParams p;
    p.repeatTimes = static_cast<uint8_t>(repeat);
    p.srcStride = srcStride;
    p.dstGap = dstGap;
    p.dstFracGap = dstFracGap;
    LoadDataWithTranspose(dst, src, p);
    PipeBarrier<PIPE_ALL>();  // the scalar reads the result after every pipe is done
    for (uint32_t i = 0; i < repeat; ++i) {
        const uint32_t sq = i * srcStride * f * fracs;  // the square's first element
        // S[r][c] of the square, from the documented fractal order.
        auto S = [&](uint32_t r, uint32_t c) -> float {
            if (sizeof(T) == 4) return value(sq + (c / 8) * f + r * 8 + c % 8);
            return value(sq + r * side + c);
        };
        for (uint32_t j = 0; j < fracs; ++j) {
            const uint32_t base = (i * (dstGap + 1) + j * (dstFracGap + 1)) * f;
            const uint32_t rows = 16, cols = f / 16;
            for (uint32_t r = 0; r < rows; ++r) {
                for (uint32_t c = 0; c < cols; ++c) {
                    // Fractal j of the transpose T = S^T: rows 16j.. (b8), columns 8j.. (b32).
                    float want;
                    if (sizeof(T) == 1) {
                        want = S(c, 16 * j + r);
                    } else if (sizeof(T) == 4) {
                        want = S(8 * j + c, r);
                    } else {
                        want = S(c, r);
                    }
                    const float got = static_cast<float>(dst.GetValue(base + r * cols + c));
                    if (got != want) {
                        Mismatch("repeat " + std::to_string(i) + " fractal " + std::to_string(j) + " (" +
                                 std::to_string(r) + ", " + std::to_string(c) + ") is " + std::to_string(got) +
                                 ", expected " + std::to_string(want));
                    }
                }
            }
        }
    }
}

CONFORMANCE_CASE(load_data_with_transpose_b8_gap1, TRANSPOSE_DOC) { TransposeMapping<int8_t>(3, 1, 1, 0); }
CONFORMANCE_CASE(load_data_with_transpose_b8_fracgap2, TRANSPOSE_DOC) { TransposeMapping<int8_t>(3, 1, 0, 2); }
CONFORMANCE_CASE(load_data_with_transpose_b16, TRANSPOSE_DOC) { TransposeMapping<half>(3, 1, 0, 0); }
CONFORMANCE_CASE(load_data_with_transpose_b32_gap1, TRANSPOSE_DOC) { TransposeMapping<float>(3, 1, 1, 0); }
CONFORMANCE_CASE(load_data_with_transpose_b32_fracgap2, TRANSPOSE_DOC) { TransposeMapping<float>(3, 1, 0, 2); }
CONFORMANCE_CASE(load_data_with_transpose_b32_stride2, TRANSPOSE_DOC) { TransposeMapping<float>(2, 2, 2, 1); }

// Fixpipe L0C -> GM (NZ2ND) with a destination row stride wider than the result and a
// source stride of a taller L0C matrix: element (r, c) from ((c / 16) * srcStride + r) * 16
// + c % 16.
CONFORMANCE_CASE(fixpipe_nz2nd_strides, FIXPIPE_DOC)
{
    Memory mem(0, 0, 0, 0, 64 * 48 * 4);
    LocalTensor<float> c = mem.co1.Get<float>();
    for (uint32_t i = 0; i < 64 * 48; ++i) c.SetValue(i, static_cast<float>(i));
    std::vector<half> out(40 * 64, half(-1.0f));
    GlobalTensor<half> gm;
    gm.SetGlobalBuffer(out.data(), out.size());
    FixpipeParamsV220 fp;
    fp.nSize = 40;
    fp.mSize = 30;
    fp.srcStride = 64;
    fp.dstStride = 64;
    fp.quantPre = QuantMode_t::F322F16;
    Fixpipe(gm, c, fp);
    std::vector<double> want(30 * 40);
    for (uint32_t r = 0; r < 30; ++r) {
        for (uint32_t col = 0; col < 40; ++col) {
            want[r * 40 + col] = static_cast<double>(static_cast<float>(half(static_cast<float>(((col / 16) * 64 + r) * 16 + col % 16))));
        }
    }
    ExpectMatrix("GM", out.data(), 64, want, 30, 40);
}

// DataCopy GM -> L1 with Nd2NzParams, ndNum 2 (the doc's ND2NZ example form): matrix i of
// nValue x dValue from srcNdMatrixStride * i, element (r, c) at dstNzMatrixStride * i +
// (c / c0) * dstNzC0Stride * c0 + r * dstNzNStride * c0 + c % c0.
CONFORMANCE_CASE(nd2nz_two_matrices, "mirror-cann/asc-devkit: docs/zh/api/SIMD-API/基础API/Memory矢量计算/数据搬运/"
                                     "DataCopy/随路转换ND2NZ搬运.md, Nd2NzParams")
{
    std::vector<half> g(2 * 20 * 40);
    for (size_t i = 0; i < g.size(); ++i) g[i] = half(static_cast<float>(i % 500));
    GlobalTensor<half> gm;
    gm.SetGlobalBuffer(g.data(), g.size());
    Memory mem(2 * 32 * 48 * 2, 0, 0, 0, 0);
    LocalTensor<half> l1 = mem.a1.Get<half>();
    for (uint32_t i = 0; i < l1.GetSize(); ++i) l1.SetValue(i, half(-1.0f));
    DataCopy(l1, gm, Nd2NzParams{2, 18, 33, 20 * 40, 40, 32, 1, 32 * 48});
    PipeBarrier<PIPE_ALL>();  // the scalar reads the result after every pipe is done
    for (uint32_t mtx = 0; mtx < 2; ++mtx) {
        for (uint32_t r = 0; r < 18; ++r) {
            for (uint32_t c = 0; c < 33; ++c) {
                const float got = static_cast<float>(l1.GetValue(mtx * 32 * 48 + (c / 16) * 32 * 16 + r * 16 + c % 16));
                const float want = static_cast<float>((mtx * 800 + r * 40 + c) % 500);
                if (got != want) {
                    Mismatch("matrix " + std::to_string(mtx) + " (" + std::to_string(r) + ", " + std::to_string(c) +
                             ") is " + std::to_string(got) + ", expected " + std::to_string(want));
                }
            }
        }
    }
}

}  // namespace

int main() { return RunAll(); }

// The C++ copy helpers of the kernels that use the cube: GM -> L1 in the Nz fractal layout
// (CopyInTileNz, and CopyInTileZz for a 32-bit [K, N] right operand), and L1 -> L0A (Zz) /
// L0B (Zn) (LoadSubTileL0, LoadSubTileL0BZn, LoadSubTileL0BZz32, LoadSubTileL0BNk).
//
// The lowering (`lower/helpers.rs`) pastes the part of this file below the line
// `// ---- kernel source ----` into the source of a kernel that uses the cube, after the
// part of `kernel_helpers.h` (whose MinIndex it uses). The lines above it make this a header
// that compiles on its own.
#pragma once

#include "kernel_helpers.h"

// ---- kernel source ----
namespace {

// One Nd2Nz of a [rows, cols] ND block whose rows are `srcCols` apart, to fractal columns
// `c0Stride` rows high.
__aicore__ inline Nd2NzParams OneNd2Nz(int64_t rows, int64_t cols, int64_t srcCols, int64_t c0Stride)
{
    Nd2NzParams params;
    params.ndNum = 1;
    params.nValue = static_cast<uint16_t>(rows);
    params.dValue = static_cast<uint16_t>(cols);
    params.srcNdMatrixStride = 0;
    params.srcDValue = static_cast<uint16_t>(srcCols);
    params.dstNzC0Stride = static_cast<uint16_t>(c0Stride);
    params.dstNzNStride = 1;
    params.dstNzMatrixStride = 0;
    return params;
}

// The rows and columns of the [tileRows, tileCols] tile at `offsets` that lie inside the
// matrix; where the tile leaves it, the whole L1 tile is first set to `pad` (InitConstValue).
struct Extent {
    int64_t rows;
    int64_t cols;
};

template <typename T>
__aicore__ inline Extent ClipTileL1(const LocalTensor<T>& dst, const int64_t* dims, const int64_t* offsets,
                                    int64_t tileRows, int64_t tileCols, T pad)
{
    const int64_t rows = MinIndex(tileRows, dims[0] - offsets[0]);
    const int64_t cols = MinIndex(tileCols, dims[1] - offsets[1]);
    if (rows < tileRows || cols < tileCols) {
        InitConstValueParams<T> init;
        init.repeatTimes = 1;
        init.blockNum = static_cast<uint16_t>(tileRows * tileCols * sizeof(T) / 32);
        init.dstGap = 0;
        init.initValue = pad;
        InitConstValue(dst, init);
        PipeBarrier<PIPE_MTE2>();
    }
    return Extent{rows, cols};
}

// GM -> L1: the [tileRows, tileCols] tile at `offsets` of a matrix, in the Nz fractal
// layout (Nd2Nz), `pad` where it leaves the matrix (InitConstValue first).
template <typename T>
__aicore__ inline void CopyInTileNz(const LocalTensor<T>& dst, const GlobalTensor<T>& src, const int64_t* dims,
                                    const int64_t* offsets, int64_t tileRows, int64_t tileCols, T pad)
{
    const Extent in = ClipTileL1(dst, dims, offsets, tileRows, tileCols, pad);
    if (in.rows <= 0 || in.cols <= 0) {
        return;
    }
    DataCopy(dst, src[offsets[0] * dims[1] + offsets[1]], OneNd2Nz(in.rows, in.cols, dims[1], tileRows));
}

// GM -> L1 for a 32-bit [K, N] right operand: rows of fractals (Zz), one Nd2Nz per 16 rows,
// so each 16 x 16 square is two adjacent fractals for LoadDataWithTranspose.
template <typename T>
__aicore__ inline void CopyInTileZz(const LocalTensor<T>& dst, const GlobalTensor<T>& src, const int64_t* dims,
                                    const int64_t* offsets, int64_t tileRows, int64_t tileCols, T pad)
{
    const Extent in = ClipTileL1(dst, dims, offsets, tileRows, tileCols, pad);
    for (int64_t rb = 0; rb * 16 < in.rows && in.cols > 0; ++rb) {
        DataCopy(dst[rb * 16 * tileCols], src[(offsets[0] + rb * 16) * dims[1] + offsets[1]],
                 OneNd2Nz(MinIndex(16, in.rows - rb * 16), in.cols, dims[1], 16));
    }
}

// L1 (Nz) -> L0A (Zz): the [m, k] sub-tile at (row, col) of a [srcRows, *] L1 tile, one
// LoadData per 16 rows, starting at the sub-tile's column block (Mmad.md, table 2: L0A is
// Zz; matmul_basic_api.asc loads A so).
template <typename T>
__aicore__ inline void LoadSubTileL0(const LocalTensor<T>& dst, const LocalTensor<T>& src, uint32_t m, uint32_t k,
    uint32_t srcRows, uint32_t row, uint32_t col)
{
    const uint32_t c0 = 32 / sizeof(T);
    for (uint32_t rb = 0; rb < m / 16; ++rb) {
        LoadData2DParams params;
        params.startIndex = static_cast<uint16_t>((col / c0) * (srcRows / 16) + row / 16 + rb);
        params.repeatTimes = static_cast<uint8_t>(k / c0);
        params.srcStride = static_cast<uint16_t>(srcRows / 16);
        params.ifTranspose = false;
        LoadData(dst[rb * (k / c0) * 16 * c0], src, params);
    }
}

// L1 (Nz of a [K, N] operand, 16-bit) -> L0B (Zn): the [k, n] sub-tile at (row, col) of a
// [srcRows, *] L1 tile; per 16 rows of K, its row of fractals, each transposed (as
// matmul_basic_api.asc loads B: Nz -> Zn with ifTranspose).
template <typename T>
__aicore__ inline void LoadSubTileL0BZn(const LocalTensor<T>& dst, const LocalTensor<T>& src, uint32_t k, uint32_t n,
    uint32_t srcRows, uint32_t row, uint32_t col)
{
    for (uint32_t kb = 0; kb < k / 16; ++kb) {
        LoadData2DParams params;
        params.startIndex = static_cast<uint16_t>((col / 16) * (srcRows / 16) + row / 16 + kb);
        params.repeatTimes = static_cast<uint8_t>(n / 16);
        params.srcStride = static_cast<uint16_t>(srcRows / 16);
        params.ifTranspose = true;
        LoadData(dst[kb * (n / 16) * 256], src, params);
    }
}

// L1 (Zz of a [K, N] operand, 32-bit, `srcCols` columns) -> L0B (Zn): the [k, n] sub-tile at
// (row, col); per 16 rows of K, its 16 x 16 squares (two adjacent 16 x 8 fractals each)
// transposed into the two 8-row blocks of K (LoadDataWithTranspose.md; load_data_l12l0.asc,
// SplitBTransposeForB32 with isL1Nz = false).
template <typename T>
__aicore__ inline void LoadSubTileL0BZz32(const LocalTensor<T>& dst, const LocalTensor<T>& src, uint32_t k,
    uint32_t n, uint32_t srcCols, uint32_t row, uint32_t col)
{
    for (uint32_t kb = 0; kb < k / 16; ++kb) {
        LoadData2dTransposeParams params;
        params.startIndex = static_cast<uint16_t>((row / 16 + kb) * (srcCols / 16) + col / 16);
        params.repeatTimes = static_cast<uint8_t>(n / 16);
        params.srcStride = 1;
        params.dstGap = 0;
        params.dstFracGap = static_cast<uint16_t>(n / 16 - 1);
        LoadDataWithTranspose(dst[kb * (n / 16) * 256], src, params);
    }
}

// L1 (Nz of an [N, K] operand, the transpose the cube reads) -> L0B (Zn of [K, N]): the
// [n, k] sub-tile at (row, col) of a [srcRows, *] L1 tile. The Nz fractals of [N, K] are the
// Zn fractals of [K, N], copied as they are, one row of them per c0 columns of K
// (load_data_l12l0.asc, SplitB).
template <typename T>
__aicore__ inline void LoadSubTileL0BNk(const LocalTensor<T>& dst, const LocalTensor<T>& src, uint32_t n, uint32_t k,
    uint32_t srcRows, uint32_t row, uint32_t col)
{
    const uint32_t c0 = 32 / sizeof(T);
    for (uint32_t kb = 0; kb < k / c0; ++kb) {
        LoadData2DParams params;
        params.startIndex = static_cast<uint16_t>((col / c0 + kb) * (srcRows / 16) + row / 16);
        params.repeatTimes = static_cast<uint8_t>(n / 16);
        params.srcStride = 1;
        params.ifTranspose = false;
        LoadData(dst[kb * (n / 16) * 16 * c0], src, params);
    }
}

}  // namespace


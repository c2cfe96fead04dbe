// The C++ copy helpers of the kernels that use the cube: GM -> L1 in the Nz fractal layout
// (CopyInTileNz, and CopyInTileZz for a 32-bit operand read transposed), and L1 -> L0A / L0B
// as rows of fractals (LoadTileL0A, LoadTileL0B, LoadSubTileL0, LoadTileL0BTransposed,
// LoadTileL0BTransposed32).
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

// GM -> L1 for a 32-bit operand the cube reads transposed: rows of fractals (zZ), one
// Nd2Nz per 16 rows, so each 16 x 16 block is two adjacent fractals.
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

// L1 (zZ of the [n, k] operand, 32-bit) -> L0B as [k, n]: each 16 x 16 block of two
// fractals transposed.
template <typename T>
__aicore__ inline void LoadTileL0BTransposed32(const LocalTensor<T>& dst, const LocalTensor<T>& src, uint32_t n,
                                               uint32_t k)
{
    for (uint32_t kb = 0; kb < k / 16; ++kb) {
        LoadData2dTransposeParams params;
        params.startIndex = static_cast<uint16_t>(2 * kb);
        params.repeatTimes = static_cast<uint8_t>(n / 16);
        params.srcStride = static_cast<uint16_t>(k / 8);
        params.dstGap = 0;
        params.dstFracGap = 0;
        LoadDataWithTranspose(dst[kb * (n / 8) * 128], src, params);
    }
}

// L1 (Nz) -> L0A / L0B: the [m, k] sub-tile at (row, col) of a [src_rows, *] L1 tile, one
// LoadData per 16 rows, starting at the sub-tile's column block.
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

// L1 (Nz) -> L0A: the whole [m, k] left operand.
template <typename T>
__aicore__ inline void LoadTileL0A(const LocalTensor<T>& dst, const LocalTensor<T>& src, uint32_t m, uint32_t k)
{
    LoadSubTileL0(dst, src, m, k, m, 0, 0);
}

// L1 (Nz) -> L0B: the whole [k, n] right operand, as rows of fractals.
template <typename T>
__aicore__ inline void LoadTileL0B(const LocalTensor<T>& dst, const LocalTensor<T>& src, uint32_t k, uint32_t n)
{
    LoadSubTileL0(dst, src, k, n, k, 0, 0);
}

// L1 (Nz of the [n, k] operand) -> L0B as [k, n]: each 16 x 16 fractal transposed.
template <typename T>
__aicore__ inline void LoadTileL0BTransposed(const LocalTensor<T>& dst, const LocalTensor<T>& src, uint32_t n,
                                             uint32_t k)
{
    for (uint32_t kb = 0; kb < k / 16; ++kb) {
        LoadData2DParams params;
        params.startIndex = static_cast<uint16_t>(kb * (n / 16));
        params.repeatTimes = static_cast<uint8_t>(n / 16);
        params.srcStride = 1;
        params.ifTranspose = true;
        LoadData(dst[kb * (n / 16) * 256], src, params);
    }
}

}  // namespace


// The C++ helpers every kernel the Ascend C lowering generates starts with: the index
// arithmetic of the kernel IR (Euclidean division and remainder, min and max) and the masked
// tile copies between GM and UB (CopyInTile, CopyOutTile).
//
// The lowering (`lower/helpers.rs`) pastes the part of this file below the line
// `// ---- kernel source ----` into each kernel source, after `#include "kernel_operator.h"`
// and `using namespace AscendC;`. The lines above it make this a header that compiles on its
// own, against CANN's `kernel_operator.h` or this crate's host implementation of it
// (`pto-backends/ascendc/include`).
#pragma once

#include "kernel_operator.h"

using namespace AscendC;

// ---- kernel source ----
namespace {

// Index arithmetic of the kernel IR: Euclidean division and remainder, min and max.
__aicore__ inline int64_t EuclidMod(int64_t a, int64_t b)
{
    if (b == 0) {
        return 0;
    }
    int64_t r = a % b;
    return r < 0 ? r + (b < 0 ? -b : b) : r;
}

__aicore__ inline int64_t EuclidDiv(int64_t a, int64_t b)
{
    return b == 0 ? 0 : (a - EuclidMod(a, b)) / b;
}

__aicore__ inline int64_t MinIndex(int64_t a, int64_t b) { return a < b ? a : b; }
__aicore__ inline int64_t MaxIndex(int64_t a, int64_t b) { return a > b ? a : b; }

// The part of a tile at `offsets` inside a tensor of `dims`, for one (leading index, row
// range, column range) slab: rows [row0, row1) and columns [0, cols) of the slab are valid.
struct Slab {
    int64_t gmOffset;   // element offset in GM of the first valid element
    int64_t ubOffset;   // element offset in UB of the first valid row
    int64_t rows;       // valid rows
    int64_t cols;       // valid columns
    int64_t tileRows;   // rows of the slab in the tile
    int64_t slabOffset; // element offset in UB of the slab
    bool whole;         // every element of the slab is valid
};

// Walks the slabs (the last two dims) of a rank-`rank` tile; calls `f` with each.
template <typename F>
__aicore__ inline void ForEachSlab(const int64_t* dims, const int64_t* offsets, const int64_t* shape,
                                   int32_t rank, uint32_t pitch, F f)
{
    const int64_t tensorCols = rank >= 1 ? dims[rank - 1] : 1;
    const int64_t tensorRows = rank >= 2 ? dims[rank - 2] : 1;
    const int64_t tileCols = rank >= 1 ? shape[rank - 1] : 1;
    const int64_t tileRows = rank >= 2 ? shape[rank - 2] : 1;
    const int64_t colOffset = rank >= 1 ? offsets[rank - 1] : 0;
    const int64_t rowOffset = rank >= 2 ? offsets[rank - 2] : 0;
    int64_t slabs = 1;
    for (int32_t a = 0; a + 2 < rank; ++a) {
        slabs *= shape[a];
    }
    for (int64_t s = 0; s < slabs; ++s) {
        // The GM offset of the slab's leading coordinates, and whether they are inside.
        int64_t lead = s;
        int64_t gm = 0;
        int64_t stride = tensorRows * tensorCols;
        bool inside = true;
        for (int32_t a = rank - 3; a >= 0; --a) {
            const int64_t coord = offsets[a] + lead % shape[a];
            lead /= shape[a];
            inside = inside && coord >= 0 && coord < dims[a];
            gm += coord * stride;
            stride *= dims[a];
        }
        const int64_t row0 = rowOffset < 0 ? -rowOffset : 0;
        const int64_t row1 = MinIndex(tileRows, tensorRows - rowOffset);
        const int64_t col1 = MinIndex(tileCols, tensorCols - colOffset);
        Slab slab;
        slab.tileRows = tileRows;
        slab.slabOffset = s * tileRows * pitch;
        slab.rows = inside && row1 > row0 && col1 > 0 && colOffset >= 0 ? row1 - row0 : 0;
        slab.cols = slab.rows > 0 ? col1 : 0;
        slab.gmOffset = gm + (rowOffset + row0) * tensorCols + colOffset;
        slab.ubOffset = slab.slabOffset + row0 * pitch;
        slab.whole = slab.rows == tileRows && slab.cols == tileCols;
        f(slab, tensorCols);
    }
}

// The DataCopy of `rows` rows of `rowBytes` each, with `srcGapBytes` / `dstGapBytes` between
// rows: all of them whole 32-byte blocks.
__aicore__ inline DataCopyParams RowBlocks(int64_t rows, uint32_t rowBytes, uint32_t srcGapBytes,
                                           uint32_t dstGapBytes)
{
    DataCopyParams params;
    params.blockCount = static_cast<uint16_t>(rows);
    params.blockLen = static_cast<uint16_t>(rowBytes / 32);
    params.srcStride = static_cast<uint16_t>(srcGapBytes / 32);
    params.dstStride = static_cast<uint16_t>(dstGapBytes / 32);
    return params;
}

// GM -> UB: the tile at `offsets`, `pad` where it leaves the tensor (a masked load).
// Whole, 32-byte aligned slabs move with DataCopy; ragged ones with DataCopyPad.
template <typename T>
__aicore__ inline void CopyInTile(const LocalTensor<T>& dst, const GlobalTensor<T>& src,
                                  const int64_t* dims, const int64_t* offsets, const int64_t* shape,
                                  int32_t rank, uint32_t pitch, T pad)
{
    ForEachSlab(dims, offsets, shape, rank, pitch, [&](const Slab& slab, int64_t tensorCols) {
        const uint32_t size = sizeof(T);
        if (!slab.whole) {
            Duplicate(dst[slab.slabOffset], pad, static_cast<int32_t>(slab.tileRows * pitch));
            // The copy in after the padding: an id no TQue holds (FetchEventID).
            const TEventID sync = GetTPipePtr()->FetchEventID<HardEvent::V_MTE2>();
            SetFlag<HardEvent::V_MTE2>(sync);
            WaitFlag<HardEvent::V_MTE2>(sync);
        }
        if (slab.rows == 0) {
            return;
        }
        const uint32_t rowBytes = static_cast<uint32_t>(slab.cols) * size;
        const uint32_t gapBytes = static_cast<uint32_t>(tensorCols - slab.cols) * size;
        if (rowBytes % 32 == 0 && gapBytes % 32 == 0) {
            DataCopy(dst[slab.ubOffset], src[slab.gmOffset],
                     RowBlocks(slab.rows, rowBytes, gapBytes, pitch * size - rowBytes));
        } else {
            const uint32_t alignedBytes = (rowBytes + 31) / 32 * 32;
            DataCopyExtParams params{static_cast<uint16_t>(slab.rows), rowBytes, gapBytes,
                                     (pitch * size - alignedBytes) / 32, 0};
            DataCopyPadExtParams<T> padParams{true, 0,
                                              static_cast<uint8_t>((alignedBytes - rowBytes) / size), pad};
            DataCopyPad(dst[slab.ubOffset], src[slab.gmOffset], params, padParams);
        }
    });
}

// UB -> GM: the part of the tile at `offsets` inside the tensor (a masked store).
template <typename T>
__aicore__ inline void CopyOutTile(const GlobalTensor<T>& dst, const int64_t* dims, const LocalTensor<T>& src,
                                   const int64_t* offsets, const int64_t* shape, int32_t rank, uint32_t pitch)
{
    ForEachSlab(dims, offsets, shape, rank, pitch, [&](const Slab& slab, int64_t tensorCols) {
        if (slab.rows == 0) {
            return;
        }
        const uint32_t size = sizeof(T);
        const uint32_t rowBytes = static_cast<uint32_t>(slab.cols) * size;
        const uint32_t gapBytes = static_cast<uint32_t>(tensorCols - slab.cols) * size;
        if (rowBytes % 32 == 0 && gapBytes % 32 == 0) {
            DataCopy(dst[slab.gmOffset], src[slab.ubOffset],
                     RowBlocks(slab.rows, rowBytes, pitch * size - rowBytes, gapBytes));
        } else {
            const uint32_t alignedBytes = (rowBytes + 31) / 32 * 32;
            DataCopyExtParams params{static_cast<uint16_t>(slab.rows), rowBytes,
                                     (pitch * size - alignedBytes) / 32, gapBytes, 0};
            DataCopyPad(dst[slab.gmOffset], src[slab.ubOffset], params);
        }
    });
}

}  // namespace


// Host implementation of the Ascend C API: the whole-row sort and the split of its
// (score, index) pairs (asc-devkit docs/api/context/Sort.md, layout one, and Extract).
//
// Sort<T, true> sorts `repeatTime` x 32 scores of `concat`, descending, with their indices
// from `index`, into (score, index) pairs of 8 bytes in `dst`: the score in the low bytes
// (a half's 2 bytes then 2 reserved ones, or a float's 4), the uint32 index in the high 4.
// Equal scores keep their input order, as the docs say. A NaN sorts first here, as the
// simulator orders it (the docs do not say where the device puts one). `tmp` must hold as
// many bytes as `dst` (the docs here give no size for it). Only the full sort is modelled.
// Extract splits the first `repeatTime` x 32 pairs into scores and indices.
#ifndef ASCENDC_HOST_SORT_H
#define ASCENDC_HOST_SORT_H

#include <algorithm>
#include <cstring>
#include <numeric>
#include <type_traits>
#include <vector>

#include "vector.h"

namespace AscendC {

namespace host {

template <typename T>
inline void CheckSortType(const char* api)
{
    static_assert(std::is_same<T, half>::value || std::is_same<T, float>::value,
                  "the sort API takes half and float");
    (void)api;
}

// Elements of T per 8-byte pair.
template <typename T>
constexpr int64_t PairElems()
{
    return 8 / static_cast<int64_t>(sizeof(T));
}

}  // namespace host

template <typename T, bool isFullSort>
inline void Sort(const LocalTensor<T>& dst, const LocalTensor<T>& concat, const LocalTensor<uint32_t>& index,
                 LocalTensor<T>& tmp, const int32_t repeatTime)
{
    const char* api = "Sort";
    host::CheckSortType<T>(api);
    if (!isFullSort) {
        host::Fail(api, "unsupported", "only the full sort (isFullSort = true) is implemented on the host");
    }
    if (repeatTime < 0 || repeatTime > 255) {
        host::Fail(api, "repeat", "repeatTime " + std::to_string(repeatTime) + " is outside [0, 255]");
    }
    const int64_t n = 32 * static_cast<int64_t>(repeatTime);
    host::CheckVector(api, concat, n, "concat");
    host::CheckVector(api, index, n, "index");
    host::CheckVector(api, dst, n * host::PairElems<T>(), "dst");
    host::CheckVector(api, tmp, n * host::PairElems<T>(), "tmp");
    std::vector<int64_t> order(static_cast<size_t>(n));
    std::iota(order.begin(), order.end(), 0);
    const auto score = [&](int64_t i) { return static_cast<float>(concat.Data()[i]); };
    std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
        const float x = score(a), y = score(b);
        if (x != x || y != y) {
            return x != x && y == y;
        }
        return x > y;
    });
    unsigned char* out = reinterpret_cast<unsigned char*>(dst.Data());
    for (int64_t p = 0; p < n; ++p) {
        unsigned char pair[8] = {0};
        const T s = concat.Data()[order[static_cast<size_t>(p)]];
        const uint32_t id = index.Data()[order[static_cast<size_t>(p)]];
        std::memcpy(pair, &s, sizeof(T));
        std::memcpy(pair + 4, &id, sizeof(uint32_t));
        std::memcpy(out + 8 * p, pair, 8);
    }
}

template <typename T>
inline void Extract(const LocalTensor<T>& dstValue, const LocalTensor<uint32_t>& dstIndex,
                    const LocalTensor<T>& sorted, const int32_t repeatTime)
{
    const char* api = "Extract";
    host::CheckSortType<T>(api);
    if (repeatTime < 0 || repeatTime > 255) {
        host::Fail(api, "repeat", "repeatTime " + std::to_string(repeatTime) + " is outside [0, 255]");
    }
    const int64_t n = 32 * static_cast<int64_t>(repeatTime);
    host::CheckVector(api, dstValue, n, "dstValue");
    host::CheckVector(api, dstIndex, n, "dstIndex");
    host::CheckVector(api, sorted, n * host::PairElems<T>(), "sorted");
    const unsigned char* in = reinterpret_cast<const unsigned char*>(sorted.Data());
    for (int64_t p = 0; p < n; ++p) {
        T s;
        uint32_t id = 0;
        std::memcpy(&s, in + 8 * p, sizeof(T));
        std::memcpy(&id, in + 8 * p + 4, sizeof(uint32_t));
        dstValue.Data()[p] = s;
        dstIndex.Data()[p] = id;
    }
}

}  // namespace AscendC

#endif  // ASCENDC_HOST_SORT_H

// Shared by the op_host sources of a pto-op package: graph-engine dtypes <-> the ONNX codes of
// the C ABI, shapes in and out of the gert contexts, and saving a tiling struct.
// NOT VERIFIED: written against the CANN 9.0 op_host API as documented (gert::InferShapeContext,
// gert::TilingContext, ge::DataType); no toolkit was available to compile it.
#ifndef PTO_OP_HOST_H
#define PTO_OP_HOST_H

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>

#include "register/op_def_registry.h"
#include "pto_infer_common.h"

namespace pto_package {

// The ONNX TensorProto.DataType code of a graph-engine dtype; -1 for one pto-op lacks.
inline int32_t OnnxCode(ge::DataType dtype)
{
    switch (dtype) {
        case ge::DT_FLOAT: return 1;
        case ge::DT_UINT8: return 2;
        case ge::DT_INT8: return 3;
        case ge::DT_INT32: return 6;
        case ge::DT_INT64: return 7;
        case ge::DT_BOOL: return 9;
        case ge::DT_FLOAT16: return 10;
        case ge::DT_BF16: return 16;
        default: return -1;
    }
}

// The graph-engine dtype of an ONNX code.
inline ge::DataType GeDataType(int32_t code)
{
    switch (code) {
        case 1: return ge::DT_FLOAT;
        case 2: return ge::DT_UINT8;
        case 3: return ge::DT_INT8;
        case 6: return ge::DT_INT32;
        case 7: return ge::DT_INT64;
        case 9: return ge::DT_BOOL;
        case 10: return ge::DT_FLOAT16;
        case 16: return ge::DT_BF16;
        default: return ge::DT_UNDEFINED;
    }
}

// A gert shape as the C ABI's descriptor; false when its rank exceeds PTO_MAX_RANK.
inline bool ToPtoShape(const gert::Shape &shape, PtoShape *out)
{
    const size_t rank = shape.GetDimNum();
    if (rank > PTO_MAX_RANK) {
        return false;
    }
    out->rank = static_cast<uint32_t>(rank);
    for (size_t d = 0; d < rank; ++d) {
        out->dims[d] = shape.GetDim(d);
    }
    return true;
}

// Writes the C ABI's descriptor to a gert shape.
inline void FromPtoShape(const PtoShape &shape, gert::Shape *out)
{
    out->SetDimNum(shape.rank);
    for (uint32_t d = 0; d < shape.rank; ++d) {
        out->SetDim(d, shape.dims[d]);
    }
}

// True when the gert shape has exactly these dims.
inline bool SameDims(const gert::Shape &shape, const int64_t *dims, size_t rank)
{
    if (shape.GetDimNum() != rank) {
        return false;
    }
    for (size_t d = 0; d < rank; ++d) {
        if (shape.GetDim(d) != dims[d]) {
            return false;
        }
    }
    return true;
}

// The system workspace a kernel's workspace starts with (the kernel skips it with
// GetUserWorkspace): the 16 MiB the CANN custom-op samples reserve.
constexpr size_t SYSTEM_WORKSPACE_BYTES = 16u * 1024u * 1024u;

// Sets the launch size and the workspace: none for a kernel without one, else the system
// workspace and the kernel's `user_workspace` bytes (the hand-off slots of a 910B mix kernel).
inline ge::graphStatus SetLaunch(gert::TilingContext *context, uint32_t block_dim,
                                 uint64_t user_workspace)
{
    context->SetBlockDim(block_dim);
    size_t *workspace = context->GetWorkspaceSizes(1);
    if (workspace != nullptr) {
        workspace[0] = user_workspace == 0 ? 0 : SYSTEM_WORKSPACE_BYTES + static_cast<size_t>(user_workspace);
    }
    return ge::GRAPH_SUCCESS;
}

// Copies a plain tiling struct into the context's raw tiling data, then SetLaunch: for SoCs
// whose TilingContext offers no GetTilingData<T>() (Kirin: the recipe's TilingFunc writes the
// raw buffer, ops/ascendc/src/add_custom/op_host/add_custom.cpp).
template <typename Tiling>
ge::graphStatus SaveTiling(gert::TilingContext *context, const Tiling &tiling, uint32_t block_dim,
                           uint64_t user_workspace, const char *op)
{
    gert::TilingData *raw = context->GetRawTilingData();
    if (raw == nullptr || raw->GetCapacity() < sizeof(Tiling)) {
        std::fprintf(stderr, "%s: the tiling buffer cannot hold %zu bytes\n", op, sizeof(Tiling));
        return ge::GRAPH_FAILED;
    }
    std::memcpy(raw->GetData(), &tiling, sizeof(Tiling));
    raw->SetDataSize(sizeof(Tiling));
    return SetLaunch(context, block_dim, user_workspace);
}

}  // namespace pto_package

#endif  // PTO_OP_HOST_H

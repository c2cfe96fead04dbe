// Conformance cases of Kirin 9030 (dav-l311, __NPU_ARCH__ 3113): the cube calls it has
// compute what the docs say, and the ones it lacks are refused with the SoC and the source.
#include "harness.h"

using namespace AscendC;
using namespace conformance;

namespace {

const char* const MMAD_DOC = "mirror-cann/asc-devkit: docs/zh/api/SIMD-API/基础API/矩阵计算（ISASI）/Mmad计算/Mmad.md, "
                             "table 12 (Kirin 9030: half x half -> half only)";
const char* const LOAD2D_IMPL = "mirror-cann/asc-devkit: impl/basic_api/dav_l311/kernel_operator_mm_impl.h "
                                "(LoadData 2dv1 is not supported)";
const char* const TRANSPOSE_DOC = "mirror-cann/asc-devkit: docs/zh/api/SIMD-API/基础API/矩阵计算（ISASI）/矩阵计算的搬入/"
                                  "LoadDataWithTranspose.md (Kirin 9030: 不支持)";
const char* const FIXPIPE_UB_DOC = "mirror-cann/asc-devkit: docs/zh/api/SIMD-API/基础API/矩阵计算（ISASI）/矩阵计算的搬出/"
                                   "Fixpipe（L0C到UB数据搬运）.md (Kirin 9030: 不支持)";

CONFORMANCE_CASE(mmad_half_to_half_30x40x70, MMAD_DOC) { MmadLayouts<half, half>(30, 40, 70); }

CONFORMANCE_REFUSAL(mmad_half_to_float_refused, MMAD_DOC, "does not exist on kirin9030")
{
    MmadLayouts<half, float>(32, 32, 32);
}

CONFORMANCE_REFUSAL(mmad_float_refused, MMAD_DOC, "does not exist on kirin9030")
{
    MmadLayouts<float, float>(32, 32, 32);
}

CONFORMANCE_REFUSAL(mmad_int8_refused, MMAD_DOC, "does not exist on kirin9030")
{
    MmadLayouts<int8_t, int32_t>(32, 32, 32);
}

CONFORMANCE_REFUSAL(load_data_2d_v1_refused, LOAD2D_IMPL, "does not exist on kirin9030")
{
    Memory mem(4 * 512, 0, 4 * 512, 0, 0);
    LocalTensor<half> src = mem.a1.Get<half>(), dst = mem.a2.Get<half>();
    LoadData2DParams p;
    p.repeatTimes = 1;
    LoadData(dst, src, p);
}

CONFORMANCE_REFUSAL(load_data_with_transpose_refused, TRANSPOSE_DOC, "does not exist on kirin9030")
{
    Memory mem(4 * 512, 0, 0, 4 * 512, 0);
    LocalTensor<half> src = mem.a1.Get<half>(), dst = mem.b2.Get<half>();
    LoadData2dTransposeParams p;
    p.repeatTimes = 1;
    LoadDataWithTranspose(dst, src, p);
}

CONFORMANCE_REFUSAL(fixpipe_l0c_to_ub_refused, FIXPIPE_UB_DOC, "does not exist on kirin9030")
{
    Memory mem(0, 0, 0, 0, 1024, 1024);
    LocalTensor<half> c = mem.co1.Get<half>();
    LocalTensor<half> ub = mem.ub.Get<half>();
    FixpipeParamsV220 fp;
    fp.nSize = 16;
    fp.mSize = 16;
    fp.srcStride = 16;
    fp.dstStride = 16;
    Fixpipe(ub, c, fp);
}

}  // namespace

int main() { return RunAll(); }

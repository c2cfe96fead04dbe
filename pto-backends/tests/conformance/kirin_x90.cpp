// Conformance cases of Kirin X90 (dav-l300, __NPU_ARCH__ 3003): its cube computes half ->
// half and int8 -> int32 as the docs say; float accumulation, 32-bit transposing loads and
// L0C -> UB are refused with the SoC and the source.
#include "harness.h"

using namespace AscendC;
using namespace conformance;

namespace {

const char* const MMAD_DOC = "mirror-cann/asc-devkit: docs/zh/api/SIMD-API/基础API/矩阵计算（ISASI）/Mmad计算/Mmad.md, "
                             "table 11 (Kirin X90: int8 -> int32, half -> half)";
const char* const TRANSPOSE_DOC = "mirror-cann/asc-devkit: docs/zh/api/SIMD-API/基础API/矩阵计算（ISASI）/矩阵计算的搬入/"
                                  "LoadDataWithTranspose.md (Kirin X90: int8_t, half)";
const char* const FIXPIPE_UB_DOC = "mirror-cann/asc-devkit: docs/zh/api/SIMD-API/基础API/矩阵计算（ISASI）/矩阵计算的搬出/"
                                   "Fixpipe（L0C到UB数据搬运）.md (Kirin X90: 不支持)";

CONFORMANCE_CASE(mmad_half_to_half_30x40x70, MMAD_DOC) { MmadLayouts<half, half>(30, 40, 70); }
CONFORMANCE_CASE(mmad_int8_to_int32_30x40x70, MMAD_DOC) { MmadLayouts<int8_t, int32_t>(30, 40, 70); }

CONFORMANCE_REFUSAL(mmad_half_to_float_refused, MMAD_DOC, "does not exist on kirinx90")
{
    MmadLayouts<half, float>(32, 32, 32);
}

CONFORMANCE_REFUSAL(load_data_with_transpose_b32_refused, TRANSPOSE_DOC, "does not exist on kirinx90")
{
    Memory mem(4 * 512, 0, 0, 4 * 512, 0);
    LocalTensor<float> src = mem.a1.Get<float>(), dst = mem.b2.Get<float>();
    LoadData2dTransposeParams p;
    p.repeatTimes = 1;
    LoadDataWithTranspose(dst, src, p);
}

CONFORMANCE_REFUSAL(fixpipe_l0c_to_ub_refused, FIXPIPE_UB_DOC, "does not exist on kirinx90")
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

// Conformance cases of the pipe synchronisation: the flag points of the official K-loop
// matmul sample pass (and compute the plain A B), the same sequence with any one of them
// removed is refused as a race naming the event it needed, and the flag and event-id rules
// of the docs are enforced.
#include "harness.h"

using namespace AscendC;
using namespace conformance;

namespace {

// Where the flags go: data_copy_l0c2gm.asc, Process(): per round of K, CopyIn,
// MTE2_MTE1, SplitA / SplitB, MTE1_M, MTE1_MTE2, Compute (Mmad), M_MTE1; after the loop
// M_FIX and the copy out of L0C. The loads L1 -> L0A / L0B are matmul_basic_api.asc's.
const char* const KLOOP = "mirror-cann/asc-devkit: examples/01_simd_cpp_api/03_basic_api/00_data_movement/"
                          "data_copy_l0c2gm/data_copy_l0c2gm.asc (Process: the K loop's SetFlag/WaitFlag points), "
                          "loads of examples/01_simd_cpp_api/00_introduction/02_matrix/matmul_basic_api";
const char* const FLAG_DOC = "mirror-cann/asc-devkit: docs/zh/api/SIMD-API/基础API/同步控制/核内同步/SetFlag-WaitFlag(ISASI).md; "
                             "impl/basic_api/kernel_event.h (set_flag / wait_flag of one event id)";
const char* const EVENT_ID_DOC = "mirror-cann/asc-devkit: docs/zh/api/SIMD-API/基础API/资源管理/Pipe和Que框架/TPipe/AllocEventID.md, "
                                 "FetchEventID.md, ReleaseEventID.md; impl/basic_api/kernel_event.h (QUE_MAX_EVENT)";
const char* const TQUE_SAMPLE = "mirror-cann/asc-devkit: examples/01_simd_cpp_api/00_introduction/01_add/"
                                "add_tpipe_tque/add_tpipe_tque.asc (AllocTensor, DataCopy, EnQue / DeQue, Add)";

// Which of the sample's flags a case leaves out.
enum Skip { NONE, MTE2_MTE1, MTE1_M, MTE1_MTE2, M_MTE1, M_FIX };

template <HardEvent event>
void SetWait(Skip skip, Skip self)
{
    if (skip != self) {
        SetFlag<event>(EVENT_ID0);
        WaitFlag<event>(EVENT_ID0);
    }
}

// C = A0 B0 + A1 B1: two rounds of K (K_ROUND = 2) of [32, 32] f16 blocks into one f32
// L0C, the L1 and L0 tiles reused by the second round, then F322F16 out.
void KLoop(Skip skip)
{
    constexpr uint32_t M = 32, K = 32, N = 32, ROUNDS = 2;
    const std::vector<float> a = Integers(ROUNDS * M * K, -3, 3, 21);
    const std::vector<float> b = Integers(ROUNDS * K * N, -3, 3, 22);
    std::vector<half> ah = As<half>(a), bh = As<half>(b), ch(M * N);
    GlobalTensor<half> aGM, bGM, cGM;
    aGM.SetGlobalBuffer(ah.data(), ah.size());
    bGM.SetGlobalBuffer(bh.data(), bh.size());
    cGM.SetGlobalBuffer(ch.data(), ch.size());
    Memory mem(M * K * 2, K * N * 2, M * K * 2, K * N * 2, M * N * 4);
    LocalTensor<half> a1 = mem.a1.Get<half>(), b1 = mem.b1.Get<half>();
    LocalTensor<half> a2 = mem.a2.Get<half>(), b2 = mem.b2.Get<half>();
    LocalTensor<float> c = mem.co1.Get<float>();
    for (uint32_t round = 0; round < ROUNDS; ++round) {
        DataCopy(a1, aGM[round * M * K], Nd2NzParams{1, M, K, 0, K, M, 1, 0});
        DataCopy(b1, bGM[round * K * N], Nd2NzParams{1, K, N, 0, N, K, 1, 0});
        SetWait<HardEvent::MTE2_MTE1>(skip, MTE2_MTE1);
        for (uint32_t i = 0; i < M / 16; ++i) {
            LoadData(a2[i * K * 16], a1[i * 512 / sizeof(half)], LoadData2DParams{0, K / 16, M / 16, 0, 0, false, 0});
        }
        for (uint32_t i = 0; i < K / 16; ++i) {
            LoadData(b2[i * N * 16], b1[i * 512 / sizeof(half)], LoadData2DParams{0, N / 16, K / 16, 0, 0, true, 0});
        }
        SetWait<HardEvent::MTE1_M>(skip, MTE1_M);
        SetWait<HardEvent::MTE1_MTE2>(skip, MTE1_MTE2);
        MmadParams mp;
        mp.m = M;
        mp.n = N;
        mp.k = K;
        mp.cmatrixInitVal = round == 0;
        Mmad(c, a2, b2, mp);
        SetWait<HardEvent::M_MTE1>(skip, M_MTE1);
    }
    SetWait<HardEvent::M_FIX>(skip, M_FIX);
    FixpipeParamsV220 fp;
    fp.nSize = N;
    fp.mSize = M;
    fp.srcStride = M;
    fp.dstStride = N;
    fp.quantPre = QuantMode_t::F322F16;
    Fixpipe(cGM, c, fp);
    PipeBarrier<PIPE_ALL>();
    std::vector<double> want = MatMul(std::vector<float>(a.begin(), a.begin() + M * K),
                                      std::vector<float>(b.begin(), b.begin() + K * N), M, K, N);
    const std::vector<double> second = MatMul(std::vector<float>(a.begin() + M * K, a.end()),
                                              std::vector<float>(b.begin() + K * N, b.end()), M, K, N);
    for (size_t i = 0; i < want.size(); ++i) {
        want[i] += second[i];
    }
    ExpectMatrix("C", ch.data(), N, want, M, N);
}

}  // namespace

CONFORMANCE_CASE(k_loop_with_the_samples_flags, KLOOP) { KLoop(NONE); }

// The first round's LoadData reads L1 before the copy in has landed.
CONFORMANCE_REFUSAL(k_loop_without_mte2_mte1, KLOOP, "needs SetFlag/WaitFlag<HardEvent::MTE2_MTE1>")
{
    KLoop(MTE2_MTE1);
}

// Mmad reads L0A before LoadData has written it.
CONFORMANCE_REFUSAL(k_loop_without_mte1_m, KLOOP, "needs SetFlag/WaitFlag<HardEvent::MTE1_M>") { KLoop(MTE1_M); }

// The second round's copy in overwrites L1 that the first round's LoadData may still read.
CONFORMANCE_REFUSAL(k_loop_without_mte1_mte2, KLOOP, "needs SetFlag/WaitFlag<HardEvent::MTE1_MTE2>")
{
    KLoop(MTE1_MTE2);
}

// The second round's LoadData overwrites L0A that the first round's Mmad may still read.
CONFORMANCE_REFUSAL(k_loop_without_m_mte1, KLOOP, "needs SetFlag/WaitFlag<HardEvent::M_MTE1>") { KLoop(M_MTE1); }

// The copy out of L0C reads it before Mmad has written it.
CONFORMANCE_REFUSAL(k_loop_without_m_fix, KLOOP, "needs SetFlag/WaitFlag<HardEvent::M_FIX>") { KLoop(M_FIX); }

// A flag is one bit: a second SetFlag before its WaitFlag is refused.
CONFORMANCE_REFUSAL(a_flag_set_twice_is_refused, FLAG_DOC, "which is already set and not yet waited for")
{
    Memory mem(0, 0, 0, 0, 0, 1024);
    SetFlag<HardEvent::MTE2_V>(EVENT_ID1);
    SetFlag<HardEvent::MTE2_V>(EVENT_ID1);
}

// A WaitFlag with no SetFlag before it would wait forever.
CONFORMANCE_REFUSAL(a_wait_without_a_set_is_refused, FLAG_DOC, "without a SetFlag before it")
{
    Memory mem(0, 0, 0, 0, 0, 1024);
    WaitFlag<HardEvent::V_MTE3>(EVENT_ID0);
}

// A vector instruction reading UB that MTE2 wrote, with no synchronisation between them.
CONFORMANCE_REFUSAL(a_vector_read_of_a_copy_in_without_a_flag_is_refused, TQUE_SAMPLE,
                    "read after write on UB bytes [0, 1024)")
{
    std::vector<float> x(256, 1.0f);
    GlobalTensor<float> xGM;
    xGM.SetGlobalBuffer(x.data(), x.size());
    Memory mem(0, 0, 0, 0, 0, 2048);
    LocalTensor<float> in = mem.ub.Get<float>(256), out = mem.ub.GetWithOffset<float>(256, 1024);
    DataCopy(in, xGM, 256);
    Add(out, in, in, 256);
}

// The sample's queue: DataCopy in, EnQue, DeQue, Add, EnQue, DeQue, DataCopy out: the
// queues' own events order the pipes, and the ids go back to the TPipe.
CONFORMANCE_CASE(tque_enque_and_deque_order_the_pipes, TQUE_SAMPLE)
{
    constexpr uint32_t n = 256;
    std::vector<float> x(n), y(n, 0.0f);
    for (uint32_t i = 0; i < n; ++i) {
        x[i] = static_cast<float>(i % 7) - 3.0f;
    }
    GlobalTensor<float> xGM, yGM;
    xGM.SetGlobalBuffer(x.data(), n);
    yGM.SetGlobalBuffer(y.data(), n);
    TPipe pipe;
    TQue<TPosition::VECIN, 1> inQueue;
    TQue<TPosition::VECOUT, 1> outQueue;
    pipe.InitBuffer(inQueue, 1, n * sizeof(float));
    pipe.InitBuffer(outQueue, 1, n * sizeof(float));
    for (int round = 0; round < 2; ++round) {
        LocalTensor<float> in = inQueue.AllocTensor<float>();
        DataCopy(in, xGM, n);
        inQueue.EnQue(in);
        LocalTensor<float> a = inQueue.DeQue<float>();
        LocalTensor<float> out = outQueue.AllocTensor<float>();
        Add(out, a, a, n);
        outQueue.EnQue(out);
        inQueue.FreeTensor(a);
        LocalTensor<float> staged = outQueue.DeQue<float>();
        DataCopy(yGM, staged, n);
        outQueue.FreeTensor(staged);
    }
    std::vector<double> want(n);
    for (uint32_t i = 0; i < n; ++i) {
        want[i] = 2.0 * x[i];
    }
    ExpectMatrix("y", y.data(), n, want, 1, n);
}

// A fixed EVENT_ID0 on an event whose id 0 a TQue holds (its EnQue set it) is refused.
CONFORMANCE_REFUSAL(a_fixed_event_id_a_tque_holds_is_refused, EVENT_ID_DOC, "is held by a TQue of the TPipe")
{
    std::vector<float> x(256, 1.0f);
    GlobalTensor<float> xGM;
    xGM.SetGlobalBuffer(x.data(), x.size());
    TPipe pipe;
    TQue<TPosition::VECIN, 1> inQueue;
    pipe.InitBuffer(inQueue, 1, 1024);
    LocalTensor<float> in = inQueue.AllocTensor<float>();
    DataCopy(in, xGM, 256);
    inQueue.EnQue(in);
    SetFlag<HardEvent::MTE2_V>(EVENT_ID0);
}

// FetchEventID gives an id no TQue holds; AllocEventID holds one until ReleaseEventID.
CONFORMANCE_CASE(event_ids_come_from_the_tpipe, EVENT_ID_DOC)
{
    std::vector<float> x(256, 1.0f);
    GlobalTensor<float> xGM;
    xGM.SetGlobalBuffer(x.data(), x.size());
    TPipe pipe;
    TQue<TPosition::VECIN, 1> inQueue;
    pipe.InitBuffer(inQueue, 1, 1024);
    LocalTensor<float> in = inQueue.AllocTensor<float>();
    DataCopy(in, xGM, 256);
    inQueue.EnQue(in);
    const TEventID fetched = GetTPipePtr()->FetchEventID<HardEvent::MTE2_V>();
    if (fetched == 0) {
        Mismatch("FetchEventID returned id 0, which the queue's EnQue holds");
    }
    SetFlag<HardEvent::MTE2_V>(fetched);
    WaitFlag<HardEvent::MTE2_V>(fetched);
    const TEventID held = GetTPipePtr()->AllocEventID<HardEvent::V_S>();
    if (GetTPipePtr()->FetchEventID<HardEvent::V_S>() == held) {
        Mismatch("FetchEventID returned the id AllocEventID holds");
    }
    GetTPipePtr()->ReleaseEventID<HardEvent::V_S>(held);
    LocalTensor<float> a = inQueue.DeQue<float>();
    inQueue.FreeTensor(a);
}

// QUE_MAX_EVENT ids per event: a ninth AllocEventID is refused.
CONFORMANCE_REFUSAL(event_ids_run_out_after_eight, EVENT_ID_DOC, "ids of HardEvent::V_S are held or set")
{
    TPipe pipe;
    for (int i = 0; i < 9; ++i) {
        GetTPipePtr()->AllocEventID<HardEvent::V_S>();
    }
}

int main() { return conformance::RunAll(); }

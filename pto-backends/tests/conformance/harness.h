// The conformance suite's harness: cases of the host implementation of the Ascend C API,
// each a call sequence from a public doc example or official sample (cited in the case),
// checked against values from mathematics (a plain matrix product, the documented element
// mapping), never against the host implementation itself.
//
// Each case runs in a child process (the host implementation reports a broken rule by
// exiting), and the parent prints one line per case:
//   CASE <tab> name <tab> PASS|FAIL|REFUSED <tab> source <tab> detail
// REFUSED is a case whose call sequence the host implementation stopped with a rule of the
// device; a case that expects that (a call the SoC lacks) says so with ExpectRefusal.
#pragma once

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "kernel_operator.h"

namespace conformance {




struct Case {
    const char* name;
    const char* source;
    void (*run)();
    const char* refusal;  // non-null: the case passes when the host refuses with this text
};

inline std::vector<Case>& Cases()
{
    static std::vector<Case> cases;
    return cases;
}

struct Register {
    Register(const char* name, const char* source, void (*run)(), const char* refusal = nullptr)
    {
        Cases().push_back(Case{name, source, run, refusal});
    }
};

// A case: CASE(name, "repository: path") { body }.
#define CONFORMANCE_CASE(name, source)                                  \
    static void name();                                                 \
    static ::conformance::Register register_##name(#name, source, name); \
    static void name()

// A case that must be refused by the host, with `text` in the message.
#define CONFORMANCE_REFUSAL(name, source, text)                               \
    static void name();                                                       \
    static ::conformance::Register register_##name(#name, source, name, text); \
    static void name()

// Ends the case as failed, with what differs.
[[noreturn]] inline void Mismatch(const std::string& detail)
{
    std::printf("%s", detail.c_str());
    std::fflush(stdout);
    std::_Exit(1);
}

// Deterministic small integers in [lo, hi]: products and sums of them are exact in f16
// (below 2048) and f32, so the expected values are exact.
inline std::vector<float> Integers(size_t n, int lo, int hi, uint32_t seed)
{
    std::vector<float> v(n);
    uint32_t x = seed * 2654435761u + 1;
    for (size_t i = 0; i < n; ++i) {
        x = x * 1664525u + 1013904223u;
        v[i] = static_cast<float>(lo + static_cast<int>((x >> 8) % static_cast<uint32_t>(hi - lo + 1)));
    }
    return v;
}

// C = A B of a row-major [m, k] A and [k, n] B, in double.
inline std::vector<double> MatMul(const std::vector<float>& a, const std::vector<float>& b, size_t m, size_t k,
                                  size_t n)
{
    std::vector<double> c(m * n, 0.0);
    for (size_t i = 0; i < m; ++i) {
        for (size_t j = 0; j < n; ++j) {
            double s = 0.0;
            for (size_t p = 0; p < k; ++p) {
                s += static_cast<double>(a[i * k + p]) * static_cast<double>(b[p * n + j]);
            }
            c[i * n + j] = s;
        }
    }
    return c;
}

// The transpose of a row-major [rows, cols] matrix.
inline std::vector<float> Transposed(const std::vector<float>& a, size_t rows, size_t cols)
{
    std::vector<float> t(a.size());
    for (size_t r = 0; r < rows; ++r) {
        for (size_t c = 0; c < cols; ++c) {
            t[c * rows + r] = a[r * cols + c];
        }
    }
    return t;
}

template <typename T>
inline std::vector<T> As(const std::vector<float>& v)
{
    std::vector<T> out;
    out.reserve(v.size());
    for (float x : v) {
        out.push_back(T(x));
    }
    return out;
}

// Fails unless `got[i * stride + j]` equals `want[i * cols + j]` within `tol` for every
// element of a [rows, cols] result.
template <typename T>
inline void ExpectMatrix(const char* what, const T* got, size_t stride, const std::vector<double>& want, size_t rows,
                         size_t cols, double tol = 0.0)
{
    size_t wrong = 0;
    double worst = 0.0;
    std::string first;
    for (size_t i = 0; i < rows; ++i) {
        for (size_t j = 0; j < cols; ++j) {
            const double g = static_cast<double>(static_cast<float>(got[i * stride + j]));
            const double w = want[i * cols + j];
            const double err = g > w ? g - w : w - g;
            if (!(err <= tol)) {
                if (wrong == 0) {
                    first = "(" + std::to_string(i) + ", " + std::to_string(j) + ") is " + std::to_string(g) +
                            ", expected " + std::to_string(w);
                }
                ++wrong;
                worst = err > worst ? err : worst;
            }
        }
    }
    if (wrong != 0) {
        Mismatch(std::string(what) + ": " + std::to_string(wrong) + " of " + std::to_string(rows * cols) +
                 " elements wrong, max abs error " + std::to_string(worst) + "; first: " + first);
    }
}

// The local memory of a case: tensors at a position, from a TPipe, as a kernel has them.
struct Memory {
    AscendC::TPipe pipe;
    AscendC::TBuf<AscendC::TPosition::A1> a1;
    AscendC::TBuf<AscendC::TPosition::B1> b1;
    AscendC::TBuf<AscendC::TPosition::A2> a2;
    AscendC::TBuf<AscendC::TPosition::B2> b2;
    AscendC::TBuf<AscendC::TPosition::CO1> co1;
    AscendC::TBuf<AscendC::TPosition::VECCALC> ub;

    Memory(uint32_t a1Bytes, uint32_t b1Bytes, uint32_t a2Bytes, uint32_t b2Bytes, uint32_t co1Bytes,
           uint32_t ubBytes = 0)
    {
        if (a1Bytes) pipe.InitBuffer(a1, Round(a1Bytes));
        if (b1Bytes) pipe.InitBuffer(b1, Round(b1Bytes));
        if (a2Bytes) pipe.InitBuffer(a2, Round(a2Bytes));
        if (b2Bytes) pipe.InitBuffer(b2, Round(b2Bytes));
        if (co1Bytes) pipe.InitBuffer(co1, Round(co1Bytes));
        if (ubBytes) pipe.InitBuffer(ub, Round(ubBytes));
    }

    static uint32_t Round(uint32_t bytes) { return (bytes + 1023) / 1024 * 1024; }
};

inline uint32_t CeilAlign(uint32_t v, uint32_t a) { return (v + a - 1) / a * a; }

// Mmad on operands written straight in the documented layouts, at the doc's M=30, K=70,
// N=40 (partial fractals) and GEMV (M = 1: L0A read as ND).
template <typename T, typename D>
inline void MmadLayouts(uint32_t m, uint32_t n, uint32_t k)
{
    const uint32_t c0 = 32 / sizeof(T);
    const std::vector<float> a = Integers(m * k, -3, 3, 9);
    const std::vector<float> b = Integers(k * n, -3, 3, 10);
    const uint32_t mf = (m + 15) / 16, kf = (k + c0 - 1) / c0, nf = (n + 15) / 16;
    Memory mem(0, 0, mf * 16 * kf * 32, kf * nf * 16 * 32, mf * nf * 256 * 4);
    AscendC::LocalTensor<T> a2 = mem.a2.Get<T>(), b2 = mem.b2.Get<T>();
    AscendC::LocalTensor<D> c = mem.co1.Get<D>();
    for (uint32_t i = 0; i < a2.GetSize(); ++i) a2.SetValue(i, T(0.0f));
    for (uint32_t i = 0; i < b2.GetSize(); ++i) b2.SetValue(i, T(0.0f));
    for (uint32_t r = 0; r < m; ++r) {
        for (uint32_t p = 0; p < k; ++p) {
            const uint32_t zz = ((r / 16) * kf + p / c0) * 16 * c0 + (r % 16) * c0 + p % c0;
            a2.SetValue(m == 1 ? p : zz, T(a[r * k + p]));
        }
    }
    for (uint32_t p = 0; p < k; ++p) {
        for (uint32_t j = 0; j < n; ++j) {
            b2.SetValue(((p / c0) * nf + j / 16) * 16 * c0 + (j % 16) * c0 + p % c0, T(b[p * n + j]));
        }
    }
    AscendC::MmadParams mp;
    mp.m = m;
    mp.n = n;
    mp.k = k;
    AscendC::Mmad(c, a2, b2, mp);
    AscendC::PipeBarrier<AscendC::PIPE_ALL>();  // the scalar reads L0C after the cube is done
    std::vector<D> out(m * n);
    for (uint32_t r = 0; r < m; ++r) {
        for (uint32_t j = 0; j < n; ++j) {
            out[r * n + j] = c.GetValue(((j / 16) * mf * 16 + r) * 16 + j % 16);
        }
    }
    ExpectMatrix("C", out.data(), n, MatMul(a, b, m, k, n), m, n);
}

inline int RunAll()
{
    int failed = 0;
    for (const Case& c : Cases()) {
        int out[2];
        if (pipe(out) != 0) {
            std::perror("pipe");
            return 2;
        }
        std::fflush(stdout);
        const pid_t pid = fork();
        if (pid == 0) {
            close(out[0]);
            dup2(out[1], 1);
            dup2(out[1], 2);
            c.run();
            std::fflush(stdout);
            std::_Exit(0);
        }
        close(out[1]);
        std::string text;
        char buf[4096];
        ssize_t n;
        while ((n = read(out[0], buf, sizeof buf)) > 0) {
            text.append(buf, static_cast<size_t>(n));
        }
        close(out[0]);
        int status = 0;
        waitpid(pid, &status, 0);
        const int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128;
        for (char& ch : text) {
            if (ch == '\n' || ch == '\t') ch = ' ';
        }
        const char* verdict;
        if (c.refusal != nullptr) {
            verdict = code == 3 && text.find(c.refusal) != std::string::npos ? "PASS" : "FAIL";
            if (code == 0) text = "not refused: the host ran a call the SoC does not have" + text;
        } else {
            verdict = code == 0 ? "PASS" : (code == 3 ? "REFUSED" : "FAIL");
        }
        failed += verdict[0] != 'P';
        std::printf("CASE\t%s\t%s\t%s\t%s\n", c.name, verdict, c.source, text.c_str());
    }
    return failed == 0 ? 0 : 1;
}

}  // namespace conformance

// What gpt-oss's expert biases cost inside the expert GEMMs (issue #53), on the GPU this runs on.
//
// Megatron-core core_v0.15.0 builds TEGroupedMLP's linear_fc1 with bias=add_bias_linear and
// skip_bias_add=False (megatron/core/transformer/moe/experts.py), so Transformer Engine v2.9's
// GroupedLinear applies fc1's bias inside its GEMMs: general_grouped_gemm(..., bias, use_bias)
// runs one cuBLASLt matmul per local expert on 4 compute streams (common/gemm/cublaslt_gemm.cu,
// multi_stream_cublas_gemm), the forward with CUBLASLT_EPILOGUE_BIAS and the wgrad (layout NT,
// grad=True, accumulated into main_grad) with CUBLASLT_EPILOGUE_BGRADB, the bias gradient reduced
// over the GEMM's k (the expert's rows); pytorch/module/grouped_linear.py l.170-182, 405-432.
// linear_fc2 has skip_bias_add=True: its bias is returned and added by TEGroupedMLP._apply_bias
// (priced by the simulator), so fc2's GEMMs run no epilogue. Qwen3 (no biases) runs none at all.
// The aiconfigurator GEMM rows the simulator's curves were checked against ran no epilogue, and at
// 2,560 / 3,072 brackets, not gpt-oss's 2,880 / 5,760: the rows without epilogue here are also the
// exact shapes' tile and wave quantisation, with the 4 streams' overlap of one expert's tail.
//
// This times each expert GEMM pass as TE issues it (its layouts, cuBLASLt heuristics with TE's
// 32 MiB workspace and pointer alignments, one GEMM per expert round-robin on TE's 4 compute streams forked
// from and joined to one), with and without the epilogue, at the judged plans' shapes:
//   gpt_oss_ep8_mbs1   H100 26.02 plan: 16 local experts x 1,024 rows (4,096 tokens x top-4 x EP 8 / 128)
//   gpt_oss_ep8_mbs4   B200 26.02.01 plan: 16 x 4,096 rows
//   gpt_oss_ep64_mbs4  B200 25.11 / 26.02 plan: 2 x 32,768 rows
//   qwen3_30b_ep8      Qwen3-30B-A3B's experts (hidden 2,048, ffn 768, top-8) at EP 8: 16 x 2,048
// main_grad is bf16 (the recipes' grad_reduce_in_fp32 false), wgrad accumulates into it (beta 1).
// Writes one CSV row per (case, pass, epilogue, streams): median of 20 timed reps (CUDA events
// around the fork/join), TFLOP/s, and the algorithm cuBLASLt's heuristic gave expert 0 (id, tile,
// stages, split-k, cluster): whether the epilogue changes the kernel, not only its tail.
// Build and run on the GPU machine (scripts/gpu_session.sh does):
//   nvcc -O2 -std=c++17 -arch=native scripts/gpu_cublaslt_bias_epilogue.cu -lcublasLt -o bias_probe
//   ./bias_probe --out bias_epilogue.csv        (--list: the cases and FLOPs, no GPU needed)
// Written without a device; about 10 s on an H100 (estimate: ~600 timed grouped passes of 0.1-5 ms).
#include <cublasLt.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#define CHECK_CUDA(x)                                                                         \
  do {                                                                                        \
    cudaError_t e_ = (x);                                                                     \
    if (e_ != cudaSuccess) {                                                                  \
      std::fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); \
      std::exit(1);                                                                           \
    }                                                                                         \
  } while (0)
#define CHECK_LT(x)                                                                          \
  do {                                                                                       \
    cublasStatus_t s_ = (x);                                                                 \
    if (s_ != CUBLAS_STATUS_SUCCESS) {                                                       \
      std::fprintf(stderr, "%s:%d %s: cublas status %d\n", __FILE__, __LINE__, #x, (int)s_); \
      std::exit(1);                                                                          \
    }                                                                                        \
  } while (0)

namespace {

struct Case {
  const char* name;
  int experts, rows, hidden, ffn;  // local experts, rows an expert, model width, expert width
  bool gated;                      // fc1 is [2 ffn, hidden] (GLU)
};

const Case kCases[] = {
    {"gpt_oss_ep8_mbs1", 16, 1024, 2880, 2880, true},
    {"gpt_oss_ep8_mbs4", 16, 4096, 2880, 2880, true},
    {"gpt_oss_ep64_mbs4", 2, 32768, 2880, 2880, true},
    {"qwen3_30b_ep8", 16, 2048, 2048, 768, true},
};

enum class Pass { fwd, dgrad, wgrad };
const char* pass_name(Pass p) { return p == Pass::fwd ? "fwd" : p == Pass::dgrad ? "dgrad" : "wgrad"; }

// One expert GEMM of a linear [out, in] over `rows` rows, as TE's gemm.py layouts put it to cuBLAS
// (column-major): fwd "TN" D[out x rows] = W^T-op X; dgrad "NN" D[in x rows]; wgrad "NT" D[in x out]
// accumulated (beta 1). m, n, k and the operands' leading dimensions follow TE's nvte_cublas_gemm.
struct Gemm {
  int m, n, k;
  cublasOperation_t ta, tb;
  int lda, ldb, ldd;
  float beta;
};

Gemm gemm_of(Pass p, int rows, int in, int out) {
  switch (p) {
    case Pass::fwd: return {out, rows, in, CUBLAS_OP_T, CUBLAS_OP_N, in, in, out, 0.f};
    case Pass::dgrad: return {in, rows, out, CUBLAS_OP_N, CUBLAS_OP_N, in, out, in, 0.f};
    default: return {in, out, rows, CUBLAS_OP_N, CUBLAS_OP_T, in, out, in, 1.f};
  }
}

// The epilogue TE asks for when the linear has a bias it applies (fc1): BIAS forward, BGRADB wgrad.
cublasLtEpilogue_t bias_epilogue(Pass p) {
  return p == Pass::fwd     ? CUBLASLT_EPILOGUE_BIAS
         : p == Pass::wgrad ? CUBLASLT_EPILOGUE_BGRADB
                            : CUBLASLT_EPILOGUE_DEFAULT;
}

// TE's _getAlignment: the largest power of two up to 256 dividing the address.
uint32_t alignment_of(const void* p) {
  auto a = reinterpret_cast<uintptr_t>(p);
  uint32_t align = 256;
  while (align > 1 && a % align != 0) align /= 2;
  return align;
}

__global__ void fill_bf16(__nv_bfloat16* p, size_t n, uint32_t seed) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
    uint32_t h = (uint32_t)i * 2654435761u ^ seed;
    h ^= h >> 15, h *= 2246822519u, h ^= h >> 13;
    p[i] = __float2bfloat16(((h & 0xffff) / 32768.f - 1.f) * 0.5f);  // [-0.5, 0.5)
  }
}

__nv_bfloat16* random_bf16(size_t n, uint32_t seed) {
  __nv_bfloat16* p = nullptr;
  CHECK_CUDA(cudaMalloc(&p, std::max<size_t>(n, 1) * sizeof(__nv_bfloat16)));
  fill_bf16<<<1024, 256>>>(p, n, seed);
  CHECK_CUDA(cudaGetLastError());
  return p;
}

struct Algo {
  cublasLtMatmulAlgo_t algo;
  int id = -1;
  uint32_t tile = 0, stages = 0, splitk = 0;
  uint16_t cluster = 0;
  float waves = 0;  // the heuristic's waves count
};

struct Lt {
  cublasLtHandle_t handle;
  std::vector<cudaStream_t> streams;
  std::vector<void*> workspaces;
  size_t workspace_bytes = 32u << 20;  // TE's get_cublas_workspace_size_bytes on Hopper and later
};

// One expert's matmul: its descriptors, TE's heuristic query (one result), and the call.
struct ExpertMatmul {
  cublasLtMatmulDesc_t op{};
  cublasLtMatrixLayout_t a{}, b{}, d{};
  Algo algo;
  const void *pa = nullptr, *pb = nullptr;
  void *pd = nullptr, *bias = nullptr;
  float beta = 0;

  // false: cuBLASLt has no algorithm for it (written as such, not timed)
  bool setup(Lt& lt, const Gemm& g, const void* A, const void* B, void* D, void* bias_ptr, cublasLtEpilogue_t epi) {
    pa = A, pb = B, pd = D, bias = bias_ptr, beta = g.beta;
    CHECK_LT(cublasLtMatmulDescCreate(&op, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    CHECK_LT(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSA, &g.ta, sizeof(g.ta)));
    CHECK_LT(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSB, &g.tb, sizeof(g.tb)));
    CHECK_LT(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof(epi)));
    if (epi != CUBLASLT_EPILOGUE_DEFAULT) {
      cudaDataType_t bias_type = CUDA_R_16BF;  // the bias (forward) or main_grad's dtype (its grad)
      CHECK_LT(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof(bias)));
      CHECK_LT(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &bias_type, sizeof(bias_type)));
    }
    const bool an = g.ta == CUBLAS_OP_N, bn = g.tb == CUBLAS_OP_N;
    CHECK_LT(cublasLtMatrixLayoutCreate(&a, CUDA_R_16BF, an ? g.m : g.k, an ? g.k : g.m, g.lda));
    CHECK_LT(cublasLtMatrixLayoutCreate(&b, CUDA_R_16BF, bn ? g.k : g.n, bn ? g.n : g.k, g.ldb));
    CHECK_LT(cublasLtMatrixLayoutCreate(&d, CUDA_R_16BF, g.m, g.n, g.ldd));
    cublasLtMatmulPreference_t pref;
    CHECK_LT(cublasLtMatmulPreferenceCreate(&pref));
    CHECK_LT(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &lt.workspace_bytes,
                                                  sizeof(lt.workspace_bytes)));
    const uint32_t align_a = alignment_of(A), align_b = alignment_of(B), align_d = alignment_of(D);
    CHECK_LT(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, &align_a, 4));
    CHECK_LT(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, &align_b, 4));
    CHECK_LT(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, &align_d, 4));
    CHECK_LT(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, &align_d, 4));
    cublasLtMatmulHeuristicResult_t result{};
    int found = 0;
    CHECK_LT(cublasLtMatmulAlgoGetHeuristic(lt.handle, op, a, b, d, d, pref, 1, &result, &found));
    CHECK_LT(cublasLtMatmulPreferenceDestroy(pref));
    if (found == 0) return false;
    algo.algo = result.algo;
    algo.waves = result.wavesCount;
    size_t written = 0;
    cublasLtMatmulAlgoConfigGetAttribute(&algo.algo, CUBLASLT_ALGO_CONFIG_ID, &algo.id, sizeof(algo.id), &written);
    cublasLtMatmulAlgoConfigGetAttribute(&algo.algo, CUBLASLT_ALGO_CONFIG_TILE_ID, &algo.tile, sizeof(algo.tile),
                                         &written);
    cublasLtMatmulAlgoConfigGetAttribute(&algo.algo, CUBLASLT_ALGO_CONFIG_STAGES_ID, &algo.stages, sizeof(algo.stages),
                                         &written);
    cublasLtMatmulAlgoConfigGetAttribute(&algo.algo, CUBLASLT_ALGO_CONFIG_SPLITK_NUM, &algo.splitk, sizeof(algo.splitk),
                                         &written);
    cublasLtMatmulAlgoConfigGetAttribute(&algo.algo, CUBLASLT_ALGO_CONFIG_CLUSTER_SHAPE_ID, &algo.cluster,
                                         sizeof(algo.cluster), &written);
    return true;
  }

  void run(Lt& lt, int i) {
    const float alpha = 1.f;
    const int s = i % static_cast<int>(lt.streams.size());
    CHECK_LT(cublasLtMatmul(lt.handle, op, &alpha, pa, a, pb, b, &beta, pd, d, pd, d, &algo.algo, lt.workspaces[s],
                            lt.workspace_bytes, lt.streams[s]));
  }

  void destroy() {
    cublasLtMatrixLayoutDestroy(a), cublasLtMatrixLayoutDestroy(b), cublasLtMatrixLayoutDestroy(d);
    cublasLtMatmulDescDestroy(op);
  }
};

// The grouped pass as multi_stream_cublas_gemm issues it: the streams wait for the main one,
// expert i runs on stream i % streams, the main stream waits for them all. Median of `reps`.
double grouped_pass_us(Lt& lt, cudaStream_t main, std::vector<ExpertMatmul>& experts, int reps) {
  std::vector<cudaEvent_t> joins(lt.streams.size());
  cudaEvent_t fork, start, stop;
  CHECK_CUDA(cudaEventCreateWithFlags(&fork, cudaEventDisableTiming));
  for (auto& e : joins) CHECK_CUDA(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
  CHECK_CUDA(cudaEventCreate(&start));
  CHECK_CUDA(cudaEventCreate(&stop));
  std::vector<double> us;
  for (int r = -5; r < reps; ++r) {  // 5 warm-ups
    CHECK_CUDA(cudaEventRecord(start, main));
    CHECK_CUDA(cudaEventRecord(fork, main));
    for (cudaStream_t s : lt.streams) CHECK_CUDA(cudaStreamWaitEvent(s, fork, 0));
    for (size_t i = 0; i < experts.size(); ++i) experts[i].run(lt, static_cast<int>(i));
    for (size_t s = 0; s < lt.streams.size(); ++s) {
      CHECK_CUDA(cudaEventRecord(joins[s], lt.streams[s]));
      CHECK_CUDA(cudaStreamWaitEvent(main, joins[s], 0));
    }
    CHECK_CUDA(cudaEventRecord(stop, main));
    CHECK_CUDA(cudaEventSynchronize(stop));
    float ms = 0;
    CHECK_CUDA(cudaEventElapsedTime(&ms, start, stop));
    if (r >= 0) us.push_back(1e3 * ms);
  }
  for (auto& e : joins) cudaEventDestroy(e);
  cudaEventDestroy(fork), cudaEventDestroy(start), cudaEventDestroy(stop);
  std::sort(us.begin(), us.end());
  return us[us.size() / 2];
}

struct Linear {
  const char* name;
  int in, out;
  bool bias_in_gemm;  // fc1: TE applies the bias (epilogues); fc2: returned, added outside
};

std::vector<Linear> linears_of(const Case& c) {
  return {{"fc1", c.hidden, (c.gated ? 2 : 1) * c.ffn, true}, {"fc2", c.ffn, c.hidden, false}};
}

double pass_flops(const Case& c, const Linear& l) { return 2.0 * c.experts * (double)c.rows * l.in * l.out; }

void list_cases() {
  std::printf("case,linear,experts,rows,in,out,flops_a_pass\n");
  for (const Case& c : kCases)
    for (const Linear& l : linears_of(c))
      std::printf("%s,%s,%d,%d,%d,%d,%.6g\n", c.name, l.name, c.experts, c.rows, l.in, l.out, pass_flops(c, l));
}

// Every pass of one case's linear, at `streams` streams, with its epilogue off and (fc1) on.
void run_linear(Lt& lt, cudaStream_t main, const std::string& gpu, const Case& c, const Linear& l, FILE* out,
                int reps) {
  const size_t rows = (size_t)c.experts * c.rows;
  __nv_bfloat16* x = random_bf16(rows * l.in, 1);                   // the permuted rows, contiguous, split by expert
  __nv_bfloat16* dy = random_bf16(rows * l.out, 2);                 // the output's gradient
  __nv_bfloat16* y = random_bf16(rows * std::max(l.in, l.out), 3);  // fwd output / dgrad
  __nv_bfloat16* w = random_bf16((size_t)c.experts * l.in * l.out, 4);
  __nv_bfloat16* main_grad = random_bf16((size_t)c.experts * l.in * l.out, 5);
  __nv_bfloat16* bias = random_bf16((size_t)c.experts * l.out, 6);  // the bias, or its gradient
  CHECK_CUDA(cudaDeviceSynchronize());
  for (Pass p : {Pass::fwd, Pass::dgrad, Pass::wgrad}) {
    const bool epilogue_differs = l.bias_in_gemm && bias_epilogue(p) != CUBLASLT_EPILOGUE_DEFAULT;
    for (bool with_bias : {false, true}) {
      if (with_bias && !epilogue_differs) continue;
      std::vector<ExpertMatmul> experts(c.experts);
      const Gemm g = gemm_of(p, c.rows, l.in, l.out);
      bool supported = true;
      for (int e = 0; e < c.experts; ++e) {
        const size_t r0 = (size_t)e * c.rows;
        const __nv_bfloat16* we = w + (size_t)e * l.in * l.out;
        const void *A, *B;
        void* D;
        if (p == Pass::fwd) A = we, B = x + r0 * l.in, D = y + r0 * l.out;
        else if (p == Pass::dgrad) A = we, B = dy + r0 * l.out, D = y + r0 * l.in;
        else A = x + r0 * l.in, B = dy + r0 * l.out, D = main_grad + (size_t)e * l.in * l.out;
        supported = experts[e].setup(lt, g, A, B, D, bias + (size_t)e * l.out,
                                     with_bias ? bias_epilogue(p) : CUBLASLT_EPILOGUE_DEFAULT) &&
                    supported;
      }
      const double us = supported ? grouped_pass_us(lt, main, experts, reps) : -1;  // -1: no algorithm
      const Algo& a = experts[0].algo;
      std::fprintf(out, "%s,%s,%s,%s,%s,%zu,%d,%d,%d,%d,%d,%.2f,%.1f,%d,%u,%u,%u,%u,%.2f\n", gpu.c_str(), c.name,
                   l.name, pass_name(p), with_bias ? "bias" : "none", lt.streams.size(), c.experts, c.rows, g.m, g.n,
                   g.k, us, pass_flops(c, l) / (us * 1e-6) / 1e12, a.id, a.tile, a.stages, a.splitk,
                   (unsigned)a.cluster, a.waves);
      std::fflush(out);
      for (auto& e : experts) e.destroy();
    }
  }
  for (void* p : {(void*)x, (void*)dy, (void*)y, (void*)w, (void*)main_grad, (void*)bias}) cudaFree(p);
}

}  // namespace

int main(int argc, char** argv) {
  const char* out_path = nullptr;
  int reps = 20;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--list")) {
      list_cases();
      return 0;
    }
    if (!std::strcmp(argv[i], "--out") && i + 1 < argc) out_path = argv[++i];
    else if (!std::strcmp(argv[i], "--reps") && i + 1 < argc) reps = std::atoi(argv[++i]);
    else {
      std::fprintf(stderr, "usage: %s [--list] [--out CSV] [--reps N]\n", argv[0]);
      return 2;
    }
  }
  cudaDeviceProp prop;
  CHECK_CUDA(cudaGetDeviceProperties(&prop, 0));
  std::string gpu = prop.name;
  std::replace(gpu.begin(), gpu.end(), ',', ' ');
  FILE* out = out_path ? std::fopen(out_path, "w") : stdout;
  if (!out) return 1;
  std::fprintf(out,
               "gpu,case,linear,pass,epilogue,streams,experts,rows,m,n,k,median_us,tflops,algo_id,tile_id,"
               "stages_id,splitk,cluster_id,waves\n");
  std::fprintf(stderr, "%s, cuBLASLt %zu\n", gpu.c_str(), cublasLtGetVersion());
  Lt lt;
  CHECK_LT(cublasLtCreate(&lt.handle));
  cudaStream_t main_stream;
  CHECK_CUDA(cudaStreamCreateWithFlags(&main_stream, cudaStreamNonBlocking));
  for (int streams : {4, 1}) {  // TE v2.9's compute streams (fixed: common/util/multi_stream.cpp), then one
    lt.streams.assign(streams, nullptr);
    lt.workspaces.assign(streams, nullptr);
    for (int s = 0; s < streams; ++s) {
      CHECK_CUDA(cudaStreamCreateWithFlags(&lt.streams[s], cudaStreamNonBlocking));
      CHECK_CUDA(cudaMalloc(&lt.workspaces[s], lt.workspace_bytes));
    }
    for (const Case& c : kCases)
      for (const Linear& l : linears_of(c)) run_linear(lt, main_stream, gpu, c, l, out, reps);
    for (int s = 0; s < streams; ++s) cudaStreamDestroy(lt.streams[s]), cudaFree(lt.workspaces[s]);
  }
  cublasLtDestroy(lt.handle);
  if (out != stdout) std::fclose(out);
  return 0;
}

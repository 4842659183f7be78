#pragma once
// The software stack that runs a plan (framework, kernels, launch mode): the same GPUs run
// a 2021 eager stack and a graph-captured one at very different speeds. Named presets live
// in hardware/catalog/stacks/, each setting with its source; a scenario names one at its
// top level (`stack: NAME`, or a mapping `{preset: NAME, host_op_us: ...}`).
#include <array>
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "hardware/curve.hpp"
#include "hardware/kernel_generation.hpp"
#include "models/megatron_softmax.hpp"
#include "models/moe_host_calls.hpp"

namespace twinsim {

// The fused attention kernels a stack may run in a training step. FlashAttention-2 (the
// flash-attn package, PyTorch's SDPA flash backend) is what a GPU's
// attention_efficiency_by_seq describes; the others have their own curves
// (GpuSpec::attention_kernel_efficiency_by_seq): cuDNN's fused attention is what
// Transformer Engine and PyTorch's SDPA pick on Hopper.
inline constexpr std::string_view kFlash2Attention = "flash2";
inline constexpr std::string_view kCudnnAttention = "cudnn";
// FlashAttention-3 (flash-attn 3, Hopper only): what Hugging Face runs with
// attn_implementation="flash_attention_3" on an H100/H200.
inline constexpr std::string_view kFlash3Attention = "flash3";
// FlashAttention-4 (flash-attn 4, CuTe DSL, Blackwell): what the flash-attn package runs on a
// B200.
inline constexpr std::string_view kFlash4Attention = "flash4";
// PyTorch's scaled_dot_product_attention picks its backend by device: cuDNN's where the GPU's
// catalog entry measures it (the H100 and H200 with PyTorch 2.11: the profiles in
// scenarios/validation/microbench/measured_2026-11-26/), FlashAttention-2 elsewhere.
inline constexpr std::string_view kSdpaAttention = "sdpa";
// Transformer Engine's DotProductAttention picks alike: it disables FlashAttention "to give
// FusedAttention preference on Hopper+ for performance reasons" (TransformerEngine,
// pytorch/attention/dot_product_attention/utils.py, get_attention_backend), cuDNN's fused
// attention there, flash-attn on Ampere.
inline constexpr std::string_view kTeAttention = "te";
// PyTorch's scaled_dot_product_attention held to its flash backend (FlashAttention-2 as PyTorch
// builds it; what torchtitan's SDPA and PyTorch's context parallelism run): its own curves where
// the GPU's entry measures them (the H100's and H200's, measured_2026-11-26: 7-8% slower than
// the flash-attn README's forward+backward at 8k, faster past it), the README's elsewhere.
inline constexpr std::string_view kSdpaFlashAttention = "sdpa_flash";
// FlashAttention 1.x (flash-attn 1.0's CUDA kernel) on its own measured curves; also what
// flash-attn 1.0's Triton kernel (flash_attn_triton, llm-foundry's attn_impl: triton) is
// priced at: by its docstring, "Overall Triton forward + backward is slightly slower than CUDA
// forward + backward" (flash-attn v1.0.3.post0, flash_attn/flash_attn_triton.py).
inline constexpr std::string_view kFlash1Attention = "flash1";
// A serving engine's own prefill attention call, measured in that engine at head width 128
// (GpuSpec::prefill_attention_by_heads; StackSpec::serving_prefill_attention only): vLLM's
// vllm_flash_attn FA3 forward (it also writes the new K,V into the paged cache) and SGLang's
// flash_attention (FA3) backend, as aiconfigurator's collectors call them.
inline constexpr std::string_view kVllmFa3Prefill = "vllm_fa3";
inline constexpr std::string_view kSglangFa3Prefill = "sglang_fa3";
inline constexpr std::array<std::string_view, 2> kEnginePrefillKernels = {kVllmFa3Prefill, kSglangFa3Prefill};
inline constexpr std::array<std::string_view, 8> kAttentionKernels = {
    kFlash2Attention, kCudnnAttention, kFlash3Attention,    kFlash4Attention,
    kSdpaAttention,   kTeAttention,    kSdpaFlashAttention, kFlash1Attention};
// A choice the GPU resolves (sdpa, te): cuDNN's where the GPU's entry measures it, else
// FlashAttention-2; no curves of its own.
inline bool picked_by_device(std::string_view kernel) { return kernel == kSdpaAttention || kernel == kTeAttention; }

// The GEMM kernels a stack runs. "cublas": the GPU's measured curves (gemm_efficiency,
// gemm_efficiency_by_dtype: cuBLAS's and cuBLASLt's sweeps for most, which PyTorch, Transformer
// Engine and Megatron call). "cutlass": the engine's own CUTLASS kernels, priced by the GPU's
// gemm_kernel_efficiency_by_dtype.cutlass where it has a curve for the math type, else by the
// curves above: TensorRT-LLM's FP4 GEMM is its CUTLASS NVFP4 kernel (torch.ops.trtllm.nvfp4_gemm,
// cpp/tensorrt_llm/kernels/cutlass_kernels/fp4_gemm; FlashInfer's mm_fp4 "cutlass" backend is a
// port of it), where the GB200's own nvfp4 curve is cuBLASLt's (hardware/catalog/gpus/gb200.yaml).
inline constexpr std::string_view kCublasGemm = "cublas";
inline constexpr std::string_view kCutlassGemm = "cutlass";
inline constexpr std::array<std::string_view, 2> kGemmKernels = {kCublasGemm, kCutlassGemm};

// The kernels that run a layer's norms, element-wise ops and casts. "fused": the op list's own
// (Megatron's fused kernels, 16-bit activations). "hf_eager": Hugging Face transformers'
// modeling code in PyTorch eager under bf16 autocast with fp32 parameters, which runs each
// norm as six kernels on an fp32 residual stream, RoPE unfused and casts every weight and
// input of its linear layers (sim/training/eager_kernels; Llama-architecture models).
// "hf_bf16": the same modeling code on a model loaded in bf16 without autocast (DeepSpeed's
// bf16 engine, FSDP with bf16 parameters): the same unfused kernels, no casts, a bf16
// residual stream, a 16-bit model with an fp32 master copy in the optimizer.
// "litgpt_bf16": LitGPT's own eager Llama (lit_gpt 8641822) LoRA-fine-tuned on a bf16 model:
// what it keeps for the backward is its own count (models/litgpt_census); its element-wise
// kernels are priced as hf_bf16's (not counted for LitGPT's code).
inline constexpr std::string_view kFusedLayerKernels = "fused";
inline constexpr std::string_view kHfEagerLayerKernels = "hf_eager";
inline constexpr std::string_view kHfBf16LayerKernels = "hf_bf16";
inline constexpr std::string_view kLitgptBf16LayerKernels = "litgpt_bf16";
inline constexpr std::array<std::string_view, 4> kLayerKernels = {kFusedLayerKernels, kHfEagerLayerKernels,
                                                                  kHfBf16LayerKernels, kLitgptBf16LayerKernels};

// How the loss meets the output layer. "logits": the output layer writes the whole logits and
// the cross entropy reads them, fp32 logits kept for its backward (Megatron's vocab-parallel
// cross entropy). "fused_linear": the output layer and the cross entropy run as one chunked
// kernel that computes the input's and the weight's gradients in the forward and never holds
// the whole logits (Liger-Kernel's LigerFusedLinearCrossEntropy, as AutoLigerKernelForCausalLM
// patches a Hugging Face model; Apple's Cut Cross-Entropy alike).
inline constexpr std::string_view kLogitsLoss = "logits";
inline constexpr std::string_view kFusedLinearLoss = "fused_linear";
// "eager_fp32": cross_entropy(logits.float()) in PyTorch eager, unfused: the 16-bit logits
// copied to fp32, log_softmax keeping its fp32 output, and in its backward nll_loss's fp32
// gradient and log_softmax's beside that output, 12 bytes a logit at once (torchtitan's
// loss_fn, uncompiled even under training.compile: "compiling loss function causes CUDA
// errors, turning off for now", train.py 2024-12; Hugging Face's ForCausalLMLoss alike).
inline constexpr std::string_view kEagerFp32Loss = "eager_fp32";
inline constexpr std::array<std::string_view, 3> kLossKernels = {kLogitsLoss, kFusedLinearLoss, kEagerFp32Loss};
// What plan.tp_comm_overlap overlaps a TP collective with. "layer": the layer's whole pass
// on the compute stream (Transformer Engine's userbuffers pipelining each TP GEMM with its
// collective, the ideal). "matmul": only the matmul the collective feeds or is fed by,
// micro-pipelined in tp chunks (PyTorch's async TP: Inductor's micro_pipeline_tp pass fuses
// all_gather -> mm and mm -> reduce_scatter into fused_all_gather_matmul /
// fused_matmul_reduce_scatter, torch/distributed/_symmetric_memory; sim/training/async_tp.hpp).
// "symmetric_memory": "matmul" as PyTorch's symmetric-memory ops run it
// (_fused_all_gather_matmul_impl, _fused_matmul_reduce_scatter_impl): each fused matmul is tp
// GEMMs of m / tp rows (one per weight it feeds: torchtitan's wq, wk, wv and w1, w3), and a
// fused reduce-scatter ends with a sum over the stacked partials (async_tp.hpp FusedMatmulSplit).
inline constexpr std::string_view kLayerTpOverlap = "layer";
inline constexpr std::string_view kMatmulTpOverlap = "matmul";
inline constexpr std::string_view kSymmetricMemoryTpOverlap = "symmetric_memory";
inline constexpr std::array<std::string_view, 3> kTpOverlaps = {kLayerTpOverlap, kMatmulTpOverlap,
                                                                kSymmetricMemoryTpOverlap};
// How context parallelism's attention exchanges K and V. "ring": each step passes the next
// chunk of the layer's K,V (its grouped heads) beside the attention (Liu et al. 2023).
// "torch_all_gather": PyTorch's ring attention (torch/distributed/tensor/experimental/
// _attention.py, 2024-12; sim/training/torch_cp_exchange.hpp): K,V as SDPA sees them, one
// all-gather hidden only behind the local step, fp32 dK,dV passed step by step.
inline constexpr std::string_view kRingCpExchange = "ring";
inline constexpr std::string_view kTorchAllGatherCpExchange = "torch_all_gather";
inline constexpr std::array<std::string_view, 2> kCpExchanges = {kRingCpExchange, kTorchAllGatherCpExchange};

struct StackSpec {
  std::string name = "none";  // catalog preset, "custom", or "none" (the device alone)
  // Host time to issue one op of the op list, forward or backward (one row of `simulate`'s
  // op table: a module's Python, the framework's dispatch and its kernel launches). The GPU
  // cannot run work the host has not issued yet: an eager stack running small ops is
  // host-bound. 0: graph-captured, or the device alone.
  double host_op_s = 0;
  // Host time per micro-batch on each pipeline stage beyond its ops' (once per micro-batch,
  // at its forward through the stage's first chunk: under the interleaved schedule the
  // middle chunks load no batch and compute no loss): the schedule's own Python (DeepSpeed's
  // PipelineEngine runs LoadMicroBatch, ForwardPass, BackwardPass and its sends and receives
  // as instructions, Megatron its forward_step and loss function), the batch's loading, the
  // loss's reduction. The GPU waits for it at the micro-batch's start. 0: none.
  double host_microbatch_s = 0;
  // A serving engine's host time per pass (one engine step: scheduling, the inputs'
  // preparation, the sampled tokens' read-back and the outputs' processing) and per sequence
  // in the pass, beyond the op list's kernels. The GPU waits for it before the pass's first
  // kernel, unless the engine schedules asynchronously (serving_async): then the host
  // prepares a pass while the GPU runs the one before, and a pass takes the longer of the
  // two. 0: the device alone.
  double serving_step_s = 0;
  double serving_sequence_s = 0;
  bool serving_async = false;
  // The engine's host time for a pass of `sequences` sequences.
  double serving_host_s(std::int64_t sequences) const {
    return serving_step_s + serving_sequence_s * static_cast<double>(sequences);
  }
  bool has_serving_host_time() const { return serving_step_s > 0 || serving_sequence_s > 0; }
  // The engine replays CUDA graphs for decode-only passes and runs a pass that carries a prompt
  // chunk eagerly: each op of that pass costs host_torch_op_s of dispatch and launch on the
  // host (TensorRT-LLM's PyTorch backend: ScheduledRequests.can_run_cuda_graph is "no context
  // requests"). false: every pass is graphed, or its launches are in serving_host_s.
  bool serving_eager_prefill = false;
  // The serving frontend's time per request outside the engine's passes, on the way from the
  // benchmark client's send to the scheduler and back with the first token: HTTP and JSON,
  // tokenisation, the hand-over to the scheduler's process, detokenisation and the SSE chunk
  // back to the client's asyncio loop. Priced as a delay before the request reaches the
  // scheduler (its TTFT and E2EL still count from the send). 0: the engine alone.
  double serving_request_s = 0;
  // The frontend's time per prompt token on that path, beyond serving_request_s: the server
  // tokenising the prompt's text (vLLM's OpenAI server, SGLang's TokenizerManager). 0: none.
  double serving_request_token_s = 0;
  // What the serving engine does with a windowed layer's K,V once it leaves the window
  // (model.sliding_window): frees it (vLLM V1's hybrid KV cache manager, TensorRT-LLM's
  // cyclic per-layer window, SGLang's SWA pool) or keeps every token of every layer
  // (vLLM V0 on interleaved models: one block table for all layers). The attention reads
  // the window's keys either way; only what the cache holds differs.
  bool serving_keeps_window_kv = false;
  // The query heads per KV head whose decode attention reads each KV head once, besides
  // MHA's one (0: every grouping does, as FlashInfer, FlashAttention and today's XQA do).
  // TensorRT-LLM <= 0.9 ran its XQA kernel only for 8 query heads per KV head (Llama-2 70B)
  // and fell back to masked MHA otherwise, one thread block per query head reading its KV
  // head's cache (decoderXQARunner.h shouldUse, "nbHeads"): Mistral's 4 read it 4 times.
  int serving_decode_shared_kv_group = 0;
  // The most query heads per KV head whose decode attention over a 16-bit KV cache runs its
  // math on the CUDA cores instead of the tensor cores (GpuSpec::kv_attention_cuda_core_efficiency
  // prices it): SGLang's FlashInfer backend asked for tensor cores only when the group
  // exceeded 4 or the cache was fp8 (should_use_tensor_core, until sgl-project/sglang PR #8624,
  // 2025-07-31), so Llama-3's group of 4 decoded on CUDA cores. 0: tensor cores.
  int serving_decode_cuda_core_group = 0;
  // A prompt chunk's queries over the keys cached before it run on a kernel of their own, an
  // FA2-class prefill over the paged cache priced at GpuSpec::kv_attention_fa2_efficiency:
  // SGLang's FlashInfer backend (its default attention backend before FA3 became the Hopper
  // default) runs the new tokens on a ragged kernel and their cached prefix on
  // BatchPrefillWithPagedKVCacheWrapper built with backend="fa2", then merges the two.
  // false: one kernel for all of a chunk's keys.
  bool serving_prefix_attention_fa2 = false;
  // The engine's prefill attention kernel (one of kAttentionKernels or kEnginePrefillKernels)
  // where the GPU has its causal curve (GpuSpec::attention_kernel_efficiency_by_seq, or
  // prefill_attention_by_heads): a prompt chunk's queries over its own keys priced on that curve
  // at the chunk's length, the masked half skipped as a causal flash kernel does; "": every
  // (query, key) pair at the GPU's attention_efficiency.
  std::string serving_prefill_attention;
  // Whether serving_prefill_attention is a stack preset's (not the scenario's own): it then runs
  // only where the GPU measures the kernel, else none does (hardware/prefill_attention.hpp).
  bool serving_prefill_attention_from_preset = false;
  // The engine's decode attention is FlashAttention-3's paged kernel with a 128-row query tile
  // (GpuSpec::kv_attention_fa3_m128_efficiency prices its cache read): vLLM's FLASH_ATTN backend
  // on Hopper until vllm-project/flash-attention PR #63 (2025-04-18, vLLM PR #16864: 64 rows for
  // decode), so vLLM 0.8.x. false: the GPU's kv_cache_attention figure.
  bool serving_decode_fa3_m128 = false;
  // The engine casts each fp8 GEMM's 16-bit input to fp8 in a kernel of its own before the GEMM
  // (vLLM's Fp8LinearOp: ops.scaled_fp8_quant, then cutlass_scaled_mm; SGLang's apply_fp8_linear
  // likewise), one memory-bound pass a GEMM, priced as the fp4 input's (iteration_cost.cpp).
  // false: the cast is fused into the op before it (or the GEMM is not fp8).
  bool serving_fp8_input_cast = false;
  // The engine's scheduler defaults where the stack sets them (0: serve's own, vLLM's
  // 2048 tokens and 256 sequences): tokens one pass computes at most (vLLM
  // --max-num-batched-tokens, SGLang --chunked-prefill-size, TensorRT-LLM max_num_tokens)
  // and sequences one pass holds at most (--max-num-seqs, --max-running-requests,
  // max_batch_size). Flags given to `serve` win.
  std::int64_t serving_max_batched_tokens = 0;
  // Share of a request's output whose KV blocks the engine's admission keeps free for it
  // (sim/inference/scheduler.hpp SchedulerLimits::output_reserve): 0, vLLM's (preempt when
  // blocks run out); 1, TensorRT-LLM's GUARANTEED_NO_EVICT capacity scheduler.
  double serving_output_reserve = 0;
  std::int64_t serving_max_sequences = 0;
  // Prompt chunks in passes of their own, ahead of any decode step (SGLang without
  // --enable-mixed-chunk: a prefill batch whenever a request can be admitted, the running
  // ones' decode step otherwise), instead of riding in one pass with the decodes (vLLM's
  // chunked prefill). sim/inference/scheduler.hpp SchedulerLimits::prefill_first.
  bool serving_prefill_first = false;
  // Prompts split into chunks over passes (vLLM's and SGLang's chunked prefill); false: a prompt
  // runs whole in one pass when it fits the token budget, else waits (TensorRT-LLM without
  // enable_chunked_prefill; sim/inference/scheduler.hpp SchedulerLimits::whole_prompts).
  bool serving_chunked_prefill = true;
  // An idle engine's first fetch takes one request, the rest join at the next pass: TensorRT-LLM's
  // PyExecutor waits on its empty request queue for one item and returns it alone
  // (executor_request_queue.py _get_from_request_queue), so under attention DP one rank starts a
  // pass ahead of the others. SchedulerLimits::idle_fetch_one; false: all that are there.
  bool serving_idle_fetch_one = false;
  // The scheduler's limits as trtllm-bench 1.0 picks them when none are passed
  // (sim/inference/trtllm_bench_limits.hpp: max batch size and max num tokens from the K,V that fit
  // the GPUs' memory at the workload's ISL + OSL), in place of serving_max_sequences /
  // serving_max_batched_tokens. `serve --max-num-seqs / --max-num-batched-tokens` win.
  bool serving_bench_limits = false;
  // CUDA-graph padding (sim/inference/cuda_graph_padding.hpp): the batch sizes the engine is asked
  // to capture; a generation-only pass replays the next captured size. Empty: no padding.
  // `serve --cuda-graph-batch-sizes` wins.
  std::vector<std::int64_t> serving_cuda_graph_batch_sizes;
  // How the engine sizes its KV pool: empty, vLLM's (a share of HBM less the weights and the
  // activations of a profiled pass, kv_cache.hpp); else SGLang's mem_fraction_static by TP
  // size, [smallest TP, fraction] pairs: the pool is that fraction of the GPU's memory less
  // the weights, the activations left to the rest (ModelRunner.profile_max_num_token).
  std::vector<std::pair<int, double>> serving_mem_fraction_static;
  // TensorRT-LLM's free_gpu_memory_fraction (KvCacheConfig, default 0.9): the pool is that
  // fraction of the memory a profiled pass of max_num_tokens, its CUDA graphs and the context
  // leave after the weights (sim/inference/trtllm_kv_pool.hpp). 0: not this sizing.
  double serving_kv_free_fraction = 0;
  // Tokens per KV-cache block (TensorRT-LLM's tokens_per_block); 0: vLLM's 16 (kDefaultBlockTokens).
  // `serve --block-size` wins over it.
  std::int64_t serving_kv_block_tokens = 0;
  // The engine's own TP all-reduce under its decode CUDA graph (vLLM's custom all-reduce,
  // TensorRT-LLM's one-/two-shot kernels), by group size: CurvePoint{bytes, time} points, the
  // time in seconds (written in us). A TP all-reduce inside one node up to the last point's bytes takes
  // the curve's time instead of NCCL's price (sim/inference/iteration_cost.cpp). Empty: NCCL's.
  std::map<int, std::vector<CurvePoint>> serving_tp_allreduce_time;
  // The fraction of the entry with the largest smallest-TP at or below `tp` (0: none).
  double serving_static_fraction(int tp) const {
    double f = 0;
    for (const auto& [min_tp, fraction] : serving_mem_fraction_static)
      if (min_tp <= tp) f = fraction;
    return f;
  }
  // The stack's GEMMs against the GPU's measured curve (today's cuBLASLt): an older library
  // picks slower kernels for the same shapes. 1: as measured.
  double gemm_library_scale = 1;
  // The generation of the serving engine's routed-expert (MoE) grouped GEMM: TensorRT-LLM <= 0.9
  // ran CUTLASS's Sm80 grouped GEMM on Hopper too (moe_gemm_kernels_template.h), priced at the
  // GPU's sm80_gemm_scale (GpuSpec::generation_scale). native: the GPU's own.
  KernelGeneration moe_gemm_generation = KernelGeneration::native;
  // ZeRO's per-layer collectives as the stack issues them: the most parameters one call
  // carries. A layer's parameters (on one GPU) travel as ceil(params / bucket) equal calls,
  // each paying its ring's latency over the DP group, which across hundreds of ranks is
  // milliseconds per call. 0: one call per layer (PyTorch FSDP wrapping each block).
  std::int64_t zero_gather_bucket_params = 0;  // ZeRO-3 parameter all-gathers
  std::int64_t zero_reduce_bucket_params = 0;  // ZeRO-2/3 gradient reduce-scatters, per layer
  // ZeRO 1-2's gradient buckets all-reduced whole, each rank then keeping its partition's
  // slice, where a reduce-scatter would move half the bytes: DeepSpeed's stage 1 and 2 by
  // default (use_multi_rank_bucket_allreduce: average_tensor -> allreduce_and_scatter,
  // runtime/zero/stage_1_and_2.py). ZeRO 3 reduce-scatters whatever this says.
  bool zero_bucket_all_reduce = false;
  // Whether the stack's ZeRO can shard over a shard group whose replicas all-reduce each
  // gradient shard (plan.dp_replicate: PyTorch FSDP's HSDP, Megatron-core's
  // --num-distributed-optimizer-instances). DeepSpeed's cannot: its ZeRO shards over the whole
  // data-parallel group (ZeRO-3 has hpZ and MiCS instead).
  bool zero_hybrid_sharding = true;
  // Whether the stack runs Megatron-core's precision-aware optimizer (plan.exp_avg_dtype,
  // exp_avg_sq_dtype, main_params_dtype: Transformer Engine's FusedAdam keeping the states in
  // narrower types, --use-precision-aware-optimizer). False in the presets of other frameworks.
  bool precision_aware_optimizer = true;
  // Whether the stack can keep the MoE SwiGLU's input in fp8 (1x128 tile scales) while it recomputes
  // the output (plan.fp8_moe_act_cache, DeepSeek-V3 §3.3.2 (2)). False in the framework presets:
  // Megatron-core's moe_act recomputation runs the activation under CheckpointWithoutOutput, whose
  // forward (torch.no_grad) saves the 16-bit fc1 output, so activation_func_fp8_input_store never
  // stores (Megatron-LM d98e8a6 moe/experts.py TEGroupedMLP.forward, tensor_parallel/random.py).
  bool fp8_cached_moe_act = true;
  // DeepSpeed's first ZeRO-3 (<= 0.5, 2021) as it gathers a layer (Init._allgather_param in
  // runtime/zero/partition_parameters.py): each parameter tensor its own all-gather
  // (zero_gather_calls: the layer's tensors, 0: by zero_gather_bucket_params), each issued
  // after torch.cuda.synchronize() (zero_gather_blocking), so a gather starts only once the
  // device has drained and the compute that needs it waits: no overlap, the gathers on the
  // compute stream.
  int zero_gather_calls = 0;
  bool zero_gather_blocking = false;
  // Host time per rank of each ZeRO collective call passed as a list of per-rank tensors
  // (torch.distributed.all_gather / reduce_scatter): PyTorch <= 1.9's ProcessGroupNCCL
  // flattens the list and copies each rank's chunk out (all_gather) or in (reduce_scatter),
  // one copy_ per rank. 0: flat collectives (_all_gather_base, all_gather_into_tensor).
  double zero_list_copy_s = 0;
  // Host time per rank of building that list in Python before each call: DeepSpeed <= 0.5
  // makes one view of the flat buffer a rank for a gather (Init._allgather_param: narrow) and
  // two a rank for a reduce-scatter (_reduce_scatter_gradient: grad.view(-1).narrow). 0: none.
  double zero_gather_list_s = 0;
  double zero_reduce_list_s = 0;
  // The rest of DeepSpeed <= 0.5's ZeRO-3 per layer (runtime/zero/stage3.py and
  // partition_parameters.py at tag v0.3.13):
  // - zero_reduce_calls: the layer's gradients reduce-scattered one parameter tensor a call
  //   (_reduce_scatter_gradients loops over the bucket's parameters), 0: by
  //   zero_reduce_bucket_params.
  // - zero_persistent_tensors: the layer's tensors under stage3_param_persistence_threshold
  //   (1e5 elements: biases and norms) stay gathered, not gathered per pass (so
  //   zero_gather_calls counts the others), but all are gathered again once a step after the
  //   optimizer (_post_step: _allgather_params copies each tensor's chunk out of each rank's,
  //   one copy_ a rank a tensor).
  // - zero_reuse_distance_params (stage3_max_reuse_distance, 1e9; 0: off): under full recompute
  //   the recomputed forward gathers the layer again, and each weight is released after it
  //   unless the weights used before its backward (those after it, twice) are fewer than this
  //   (_keep_for_later): the backward gathers the released ones a third time.
  // - zero_gather_passes, zero_reduce_passes: element-sized HBM accesses per gathered (reduced)
  //   element of the device copies around each call: the zeroed gather buffer and the list
  //   all_gather's copy out (3); the contiguous_gradients copy, div_ and the list
  //   reduce_scatter's copy in (6).
  int zero_reduce_calls = 0;
  int zero_persistent_tensors = 0;
  std::int64_t zero_reuse_distance_params = 0;
  double zero_gather_passes = 0;
  double zero_reduce_passes = 0;
  // PyTorch FSDP2 under pipeline parallelism as torchtitan runs it: fully_shard(...,
  // reshard_after_forward=not pp_enabled) (torchtitan parallelize_llama.py apply_fsdp) and
  // torch.distributed.pipelining's stage syncing gradients and resharding only at the last
  // micro-batch's backward (set_requires_gradient_sync / set_reshard_after_backward): a
  // stage's parameters are gathered once a step and stay unsharded, its gradients are
  // accumulated unsharded and reduce-scattered once. ZeRO-3 plans with pp > 1 only.
  bool fsdp_pp_keep_gathered = false;
  // bf16 (and fp8) training's gradients accumulated and reduced over the data-parallel group
  // in fp32, 4 bytes a value where the 16-bit model's are 2: Megatron-LM forces it for bf16
  // ("bfloat16 requires gradient accumulation and all-reduce to be done in fp32",
  // accumulate_allreduce_grads_in_fp32, megatron/training/arguments.py), and fp8 runs under
  // --bf16; Megatron-Core's DDP then reduces its fp32 grad buffer (grad_reduce_in_fp32, the
  // default of NeMo's mixed-precision plugin; its performance recipes turn it off). The
  // gradients are kept in fp32 too (sim/memory/weights.hpp dp_gradient_dtype). fp16 training
  // keeps fp16 gradients.
  bool grad_reduce_fp32 = false;
  // fp8 training's weight matrices kept in fp8 only, no 16-bit copy on the GPU: Transformer
  // Engine's fp8_model_init (Megatron-LM --fp8-param-gather), the fp32 master weights in the
  // optimizer's states as before. Each layer weight matrix then holds 1 byte (its fp8 data),
  // plus its fp8 transpose where the GPU's fp8 GEMMs take only the TN layout (TE's
  // Float8Tensor caches it for the dgrad: GpuSpec::fp8_gemm_tn_only), where the default keeps
  // the bf16 weight and the cached fp8 copies beside it (sim/memory/weights.hpp).
  bool fp8_params = false;
  // MoE: the router's probabilities weight the experts' activation instead of their output
  // rows at the unpermute (Megatron-core >= 0.13; MicroBatchShape::moe_probs_in_activation)
  bool moe_probs_in_activation = false;
  // MoE under fp8 / fp4 GEMMs: the experts copy their rows out padded to the quantization's
  // alignment and copy the output back (MicroBatchShape::moe_padding_copies), where neither the
  // router nor the dispatcher aligned each expert's row count already
  bool moe_padding_copies = false;
  // MoE token dispatcher: "alltoall" (Megatron-core's MoEAlltoAllTokenDispatcher, NCCL's
  // all-to-all) or "deepep" (the flex dispatcher, --moe-token-dispatcher-type flex on DeepEP's
  // normal kernels: sim/cost/moe_dispatch_deepep.hpp prices its dispatch and combine)
  std::string moe_dispatcher = "alltoall";
  bool moe_deepep() const { return moe_dispatcher == "deepep"; }
  // MoE layers' host time counted call by call instead of host_op_s a row: "megatron_core"
  // (models/moe_host_calls.hpp, Megatron-core's MoE layer) with the per-call costs below;
  // "rows": host_op_s a row like every other layer.
  std::string moe_host_calls = "rows";
  bool moe_host_census() const { return moe_host_calls == "megatron_core"; }
  // Host time of one call through PyTorch's dispatcher with its kernel launch (torch.add),
  // one GEMM's (F.linear: dispatch, cuBLAS heuristics, launch) and one NCCL call's.
  double host_torch_op_s = 0;
  double host_gemm_launch_s = 0;
  double host_collective_s = 0;
  // The parts of each layer the stack captures in CUDA graphs (Megatron-core with TE's
  // capture, --cuda-graph-scope): their rows' host time is the graph's replay
  // (models/moe_host_calls.hpp graph_replay_host_calls, priced at host_torch_op_s a call).
  CudaGraphScopes cuda_graph_scopes;
  // The host's time for its offloaded optimizer step (plan.offload_optimizer), per parameter
  // of the GPU's shard, as the stack runs it whole: DeepSpeed's step() unscales and clips the
  // fp32 gradients on the CPU, runs its CPU Adam, then copies the fp32 weights into the GPU's
  // 16-bit ones (a blocking copy_, converted on the CPU), every rank of the node at once.
  // The step takes the longer of this and the host's DRAM-bandwidth floor. 0: the floor alone.
  double offload_update_s_per_param = 0;
  // The fused attention kernel of its training steps (one of kAttentionKernels).
  std::string attention_kernel = std::string(kFlash2Attention);
  // The family of its GEMM kernels (one of kGemmKernels).
  std::string gemm_kernel = std::string(kCublasGemm);
  // The kernels of a layer's norms, element-wise ops and casts (one of kLayerKernels).
  std::string layer_kernels = std::string(kFusedLayerKernels);
  // hf_eager: fp32 parameters under autocast (torch.amp's model in fp32, its DP collectives in fp32)
  bool hf_eager() const { return layer_kernels == kHfEagerLayerKernels; }
  // LitGPT's eager Llama on a bf16 model, LoRA (its saved tensors counted, models/litgpt_census)
  bool litgpt() const { return layer_kernels == kLitgptBf16LayerKernels; }
  // Hugging Face's modeling-code censuses (hf_eager, hf_bf16), or LitGPT's priced by hf_bf16's
  bool hf_modeling() const { return hf_eager() || layer_kernels == kHfBf16LayerKernels || litgpt(); }
  // The unfused attention core's softmax (one of kSoftmaxRules, models/megatron_softmax.hpp):
  // Megatron's FusedScaleMaskSoftmax, its CUDA kernel where the release's rule holds and
  // PyTorch's fp32 ops elsewhere, or the op list's fused kernel at every shape ("kernel").
  std::string softmax = std::string(kKernelSoftmax);
  // How the loss meets the output layer (one of kLossKernels).
  std::string loss_kernel = std::string(kLogitsLoss);
  bool fused_linear_loss() const { return loss_kernel == kFusedLinearLoss; }
  bool eager_fp32_loss() const { return loss_kernel == kEagerFp32Loss; }
  // What an overlapped TP collective hides behind (one of kTpOverlaps).
  std::string tp_overlap = std::string(kLayerTpOverlap);
  // each TP collective hides behind its own matmul only (matmul, symmetric_memory)
  bool matmul_paired_tp() const { return tp_overlap == kMatmulTpOverlap || tp_overlap == kSymmetricMemoryTpOverlap; }
  // Sequence parallelism's blocking all-gathers and reduce-scatters copy the whole tensor once
  // beside the collective: DTensor shards [batch, seq, hidden] on dim 1 (torchtitan's
  // SequenceParallel, Shard(1)) where NCCL gathers and scatters on dim 0, so PyTorch's
  // functional collectives reorder it, all_gather_tensor after the gather
  // (torch.cat(torch.chunk(res, group_size, dim=0), dim=gather_dim)) and reduce_scatter_tensor
  // before the scatter (torch.cat(torch.chunk(self, group_size, dim=scatter_dim)))
  // (torch/distributed/_functional_collectives.py, 2024-2025). Async TP's fused ops take the
  // dimension as a view instead (tp_overlap: matmul with plan.tp_comm_overlap): no copy.
  bool sp_layout_copies = false;
  // The sequence-parallel all-gather's output is what the column-parallel GEMMs keep for their
  // weight gradients: DTensor's all-gather feeds an aten.mm, and autograd saves mm's input (or
  // the recompute rebuilds it, all-gather included: models/layer_ops.cpp), so the backward
  // gathers nothing again. Megatron-core keeps the shard and re-gathers it beside the next
  // dgrad (LinearWithGradAccumulationAndAsyncCommunication.backward, LayerOp::bwd_regather).
  bool sp_gather_saved = false;
  // Under fp8 training the TP all-gathers carry fp8, 1 byte an element: torchao's float8 TP
  // (Float8ColwiseParallel, Float8RowwiseParallel, PrepareFloat8ModuleInput; torchao/float8/
  // float8_tensor_parallel.py) casts a sequence-parallel input to fp8 before its Shard(1) ->
  // Replicate all-gather, and the row-parallel output's gradient to fp8 before the backward's
  // all-gather (_NoopFwToFloat8BwDynamic after the redistribute); the reduce-scatters stay 16-bit.
  bool tp_float8_all_gather = false;
  // Under async TP (tp_overlap: matmul) the reduce-scatter of a TP entry's input gradient runs
  // unfused, on the compute stream, with its layout copy: in PyTorch's micro_pipeline_tp pass
  // that gradient sums the dgrads of the linears the gathered input fed (wq, wk, wv; w1, w3:
  // separate nn.Linear modules in torchtitan's Llama), an add, not the single matmul
  // fuse_matmul_reduce_scatter looks for (_find_producer_matmul, torch/_inductor/fx_passes/
  // micro_pipeline_tp.py, 2024-2025). Transformer Engine overlaps it with the dgrad (false).
  bool async_tp_entry_grad_unfused = false;
  // Q, K, V and the MLP's gate and up are separate linear modules, each its own GEMM in every
  // pass (torchtitan's Llama: wq, wk, wv, w1, w3, torchtitan/models/llama/model.py; so under
  // async TP each is its own B of fused_all_gather_matmul), and the input's gradient sums their
  // dgrads in one element-wise pass (AOTAutograd's add of the three, fused by Inductor). false:
  // one fused QKV (gate/up) GEMM, as Megatron-core's linear_qkv and linear_fc1.
  bool separate_projections = false;
  // PyTorch's caching allocator as the stack runs it: expandable_segments:True in
  // PYTORCH_CUDA_ALLOC_CONF (torchtitan's run_train.sh sets it), and whether `memory.fits`
  // judges the allocator's reserve plus what lives outside it (sim/memory/reserved_memory)
  // rather than the allocated peak.
  bool expandable_segments = false;
  bool fits_on_reserved = false;
  // FSDP2's buffers in the pools of the streams that allocate them (the caching allocator
  // keeps a pool per stream; a block freed on one is never reused by another): each layer's
  // all-gather output on the all-gather copy-in stream, its fp32 reduce-scatter input and
  // output (the sharded gradient) on the reduce-scatter stream (foreach_all_gather,
  // foreach_reduce in torch/distributed/_composable/fsdp/_fsdp_collectives.py, 2024). ZeRO-3 only.
  bool fsdp_stream_pools = false;
  // How context parallelism exchanges K and V (one of kCpExchanges).
  std::string cp_exchange = std::string(kRingCpExchange);
  // FSDP2's copies on the compute stream around its collectives (sim/training/fsdp_copies.hpp):
  // each gather's copy-out into the unsharded parameters (wait_for_unshard ->
  // foreach_all_gather_copy_out) and each reduce-scatter's copy-in of the unsharded gradients
  // into its reduce_dtype input (foreach_reduce -> torch._chunk_cat), torch/distributed/
  // _composable/fsdp/_fsdp_collectives.py (2024). ZeRO-3 only.
  bool fsdp_copies = false;
  // FSDP1's BackwardPrefetch.BACKWARD_POST (Composer's default, composer/trainer/dist_strategy.py
  // v0.14): the backward's gather of a layer is issued in the post-backward hook of the layer
  // after it, once that layer's gradients are computed (torch/distributed/fsdp, 1.13-2.0:
  // _post_backward_hook -> reshard, prefetch, then reduce-scatter), not before that layer's
  // backward (BACKWARD_PRE, FSDP2): nothing of the layer's own backward hides it. ZeRO-3 only.
  bool fsdp_prefetch_after_backward = false;
  // PyTorch's foreach AdamW (torch.optim.AdamW(foreach=True)): the update as eight passes over
  // the parameters, models/optimizer_state.hpp foreach_adamw_update_bytes_per_param. torchtitan
  // before 2025 (optimizer.fused off by default: "foreach": not fused, torchtitan/optimizer.py
  // 9dec370); the fused kernel after (optimizer.implementation "fused", e7c0cae).
  bool optimizer_foreach = false;
};

// The time the device spends on compute in a run of `ops` ops (a layer's pass) whose
// compute takes `device_s` and whose other device work (its collectives) `other_s`, issued
// by this stack's host. Kernel launches are asynchronous: the host runs ahead of the GPU
// while the GPU works through long ops and collectives, and the GPU waits while the host
// issues short ones, so the run takes the longer of the host's time and the device's
// (Megatron-LM/PyTorch eager; the launch queue holds about 1024 kernels, far more than a
// layer issues). One formula for the event engine and the search's estimate, which both
// take a layer's time from sim/training/layer_costs.
// The host's time to make `calls` (the census's, models/moe_host_calls.hpp): each call at
// the stack's measured cost of its kind.
inline double host_calls_s(const StackSpec& stack, const HostCalls& calls) {
  return calls.torch_ops * stack.host_torch_op_s + calls.gemm_launches * stack.host_gemm_launch_s +
         calls.collectives * stack.host_collective_s;
}

// The same with the host's time given: a run of ops the host takes `host_s` to issue.
inline double issued_compute_s(double host_s, double device_s, double other_s) {
  return device_s + other_s >= host_s ? device_s : host_s - other_s;
}
inline double issued_compute_s(const StackSpec& stack, double device_s, double other_s, std::size_t ops) {
  return issued_compute_s(static_cast<double>(ops) * stack.host_op_s, device_s, other_s);
}

}  // namespace twinsim

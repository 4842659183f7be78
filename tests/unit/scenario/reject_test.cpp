// Every class of bad scenario is rejected with a message naming the key, the value
// and the rule. Each row: a change to a valid base scenario and the expected message.
#include <gtest/gtest.h>

#include <sstream>

#include "scenario/load.hpp"

namespace twinsim {
namespace {

const char* kBase = R"(
model: llama2-7b
cluster: dgx-a100-80gb
training: {seq_len: 4096, global_batch: 64, micro_batch: 1}
plan: {tp: 2, pp: 2, dp: 4}
)";

// Nine levels of nine aliases each: 9^9 = 387,420,489 nodes once expanded, as mapping
// entries (a file) or as one flow list (a --set value).
std::string laughs(bool flow) {
  std::ostringstream text;
  for (int i = 0; i < 9; ++i) {
    if (flow) text << (i ? ", " : "[") << "&l" << i << " [";
    else text << "l" << i << ": &l" << i << " [";
    for (int j = 0; j < 9; ++j) {
      text << (j ? ", " : "");
      if (i == 0) text << "lol";
      else text << "*l" << i - 1;
    }
    text << (flow ? "]" : "]\n");
  }
  if (flow) text << "]";
  return text.str();
}

std::string billion_laughs() { return std::string(kBase) + laughs(false); }
std::string billion_laughs_flow() { return laughs(true); }

struct BadCase {
  const char* what;
  std::string text;                    // scenario text ("" = kBase)
  std::vector<std::string> overrides;  // --set arguments
  const char* message;                 // expected exactly as a substring of what()
};

std::vector<BadCase> bad_cases() {
  // one case a line, as a table
  // clang-format off
  return {
      {"tp not dividing heads", "", {"plan.tp=3", "plan.dp=1"}, "plan.tp=3 does not divide model.heads=32"},
      {"pp not dividing layers", "", {"plan.pp=3", "plan.dp=1"}, "plan.pp=3 does not divide model.layers=32"},
      {"world size vs cluster", "", {"cluster.nodes=1"}, "plan.dp=4 gives a world size tp*pp*cp*dp=16 that does not match"},
      {"dp not dividing cluster", "", {"cluster.nodes=1", "plan.dp=null", "plan.tp=3"}, "tp*pp*cp=6 does not divide the cluster's 8 GPUs"},
      {"global batch", "", {"training.global_batch=10"}, "training.global_batch=10 is not a multiple of training.micro_batch*plan.dp=4"},
      {"zero out of range", "", {"plan.zero=4"}, "plan.zero=4 is too large (at most 3)"},
      {"negative tp", "", {"plan.tp=-2"}, "plan.tp=-2 must be at least 1"},
      {"zero tp", "", {"plan.tp=0"}, "plan.tp=0 must be at least 1"},
      {"fractional tp", "", {"plan.tp=2.5"}, "plan.tp=2.5 must be an integer"},
      {"tp not a number", "", {"plan.tp=eight"}, "plan.tp=eight must be an integer"},
      {"tp is a list", "", {"plan.tp=[1,2]"}, "plan.tp=[1, 2] must be a single value"},
      {"unknown plan key", "", {"plan.tensor_parallel=2"}, "plan.tensor_parallel: is not a known key"},
      {"typo with hint", "", {"plan.sequence_paralel=true"}, "did you mean 'sequence_parallel'?"},
      {"unknown top-level key", "", {"optimiser=adam"}, "optimiser: is not a known key"},
      {"unknown model", "", {"model=llama-2-7b"}, "model=llama-2-7b is not a model in the catalog, did you mean 'llama2-7b'?"},
      {"unknown cluster", "", {"cluster=dgx-a100"}, "cluster=dgx-a100 is not a node type in the catalog, did you mean"},
      {"unknown gpu", "", {"cluster.gpu=a100-sxm-80"}, "cluster.gpu=a100-sxm-80 is not a GPU in the catalog, did you mean 'a100-sxm-80gb'?"},
      {"bad precision", "", {"training.precision=fp64"}, "training.precision=fp64 is not one of fp32 | fp16 | bf16 | fp8 | nvfp4 | mxfp4"},
      {"fp8 on A100", "", {"training.precision=fp8"}, "training.precision=fp8 is not supported by GPU a100-sxm-80gb"},
      {"bad schedule", "", {"plan.schedule=zb"}, "plan.schedule=zb is not one of gpipe | 1f1b | interleaved"},
      {"bad recompute", "", {"plan.recompute=some"}, "plan.recompute=some is not one of none | selective | full"},
      {"bad optimizer", "", {"training.optimizer=lamb"}, "training.optimizer=lamb is not one of adam | adamw | sgd"},
      {"bool expected", "", {"plan.sequence_parallel=maybe"}, "plan.sequence_parallel=maybe must be true or false"},
      {"missing model", "cluster: dgx-h100\ntraining: {seq_len: 8, global_batch: 8}\nplan: {}\n", {}, "model: is required"},
      {"missing cluster", "model: gpt2-small\ntraining: {seq_len: 8, global_batch: 8}\nplan: {}\n", {}, "cluster: is required"},
      {"missing plan", "model: gpt2-small\ncluster: dgx-h100\ntraining: {seq_len: 8, global_batch: 8}\n", {}, "plan: is required"},
      {"neither workload", "model: gpt2-small\ncluster: dgx-h100\nplan: {}\n", {}, "exactly one of training or inference"},
      {"both workloads", "", {"inference.prompt_len=8"}, "exactly one of training or inference"},
      {"missing seq_len", "model: gpt2-small\ncluster: dgx-h100\ntraining: {global_batch: 8}\nplan: {}\n", {}, "training.seq_len: is required"},
      {"yaml syntax", "model: [gpt2\n", {}, "is not valid YAML: line"},
      {"preset not a name", "", {"cluster.gpu={preset: [1]}"}, "cluster.gpu.preset: must be a catalog name, not a list or mapping"},
      {"duplicate key", "model: llama2-7b\nmodel: gpt2-small\ncluster: dgx-a100-80gb\ntraining: {seq_len: 1024, global_batch: 8}\n",
       {}, "model: is given twice in one mapping"},
      {"duplicate nested key (JSON)",
       R"({"model": "llama2-7b", "cluster": "dgx-a100-80gb", "training": {"seq_len": 1024, "seq_len": 2048, "global_batch": 8}})",
       {}, "training.seq_len: is given twice in one mapping"},
      {"nesting too deep", "model: " + std::string(40, '[') + std::string(40, ']') + "\n", {}, "nests deeper than 32 levels"},
      {"root not a mapping", "- a\n- b\n", {}, "scenario=[a, b] must be a mapping"},
      {"stage_layers count", "", {"plan.stage_layers=[32]"}, "plan.stage_layers=1 entries must have plan.pp=2 entries"},
      {"stage_layers sum", "", {"plan.stage_layers=[15, 16]"}, "plan.stage_layers=sum 31 does not add up to model.layers=32"},
      {"stage_layers zero", "", {"plan.stage_layers=[0, 32]"}, "plan.stage_layers[0]=0 must be at least 1"},
      {"stage_layers past an int", "", {"plan.stage_layers=[4294967296, 1]"}, "plan.stage_layers[0]=4294967296 is too large (at most 1048576)"},
      {"virtual stages without interleaved", "", {"plan.virtual_stages=2"}, "plan.virtual_stages=2 needs plan.schedule=interleaved"},
      {"virtual stages over layers", "", {"plan.schedule=interleaved", "plan.virtual_stages=17"}, "plan.virtual_stages=17 exceeds the 16 layers of stage 0 (every virtual stage needs a layer)"},
      {"interleaved micro-batches", "", {"plan.schedule=interleaved", "plan.virtual_stages=2", "training.global_batch=12"}, "needs the 3 micro-batches per step to be a multiple of plan.pp=2"},
      {"ep without moe", "", {"plan.ep=2"}, "plan.ep=2 needs a mixture-of-experts model"},
      {"ep not dividing experts", "model: mixtral-8x7b\ncluster: dgx-h100\ntraining: {seq_len: 4096, global_batch: 64}\nplan: {tp: 1, dp: 8, ep: 3}\n", {}, "plan.ep=3 does not divide model.moe.experts=8"},
      {"ep x expert_tp not dividing tp*cp*dp", "model: mixtral-8x7b\ncluster: dgx-h100\ntraining: {seq_len: 4096, global_batch: 64}\nplan: {tp: 2, dp: 2, ep: 4, sequence_parallel: true}\n", {}, "plan.ep=4 times plan.tp=2 does not divide the stage's plan.tp*plan.cp*plan.dp=4 ranks"},
      {"folded ep x expert_tp", "model: mixtral-8x7b\ncluster: dgx-h100\ntraining: {seq_len: 4096, global_batch: 64}\nplan: {tp: 2, dp: 2, ep: 8, expert_tp: 1, sequence_parallel: true}\n", {}, "plan.ep=8 times plan.expert_tp=1 does not divide the stage's plan.tp*plan.cp*plan.dp=4 ranks"},
      {"expert_tp without moe", "", {"plan.expert_tp=2"}, "plan.expert_tp=2 needs a mixture-of-experts model"},
      {"expert_tp not dividing the experts' width", "model: mixtral-8x7b\ncluster: dgx-h100\ntraining: {seq_len: 4096, global_batch: 64}\nplan: {tp: 1, dp: 8, expert_tp: 3}\n", {}, "plan.expert_tp=3 does not divide model.moe.expert_ffn_hidden=14336"},
      {"ep and tp without sp", "model: mixtral-8x7b\ncluster: dgx-h100\ntraining: {seq_len: 4096, global_batch: 64}\nplan: {tp: 2, dp: 4, ep: 2}\n", {}, "plan.sequence_parallel=false must be true with plan.tp=2 and plan.ep=2"},
      {"serving ep x expert_tp not tp", "model: mixtral-8x7b\ncluster: dgx-h100\ninference: {prompt_len: 128, output_len: 128, batch: 8}\nplan: {tp: 2, expert_tp: 1}\n", {}, "plan.ep=1 times plan.expert_tp=1 must equal plan.tp=2"},
      {"serving expert_tp above tp", "model: mixtral-8x7b\ncluster: dgx-h100\ninference: {prompt_len: 128, output_len: 128, batch: 8}\nplan: {tp: 2, dp: 2, expert_tp: 4}\n", {}, "plan.expert_tp=4 exceeds plan.tp=2"},
      {"serving experts in tp with pp", "model: mixtral-8x7b\ncluster: dgx-h100\ninference: {prompt_len: 128, output_len: 128, batch: 8}\nplan: {tp: 2, pp: 2, ep: 2, expert_tp: 1}\n", {}, "plan.pp=2 must be 1 with serving's experts inside attention's TP group"},
      {"cp not dividing seq", "", {"plan.cp=3", "plan.dp=1", "training.global_batch=8", "cluster.nodes=null"}, "plan.cp=3 needs training.seq_len to split into 2*cp=6 equal chunks (Megatron's load-balanced context parallelism); training.seq_len=4096 does not"},
      {"seq beyond learned positions", "model: gpt2-small\ncluster: dgx-h100\ntraining: {seq_len: 2048, global_batch: 8}\nplan: {dp: 8}\n", {}, "training.seq_len=2048 exceeds the learned position table, model.max_seq_len=1024"},
      {"kv heads not dividing heads", "", {"model.kv_heads=5"}, "model.kv_heads=5 does not divide model.heads=32"},
      {"heads not dividing hidden", "", {"model.heads=30", "plan.tp=1", "plan.dp=8"}, "model.heads=30 does not divide model.hidden=4096"},
      {"absurd hidden size", "", {"model.hidden=1e30"}, "model.hidden=1e30 is too large"},
      {"absurd batch", "", {"training.global_batch=1e300"}, "training.global_batch=1e300 is too large"},
      {"moe top_k above experts", "", {"model.moe={experts: 4, top_k: 8, expert_ffn_hidden: 64}"}, "model.moe.top_k=8 exceeds model.moe.experts=4"},
      {"moe missing experts", "", {"model.moe={top_k: 2, expert_ffn_hidden: 64}"}, "model.moe.experts: is required"},
      {"set without equals", "", {"plan.tp"}, "--set=plan.tp must have the form key=value"},
      {"set on a scalar", "", {"plan.tp.x=1"}, "plan.tp=2 is a single value, so it has no keys to set"},
      {"negative bandwidth", "", {"cluster.intra_node.bandwidth_GBps=-5"}, "cluster.intra_node.bandwidth_GBps=-5 is out of range"},
      {"measured collective across nodes", "", {"cluster.inter_node.measured_busbw={all_reduce: {2: [[1e6, 10]]}}"},
       "cluster.inter_node.measured_busbw: is used inside a node only (collectives across nodes take the protocol "
       "model); give it under intra_node"},
      {"unknown collective curve", "", {"cluster.intra_node.efficiency_by_op={reduce_scater: [[1, 0.5]]}"},
       "cluster.intra_node.efficiency_by_op.reduce_scater: is not a collective"},
      {"unknown kernel", "model: llama2-7b\ncluster: {preset: dgx-a100-80gb, nodes: 2, gpu: {preset: a100-sxm-80gb, kernel_efficiency: {gelo: {fwd: [[1, 0.5]]}}}}\ntraining: {seq_len: 4096, global_batch: 64, micro_batch: 1}\nplan: {tp: 2, pp: 2, dp: 4}\n", {},
       "cluster.gpu.kernel_efficiency.gelo: is not a kernel the op list names (layernorm, rmsnorm, gelu,"},
      {"unknown 16-bit kernel", "model: llama2-7b\ncluster: {preset: dgx-a100-80gb, nodes: 2, gpu: {preset: a100-sxm-80gb, kernel_efficiency_16bit: {swiglo: {fwd: [[1, 0.5]]}}}}\ntraining: {seq_len: 4096, global_batch: 64, micro_batch: 1}\nplan: {tp: 2, pp: 2, dp: 4}\n", {},
       "cluster.gpu.kernel_efficiency_16bit.swiglo: is not a kernel the op list names (layernorm, rmsnorm, gelu,"},
      {"kernel without curves", "model: llama2-7b\ncluster: {preset: dgx-a100-80gb, nodes: 2, gpu: {preset: a100-sxm-80gb, kernel_efficiency: {gelu: {}}}}\ntraining: {seq_len: 4096, global_batch: 64, micro_batch: 1}\nplan: {tp: 2, pp: 2, dp: 4}\n", {},
       "cluster.gpu.kernel_efficiency.gelu: needs a fwd or bwd curve"},
      {"attention curve pass", "model: llama2-7b\ncluster: {preset: dgx-a100-80gb, nodes: 2, gpu: {preset: a100-sxm-80gb, attention_efficiency: {forward: [[1, 0.5]]}}}\ntraining: {seq_len: 4096, global_batch: 64, micro_batch: 1}\nplan: {tp: 2, pp: 2, dp: 4}\n", {},
       "cluster.gpu.attention_efficiency.forward: is not a known key"},
      {"attention head width", "model: llama2-7b\ncluster: {preset: dgx-a100-80gb, nodes: 2, gpu: {preset: a100-sxm-80gb, attention_efficiency_by_head_dim: {wide: {fwd: [[1, 0.5]]}}}}\ntraining: {seq_len: 4096, global_batch: 64, micro_batch: 1}\nplan: {tp: 2, pp: 2, dp: 4}\n", {},
       "cluster.gpu.attention_efficiency_by_head_dim.wide=wide must be a head width"},
      {"prefill pair count", "model: llama3-8b\ncluster: {preset: dgx-h200, gpu: {preset: h200-sxm, prefill_attention_by_heads: {vllm_fa3: {0: [[1024, 0.5]]}}}}\ninference: {prompt_len: 128, output_len: 128, batch: 8}\nplan: {tp: 1}\n", {},
       "cluster.gpu.prefill_attention_by_heads.vllm_fa3.0=0 must be a count of (query head, prompt) pairs, an integer in [1, 1000000]"},
      {"prefill kernel unknown to the GPU key", "model: llama3-8b\ncluster: {preset: dgx-h200, gpu: {preset: h200-sxm, prefill_attention_by_heads: {flash3: {12: [[1024, 0.5]]}}}}\ninference: {prompt_len: 128, output_len: 128, batch: 8}\nplan: {tp: 1}\n", {},
       "cluster.gpu.prefill_attention_by_heads.flash3"},
      {"attention kernel without curves of its own", "model: llama2-7b\ncluster: {preset: dgx-a100-80gb, nodes: 2, gpu: {preset: a100-sxm-80gb, attention_kernel_efficiency_by_seq: {flash2: {128: {fwd: [[512, 0.5]], bwd: [[512, 0.5]]}}}}}\ntraining: {seq_len: 4096, global_batch: 64, micro_batch: 1}\nplan: {tp: 2, pp: 2, dp: 4}\n", {},
       "cluster.gpu.attention_kernel_efficiency_by_seq.flash2: is not an attention kernel with curves of its own (cudnn, flash3, flash4, sdpa_flash, flash1)"},
      {"stack attention kernel the GPU lacks", "model: llama2-7b\ncluster: {preset: dgx-a100-80gb, nodes: 2}\nstack: {attention_kernel: cudnn}\ntraining: {seq_len: 4096, global_batch: 64, micro_batch: 1}\nplan: {tp: 2, pp: 2, dp: 4}\n", {},
       "stack.attention_kernel=cudnn needs the GPU's measured curves for that kernel"},
      {"serving prefill kernel the GPU lacks", "model: llama2-7b\ncluster: dgx-a100-80gb\nstack: {serving_prefill_attention: flash3}\ninference: {prompt_len: 128, output_len: 128, batch: 8}\nplan: {tp: 1}\n", {},
       "stack.serving_prefill_attention=flash3 needs the GPU's causal curves for that kernel"},
      {"serving prefill kernel unknown", "model: llama2-7b\ncluster: dgx-h100\nstack: {serving_prefill_attention: sdpa}\ninference: {prompt_len: 128, output_len: 128, batch: 8}\nplan: {tp: 1}\n", {},
       "stack.serving_prefill_attention=sdpa"},
      {"fused linear loss under tensor parallelism", "model: llama2-7b\ncluster: {preset: dgx-h100, nodes: 2}\nstack: {loss_kernel: fused_linear}\ntraining: {seq_len: 4096, global_batch: 64, micro_batch: 1}\nplan: {tp: 2, pp: 2, dp: 4}\n", {},
       "plan.tp=2 must be 1 (stack.loss_kernel fused_linear"},
      {"fused linear loss under hf_eager", "model: llama2-7b\ncluster: {preset: dgx-h100, nodes: 1}\nstack: {preset: hf-eager, loss_kernel: fused_linear}\ntraining: {seq_len: 4096, global_batch: 64, micro_batch: 1}\nplan: {dp: 8}\n", {},
       "stack.layer_kernels=hf_eager counts Hugging Face's own loss"},
      {"negative host time per micro-batch", "model: llama2-7b\ncluster: {preset: dgx-h100, nodes: 1}\nstack: {preset: megatron-eager, host_microbatch_us: -5}\ntraining: {seq_len: 4096, global_batch: 64, micro_batch: 1}\nplan: {dp: 8}\n", {},
       "stack.host_microbatch_us=-5"},
      {"negative serving host time per sequence", "model: llama2-7b\ncluster: {preset: dgx-h100, gpus_per_node: 1, nodes: 1}\nstack: {preset: trtllm, serving_sequence_us: -1}\ninference: {prompt_len: 128, output_len: 128, batch: 8}\nplan: {}\n", {},
       "stack.serving_sequence_us=-1"},
      {"eager prefill without a per-op host time", "model: llama2-7b\ncluster: {preset: dgx-h100, gpus_per_node: 1, nodes: 1}\nstack: {preset: trtllm, serving_eager_prefill: true}\ninference: {prompt_len: 128, output_len: 128, batch: 8}\nplan: {}\n", {},
       "stack.serving_eager_prefill=true"},
      {"SGLang pool fraction above 1", "model: llama2-7b\ncluster: {preset: dgx-h100, gpus_per_node: 1, nodes: 1}\nstack: {preset: sglang, serving_mem_fraction_static: [[1, 1.2]]}\ninference: {prompt_len: 128, output_len: 128, batch: 8}\nplan: {}\n", {},
       "stack.serving_mem_fraction_static[0]"},
      {"engine all-reduce curve for a group of one", "model: llama2-7b\ncluster: {preset: dgx-h100, gpus_per_node: 1, nodes: 1}\nstack: {preset: vllm-v1, serving_tp_allreduce_us: {1: [[8192, 4]]}}\ninference: {prompt_len: 128, output_len: 128, batch: 8}\nplan: {}\n", {},
       "is not a group size"},
      {"SGLang pool fraction at a fractional TP size", "model: llama2-7b\ncluster: {preset: dgx-h100, gpus_per_node: 1, nodes: 1}\nstack: {preset: sglang, serving_mem_fraction_static: [[1.5, 0.8]]}\ninference: {prompt_len: 128, output_len: 128, batch: 8}\nplan: {}\n", {},
       "a TP size is a whole number"},
      {"host CPU time scale of 0", "model: llama2-7b\ncluster: {preset: dgx-h100, gpus_per_node: 1, nodes: 1, host: {cpu_time_scale: 0}}\nstack: {preset: trtllm}\ninference: {prompt_len: 128, output_len: 128, batch: 8}\nplan: {}\n", {},
       "cluster.host.cpu_time_scale=0"},
      {"serving host time misspelt", "model: llama2-7b\ncluster: {preset: dgx-h100, gpus_per_node: 1, nodes: 1}\nstack: {serving_step_ms: 1}\ninference: {prompt_len: 128, output_len: 128, batch: 8}\nplan: {}\n", {},
       "did you mean 'serving_step_us'?"},
      {"unknown loss kernel", "model: llama2-7b\ncluster: {preset: dgx-h100, nodes: 1}\nstack: {loss_kernel: liger}\ntraining: {seq_len: 4096, global_batch: 64, micro_batch: 1}\nplan: {dp: 8}\n", {},
       "stack.loss_kernel=liger"},
      {"gpu without a GEMM curve", "model: gpt2-small\ncluster: {gpu: {memory_GiB: 80, hbm_bandwidth_GBps: 3350, peak_tflops: {fp32: 67, bf16: 989}}, gpus_per_node: 8, intra_node: {bandwidth_GBps: 450}}\ntraining: {seq_len: 1024, global_batch: 16}\nplan: {dp: 8}\n", {},
       "cluster.gpu.gemm_efficiency: is required"},
      {"GEMM curve for a missing math type", "model: llama2-7b\ncluster: {preset: dgx-a100-80gb, nodes: 2, gpu: {preset: a100-sxm-80gb, gemm_efficiency_by_dtype: {fp8: [[1, 0.5]]}}}\ntraining: {seq_len: 4096, global_batch: 64, micro_batch: 1}\nplan: {tp: 2, pp: 2, dp: 4}\n", {},
       "cluster.gpu.gemm_efficiency_by_dtype.fp8=fp8 is not a math type this GPU lists under peak_tflops"},
      {"power limit stopping the clock", "model: llama2-7b\ncluster: {preset: dgx-h100, nodes: 1, gpu: {preset: h100-sxm, power_limited_gemm: {memory_bound_load: 0.5, knee_load: 0.0, slope: 1.0}}}\ntraining: {seq_len: 4096, global_batch: 64, micro_batch: 1}\nplan: {dp: 8}\n", {},
       "cluster.gpu.power_limited_gemm.slope=1.000000 times (1 - knee_load) must be below 1"},
      {"power limit missing a figure", "model: gpt2-small\ncluster: {gpu: {memory_GiB: 80, hbm_bandwidth_GBps: 3350, peak_tflops: {fp32: 67, bf16: 989}, gemm_efficiency: [[1, 0.8]], power_limited_gemm: {knee_load: 0.6, slope: 0.4}}, gpus_per_node: 8, intra_node: {bandwidth_GBps: 450}}\ntraining: {seq_len: 1024, global_batch: 16}\nplan: {dp: 8}\n", {},
       "cluster.gpu.power_limited_gemm.memory_bound_load: is required"},
      {"GEMM tile edge below 128", "model: llama2-7b\ncluster: {preset: dgx-h100, nodes: 1, gpu: {preset: h100-sxm, gemm_tile_edges: [64, 128]}}\ninference: {prompt_len: 128}\n", {},
       "cluster.gpu.gemm_tile_edges"},
      {"no GEMM tile edges", "model: llama2-7b\ncluster: {preset: dgx-h100, nodes: 1, gpu: {preset: h100-sxm, gemm_tile_edges: []}}\ninference: {prompt_len: 128}\n", {},
       "cluster.gpu.gemm_tile_edges=[] needs at least one tile edge"},
      {"small-expert 4-bit rows curve without the shape factor", "model: llama2-7b\ncluster: {preset: dgx-a100-80gb, nodes: 1, gpu: {preset: a100-sxm-80gb, grouped_gemm_efficiency_by_rows_small_expert_4bit: [[2, 0.01]]}}\ninference: {prompt_len: 128}\n", {},
       "cluster.gpu.grouped_gemm_efficiency_by_rows_small_expert_4bit: needs grouped_gemm_scale_by_expert_weights"},
      {"KV attention floor under a wrong name", "model: llama2-7b\ncluster: {preset: dgx-h100, nodes: 1, gpu: {preset: h100-sxm, kv_attention_latency: {call_us: 1, sequence_head_ns: 20}}}\ninference: {prompt_len: 128}\n", {},
       "cluster.gpu.kv_attention_latency.sequence_head_ns: is not a known key, did you mean 'sequence_kv_head_ns'?"},
      {"negative KV attention floor", "model: llama2-7b\ncluster: {preset: dgx-h100, nodes: 1, gpu: {preset: h100-sxm, kv_attention_latency: {call_us: -1}}}\ninference: {prompt_len: 128}\n", {},
       "cluster.gpu.kv_attention_latency.call_us=-1 is out of range"},
      {"multi-node without inter_node", "model: gpt2-small\ncluster: {gpu: h100-sxm, gpus_per_node: 8, intra_node: {bandwidth_GBps: 450}}\ntraining: {seq_len: 1024, global_batch: 16}\nplan: {dp: 16}\n", {}, "cluster.inter_node: is required: the plan needs 2 nodes"},
      {"inference with zero", "model: gpt2-small\ncluster: dgx-h100\ninference: {prompt_len: 128}\nplan: {zero: 1}\n", {}, "plan.zero=1 applies to training only"},
      {"inference with ZeRO++", "model: gpt2-small\ncluster: dgx-h100\ninference: {prompt_len: 128}\nplan: {zero_quantized_gradients: true}\n", {},
       "plan.zero_quantized_gradients=true applies to training with ZeRO-3"},
      {"gradient compression with ZeRO-3", "", {"plan.zero=3", "plan.gradient_compression=int8"},
       "plan.gradient_compression=int8 compresses ZeRO 0-2's gradient reduction; with plan.zero: 3 use plan.zero_quantized_gradients"},
      {"gradient compression with one DP rank", "", {"plan.dp=1", "plan.gradient_compression=int4"},
       "plan.gradient_compression=int4 compresses the data-parallel gradient reduction; plan.dp=1 has none"},
      {"gradient compression unknown", "", {"plan.gradient_compression=int2"},
       "plan.gradient_compression=int2 is not one of none | int8 | int4"},
      {"inference with gradient compression", "model: gpt2-small\ncluster: dgx-h100\ninference: {prompt_len: 128}\nplan: {gradient_compression: int8}\n", {},
       "plan.gradient_compression=int8 applies to training (an inference run reduces no gradients)"},
      {"HSDP replicas not dividing dp", "", {"plan.zero=1", "plan.dp_replicate=3"},
       "plan.dp_replicate=3 does not divide plan.dp=4"},
      {"HSDP without ZeRO", "", {"plan.dp_replicate=2"},
       "plan.dp_replicate=2 splits ZeRO's shard groups into replicas: it needs plan.zero 1, 2 or 3"},
      {"HSDP on DeepSpeed", "", {"plan.zero=1", "plan.dp_replicate=2", "stack=deepspeed"},
       "plan.dp_replicate=2 is PyTorch FSDP's HSDP or Megatron-core's distributed-optimizer instances; stack deepspeed"},
      // what the stack can run is its typed property (stack.zero_hybrid_sharding), not its name:
      // a preset built on deepspeed inherits it, and any stack can say it cannot
      {"HSDP on a preset built on DeepSpeed", "", {"plan.zero=1", "plan.dp_replicate=2", "stack=hf-deepspeed"},
       "plan.dp_replicate=2 is PyTorch FSDP's HSDP or Megatron-core's distributed-optimizer instances; stack "
       "hf-deepspeed (stack.zero_hybrid_sharding: false"},
      {"HSDP on a stack that says it cannot", "",
       {"plan.zero=1", "plan.dp_replicate=2", "stack=megatron-core", "stack.zero_hybrid_sharding=false"},
       "stack megatron-core (stack.zero_hybrid_sharding: false, as DeepSpeed's) shards ZeRO over the whole"},
      // the precision-aware optimizer, likewise a typed property (stack.precision_aware_optimizer)
      {"bf16 moments on a preset built on torchtitan", "",
       {"plan.zero=1", "plan.exp_avg_dtype=bf16", "stack=torchtitan-compile"},
       "stack torchtitan-compile (stack.precision_aware_optimizer: false) does not run it"},
      {"bf16 moments on a stack that says it cannot", "",
       {"plan.zero=1", "plan.exp_avg_dtype=bf16", "stack=megatron-core", "stack.precision_aware_optimizer=false"},
       "stack megatron-core (stack.precision_aware_optimizer: false) does not run it"},
      {"HSDP with gradient compression", "", {"plan.zero=1", "plan.dp_replicate=2", "plan.gradient_compression=int8"},
       "plan.dp_replicate=2 with plan.gradient_compression is not modelled"},
      {"inference with HSDP", "model: gpt2-small\ncluster: dgx-h100\ninference: {prompt_len: 128}\nplan: {dp: 2, dp_replicate: 2}\n", {},
       "plan.dp_replicate=2 applies to training with ZeRO"},
      {"hpZ without ZeRO-3", "", {"plan.zero=1", "plan.zero_hpz_partition_size=2"},
       "plan.zero_hpz_partition_size=2 partitions ZeRO-3's parameters a second time"},
      {"inference bad dtype", "model: gpt2-small\ncluster: dgx-h100\ninference: {prompt_len: 128, weight_dtype: int3}\nplan: {}\n", {}, "inference.weight_dtype=int3 is not one of"},
      {"fp8 block scales on bf16 weights", "model: gpt2-small\ncluster: dgx-h100\ninference: {prompt_len: 128, fp8_scaling: block}\nplan: {}\n", {}, "inference.fp8_scaling=block needs fp8 weights"},
      {"unknown fp8 scaling", "model: gpt2-small\ncluster: dgx-h100\ninference: {prompt_len: 128, weight_dtype: fp8, fp8_scaling: row}\nplan: {}\n", {}, "inference.fp8_scaling=row is not one of"},
      {"inference tp vs kv heads", "model: llama2-70b\ncluster: dgx-h100\ninference: {prompt_len: 128}\nplan: {tp: 3}\n", {}, "plan.tp=3 does not divide model.heads=64"},
      // issue 58: refused before any walk of the tree, naming the line and the rule
      {"alias bomb (billion laughs)", billion_laughs(), {}, "<scenario>: line 11, column 10: its aliases expand to more than 100000 nodes (a YAML alias bomb?)"},
      {"alias bomb in --set", "", {"plan.recompute=" + billion_laughs_flow()}, "plan.recompute: line 1, column"},
      {"alias cycle", std::string(kBase) + "x: &x {y: *x}\n", {}, "an alias refers to a collection that contains it (a cycle)"},
      {"deep nesting", "model: " + std::string(5000, '[') + "\n", {}, "line 1, column"},
      {"nesting deep through aliases", std::string(kBase) + "a: &a " + std::string(20, '[') + std::string(20, ']') +
       "\nb: " + std::string(20, '[') + "*a" + std::string(20, ']') + "\n", {}, "nests deeper than 32 levels"},
      {"list as a key", std::string(kBase) + "[plan]: 1\n", {}, "line 6, column 1: a mapping key must be a name, not a list, a mapping or empty"},
      {"null as a key", std::string(kBase) + "~: 1\n", {}, "line 6, column 1: a mapping key must be a name"},
      {"overflowing embedding", "", {"model.vocab=2147483648", "model.hidden=2147483648"},
       "model.vocab=2147483648 x model.hidden=2147483648: make 4.61e+18 embedding parameters, more than 2^53"},
      {"overflowing tokens", "", {"training.global_batch=1099511627776", "training.seq_len=16384"},
       "training.global_batch=1099511627776 x training.seq_len=16384: make 1.8e+16 tokens per step"},
      {"missing hf_config file", "", {"model={hf_config: no/such/config.json}"},
       "model.hf_config=no/such/config.json is missing: no such file"},
  };
  // clang-format on
}

TEST(RejectScenario, EveryBadInputNamesKeyValueAndRule) {
  const std::vector<BadCase> cases = bad_cases();
  ASSERT_GE(cases.size(), 40u);
  for (const BadCase& c : cases) {
    const std::string text = c.text.empty() ? kBase : c.text;
    try {
      load_scenario_text(text, c.overrides);
      ADD_FAILURE() << c.what << ": was accepted";
    } catch (const ScenarioError& e) {
      EXPECT_NE(std::string(e.what()).find(c.message), std::string::npos)
          << c.what << ":\n  got      " << e.what() << "\n  expected " << c.message;
    }
  }
}

// Megatron's split counting the embedding (plan.account_for_embedding_in_pipeline_split): 32
// layers and the embedding, 33 units, do not divide into pp 2 x 1 virtual stage.
TEST(RejectScenario, AnAccountedSplitThatDoesNotDivideNamesItsKey) {
  try {
    load_scenario_text(kBase, {"plan.account_for_embedding_in_pipeline_split=true"});
    ADD_FAILURE() << "was accepted";
  } catch (const ScenarioError& e) {
    EXPECT_NE(std::string(e.what()).find("plan.account_for_embedding_in_pipeline_split=true needs model.layers=32 and "
                                         "the embedding and loss it counts as layers to divide into plan.pp x "
                                         "virtual stages (2)"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace twinsim

#pragma once
// The tiny model and plan the MPI harnesses train (parity_mpi.cpp, record_mpi.cpp), from
// key=value arguments: model=gpt|llama|moe|mla, tp, pp, dp, ep, etp, sp, zero, replicate, precision, lora (rank), ...
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <map>
#include <stdexcept>
#include <string>

#include <unistd.h>

#include "exec/train/train_config.hpp"

namespace twinsim::exec {

// A uint16 token file (training.data) of a fixed pseudo-random stream, written by every
// rank under its own name, so the runs read real files through the executor's reader.
inline std::string token_file(int vocab) {
  const std::string path =
      (std::filesystem::temp_directory_path() / ("twinsim_parity_tokens_" + std::to_string(::getpid()) + ".bin")).string();
  std::ofstream out(path, std::ios::binary);
  std::uint64_t x = 12345;
  for (int i = 0; i < 4096; ++i) {
    x = x * 6364136223846793005ULL + 1442695040888963407ULL;  // Knuth's MMIX LCG
    const auto id = static_cast<std::uint16_t>((x >> 33) % static_cast<std::uint64_t>(vocab));
    out.put(static_cast<char>(id & 0xff)).put(static_cast<char>(id >> 8));
  }
  return path;
}

inline TrainConfig tiny_config(const std::map<std::string, std::string>& args) {
  auto get = [&](const std::string& k, const std::string& fallback) {
    auto it = args.find(k);
    return it == args.end() ? fallback : it->second;
  };
  TrainConfig c;
  ModelSpec& m = c.model;
  const std::string model = get("model", "gpt");
  // moe: Llama with experts; mla: that with latent attention (DeepSeek-V2-shaped)
  const bool llama = model == "llama" || model == "moe" || model == "mla";
  m.name = "parity-" + model;
  m.layers = std::stoi(get("layers", "4"));
  m.hidden = 32;
  m.heads = 4;
  m.kv_heads = llama ? 2 : 4;
  m.head_dim = 8;
  m.ffn_hidden = llama ? 48 : 64;
  m.vocab = 64;
  m.max_seq_len = 32;
  m.activation = llama ? Activation::swiglu : Activation::gelu;
  m.norm = llama ? Norm::rmsnorm : Norm::layernorm;
  m.position = llama ? Position::rope : Position::learned;
  m.tied_embeddings = !llama;
  m.bias = !llama;
  if (model == "mla") {  // per head Q/K nope 6 + rope 2, V 4; Q bottleneck 12, KV latent 10
    m.kv_heads = m.heads;
    m.head_dim = 8;
    m.mla = MlaSpec{12, 10, 6, 2, 4};
  }
  if (model == "moe" || model == "mla") {  // DeepSeekMoE-shaped: a dense first layer, 4 experts (top 2), one shared
    MoeSpec moe;
    moe.experts = 4;
    moe.top_k = 2;
    moe.expert_ffn_hidden = 16;
    moe.shared_experts = 1;
    moe.dense_layers = 1;
    m.moe = moe;
  }
  c.training.seq_len = 32;
  c.training.global_batch = std::stoi(get("global", "4"));
  c.training.micro_batch = std::stoi(get("micro", "1"));
  if (!parse_dtype(get("precision", "fp32"), c.training.precision)) throw std::invalid_argument("precision");
  c.training.optimizer = Optimizer::adam;
  Plan& p = c.plan;
  p.tp = std::stoi(get("tp", "1"));
  p.pp = std::stoi(get("pp", "1"));
  p.dp = std::stoi(get("dp", "1"));
  p.ep = std::stoi(get("ep", "1"));
  p.expert_tp = std::stoi(get("etp", "0"));  // 0: the experts follow tp
  p.sequence_parallel = get("sp", "0") == "1";
  p.zero = std::stoi(get("zero", "0"));
  p.dp_replicate = std::stoi(get("replicate", "1"));  // hybrid sharding: dp / replicate ranks a shard group
  p.flash_attention = get("flash", "1") == "1";
  if (!parse_recompute(get("recompute", "none"), p.recompute)) throw std::invalid_argument("recompute");
  if (!parse_schedule(get("schedule", "1f1b"), p.schedule)) throw std::invalid_argument("schedule");
  c.seed = 42;
  c.training.optim.grad_clip = std::stod(get("clip", "0"));  // global-norm clipping, both runs
  if (get("data", "0") == "1") c.training.data = {token_file(static_cast<int>(m.vocab)), 2};
  if (const int rank = std::stoi(get("lora", "0")); rank > 0) {  // LoRA on every linear layer, alpha 2r
    LoraSpec lora;
    lora.rank = rank;
    lora.alpha = 2.0 * rank;
    for (LoraModule module : kLoraModules) lora.modules |= 1u << static_cast<int>(module);
    c.training.lora = lora;
  }
  return c;
}

}  // namespace twinsim::exec

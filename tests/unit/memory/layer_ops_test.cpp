// The layer op list against Korthikanti et al. 2022 ("Reducing Activation Recomputation
// in Large Transformer Models") Table 2 and the Megatron FLOP count.
#include <gtest/gtest.h>

#include <string_view>

#include "models/head_ops.hpp"
#include "models/layer_ops.hpp"
#include "models/op_names.hpp"
#include "tests/unit/memory/test_models.hpp"

namespace twinsim {
namespace {

// Korthikanti's setting: GPT-3 175B layer, s = 2048, b = 1, 16-bit activations,
// dropout on, no flash attention (the s x s scores are stored).
constexpr std::int64_t s = 2048, b = 1, h = 12288, a = 96;
constexpr std::int64_t sbh = s * b * h;

Plan korthikanti_plan(int tp, bool sp, Recompute r) {
  Plan p;
  p.tp = tp;
  p.sequence_parallel = sp;
  p.recompute = r;
  p.flash_attention = false;
  return p;
}

std::int64_t layer_bytes(const Plan& p, const ModelSpec& m = test::gpt3_175b()) {
  return saved_bytes(build_layer_ops(m, 0, p, {b, s, Dtype::bf16}));
}

const LayerOp* find(const std::vector<LayerOp>& ops, std::string_view name) {
  for (const LayerOp& op : ops)
    if (op.name == name) return &op;
  return nullptr;
}

std::int64_t saved(const LayerOp& op, std::string_view tensor) {
  for (const SavedTensor& t : op.saved)
    if (t.name == tensor) return t.bytes;
  return 0;
}

// Korthikanti Eq. (1) / Table 2 row "no parallelism": sbh(34 + 5as/h).
TEST(LayerOps, NoParallelismMatchesKorthikantiEq1) {
  EXPECT_EQ(layer_bytes(korthikanti_plan(1, false, Recompute::none)), sbh * 34 + 5 * a * s * s * b);
}

// Table 2 "tensor parallel (baseline)": sbh(10 + 24/t + 5as/(ht)), Eq. (2).
TEST(LayerOps, TensorParallelMatchesKorthikantiEq2) {
  const std::int64_t t = 8;
  EXPECT_EQ(layer_bytes(korthikanti_plan(8, false, Recompute::none)), sbh * 10 + sbh * 24 / t + 5 * a * s * s * b / t);
}

// Table 2 "tensor + sequence parallel": sbh/t (34 + 5as/h), Eq. (3).
TEST(LayerOps, SequenceParallelMatchesKorthikantiEq3) {
  const std::int64_t t = 8;
  EXPECT_EQ(layer_bytes(korthikanti_plan(8, true, Recompute::none)), (sbh * 34 + 5 * a * s * s * b) / t);
}

// Table 2 "tensor parallel + selective recompute": sbh(10 + 24/t); "+ sequence parallel": 34 sbh/t.
TEST(LayerOps, SelectiveRecomputeDropsTheAttentionScores) {
  EXPECT_EQ(layer_bytes(korthikanti_plan(8, false, Recompute::selective)), sbh * 10 + sbh * 24 / 8);
  EXPECT_EQ(layer_bytes(korthikanti_plan(8, true, Recompute::selective)), sbh * 34 / 8);
  EXPECT_EQ(layer_bytes(korthikanti_plan(1, false, Recompute::selective)), sbh * 34);
}

// Table 2 "full recompute": 2sbh (the layer input); with SP it is kept sharded, 2sbh/t.
TEST(LayerOps, FullRecomputeKeepsOnlyTheLayerInput) {
  EXPECT_EQ(layer_bytes(korthikanti_plan(1, false, Recompute::full)), 2 * sbh);
  EXPECT_EQ(layer_bytes(korthikanti_plan(8, false, Recompute::full)), 2 * sbh);
  EXPECT_EQ(layer_bytes(korthikanti_plan(8, true, Recompute::full)), 2 * sbh / 8);
  for (const LayerOp& op : build_layer_ops(test::gpt3_175b(), 0, korthikanti_plan(8, true, Recompute::full),
                                           {b, s, Dtype::bf16}))
    EXPECT_TRUE(op.recomputed) << op.name;
}

// Without dropout the three mask terms (2sbh + as^2b) and the dropout output (2as^2b) go.
TEST(LayerOps, NoDropoutNoMasks) {
  ModelSpec m = test::gpt3_175b();
  m.dropout = 0;
  EXPECT_EQ(layer_bytes(korthikanti_plan(1, false, Recompute::none), m), sbh * 32 + 2 * a * s * s * b);
}

// Flash attention keeps Q, K, V, O and a fp32 logsumexp per head and row (Dao et al.
// 2022, Alg. 2 returns O and L); no s^2 term, and dropout masks are regenerated.
TEST(LayerOps, FlashAttentionStoresNoScores) {
  Plan p = korthikanti_plan(1, false, Recompute::none);
  p.flash_attention = true;
  const auto ops = build_layer_ops(test::gpt3_175b(), 0, p, {b, s, Dtype::bf16});
  EXPECT_EQ(saved_bytes(ops), sbh * 34 + a * s * b * 4);
  ASSERT_NE(find(ops, "attn.core"), nullptr);
  EXPECT_TRUE(find(ops, "attn.core")->flash);
  EXPECT_EQ(saved(*find(ops, "attn.core"), "logsumexp"), a * s * b * 4);
}

// Narayanan et al. 2021, Appendix (and Korthikanti App. A): one GPT layer's forward is
// 24bsh^2 + 4bs^2h FLOPs, the backward twice that.
TEST(LayerOps, GptLayerFlopsMatchNarayanan) {
  for (int tp : {1, 8}) {
    const auto ops = build_layer_ops(test::gpt3_175b(), 0, korthikanti_plan(tp, tp > 1, Recompute::none),
                                     {b, s, Dtype::bf16});
    const double fwd = 24.0 * b * s * h * h + 4.0 * b * s * s * h;
    EXPECT_DOUBLE_EQ(forward_flops(ops), fwd / tp) << "tp=" << tp;
    EXPECT_DOUBLE_EQ(backward_flops(ops), 2 * fwd / tp) << "tp=" << tp;
  }
}

TEST(LayerOps, GemmShapesOfAGptLayer) {
  const auto ops = build_layer_ops(test::gpt3_175b(), 0, korthikanti_plan(8, true, Recompute::none), {b, s, Dtype::bf16});
  const LayerOp* qkv = find(ops, "attn.qkv");
  ASSERT_NE(qkv, nullptr);
  EXPECT_EQ(qkv->kind, OpKind::gemm);
  EXPECT_EQ(qkv->m, s * b);
  EXPECT_EQ(qkv->n, 3 * h / 8);
  EXPECT_EQ(qkv->k, h);
  const LayerOp* fc2 = find(ops, "mlp.fc2");
  ASSERT_NE(fc2, nullptr);
  EXPECT_EQ(fc2->k, 4 * h / 8);
  EXPECT_EQ(fc2->n, h);
  EXPECT_EQ(find(ops, "attn.rope"), nullptr);  // learned positions
}

// Without SP: all-reduce after attn.proj and mlp.fc2 (Shoeybi et al. 2019, Fig. 3 "g"),
// and in backward before attn.qkv and mlp.fc1 ("f"). Message: the whole [s, b, h] tensor.
TEST(LayerOps, TensorParallelAllReducesFollowProjAndFc2) {
  const auto ops = build_layer_ops(test::gpt3_175b(), 0, korthikanti_plan(8, false, Recompute::none),
                                   {b, s, Dtype::bf16});
  for (std::size_t i = 0; i + 1 < ops.size(); ++i) {
    if (ops[i].name == "attn.proj" || ops[i].name == "mlp.fc2") {
      EXPECT_EQ(ops[i + 1].kind, OpKind::collective);
      EXPECT_EQ(ops[i + 1].fwd_comm.kind, CollectiveKind::all_reduce);
      EXPECT_EQ(ops[i + 1].fwd_comm.bytes, 2 * sbh);
    }
    if (ops[i + 1].name == "attn.qkv" || ops[i + 1].name == "mlp.fc1") {
      EXPECT_EQ(ops[i].fwd_comm.kind, CollectiveKind::none);
      EXPECT_EQ(ops[i].bwd_comm.kind, CollectiveKind::all_reduce);
    }
  }
}

// With SP: all-gather before attn.qkv / mlp.fc1, reduce-scatter after attn.proj / mlp.fc2
// (Korthikanti §4.2.2, Fig. 5), reversed in backward.
TEST(LayerOps, SequenceParallelGathersAndScatters) {
  const auto ops = build_layer_ops(test::gpt3_175b(), 0, korthikanti_plan(8, true, Recompute::none),
                                   {b, s, Dtype::bf16});
  int gathers = 0, scatters = 0;
  for (std::size_t i = 0; i + 1 < ops.size(); ++i) {
    if (ops[i + 1].name == "attn.qkv" || ops[i + 1].name == "mlp.fc1") {
      EXPECT_EQ(ops[i].fwd_comm.kind, CollectiveKind::all_gather);
      EXPECT_EQ(ops[i].bwd_comm.kind, CollectiveKind::reduce_scatter);
      ++gathers;
    }
    if (ops[i].name == "attn.proj" || ops[i].name == "mlp.fc2") {
      EXPECT_EQ(ops[i + 1].fwd_comm.kind, CollectiveKind::reduce_scatter);
      ++scatters;
    }
  }
  EXPECT_EQ(gathers, 2);
  EXPECT_EQ(scatters, 2);
}

// With SP the entry keeps its input sharded (Korthikanti Eq. 3's sbh/t for the QKV and FC1
// inputs), so the backward all-gathers it again for the weight gradient: one more all-gather of
// the whole [s, b, h] tensor, 2 sbh bytes in bf16, per TP entry (Korthikanti §4.2.2; Megatron-
// core's LinearWithGradAccumulationAndAsyncCommunication.backward). Without SP the entry keeps
// the whole input: nothing to gather.
TEST(LayerOps, SequenceParallelRegathersTheEntrysInputInBackward) {
  for (bool sp : {false, true}) {
    const auto ops = build_layer_ops(test::gpt3_175b(), 0, korthikanti_plan(8, sp, Recompute::none), {b, s, Dtype::bf16});
    for (const char* name : {"attn.tp_enter", "mlp.tp_enter"}) {
      const LayerOp* enter = find(ops, name);
      ASSERT_NE(enter, nullptr) << name;
      EXPECT_EQ(enter->bwd_regather.kind, sp ? CollectiveKind::all_gather : CollectiveKind::none) << name;
      EXPECT_EQ(enter->bwd_regather.bytes, sp ? 2 * sbh : 0) << name;
      EXPECT_EQ(enter->bwd_regather.group, CommGroup::tp) << name;
    }
    for (const LayerOp& op : ops) {  // the entries only
      if (op.name == "attn.tp_enter" || op.name == "mlp.tp_enter") continue;
      EXPECT_EQ(op.bwd_regather.kind, CollectiveKind::none) << op.name;
    }
  }
}

// fp8 training keeps the GEMM's input in fp8 (TE's LayerNormLinear), and the backward gathers
// what was kept: sbh bytes, 1 an element.
TEST(LayerOps, Fp8RegathersTheFp8Input) {
  MicroBatchShape fp8{b, s, Dtype::bf16};
  fp8.quantized_gemm_inputs = Dtype::fp8;
  const auto ops = build_layer_ops(test::gpt3_175b(), 0, korthikanti_plan(8, true, Recompute::none), fp8);
  EXPECT_EQ(find(ops, "attn.tp_enter")->bwd_regather.bytes, sbh);
  EXPECT_EQ(find(ops, "attn.tp_enter")->fwd_comm.bytes, 2 * sbh);  // the forward gathers bf16
}

// The embedding and the head with SP: the embedding's reduce-scatter gathers its output's
// gradient in backward (2 sbh bytes); the head enters a TP region as a layer's GEMM does
// (gather, then reduce-scatter and the input re-gathered in backward).
TEST(LayerOps, SequenceParallelEmbeddingAndHeadCollectives) {
  const Plan p = korthikanti_plan(8, true, Recompute::none);
  const auto embedding = build_embedding_ops(test::gpt3_175b(), p, {b, s, Dtype::bf16});
  const LayerOp* reduce = find(embedding, "embedding.reduce");
  ASSERT_NE(reduce, nullptr);
  EXPECT_EQ(reduce->fwd_comm.kind, CollectiveKind::reduce_scatter);
  EXPECT_EQ(reduce->bwd_comm.kind, CollectiveKind::all_gather);
  EXPECT_EQ(reduce->bwd_comm.bytes, 2 * sbh);
  const auto head = build_head_ops(test::gpt3_175b(), p, {b, s, Dtype::bf16});
  const LayerOp* enter = find(head, "head.enter");
  ASSERT_NE(enter, nullptr);
  EXPECT_EQ(enter->fwd_comm.kind, CollectiveKind::all_gather);
  EXPECT_EQ(enter->bwd_comm.kind, CollectiveKind::reduce_scatter);
  EXPECT_EQ(enter->bwd_regather.kind, CollectiveKind::all_gather);
  EXPECT_EQ(enter->bwd_regather.bytes, 2 * sbh);
  // without SP: the embedding's all-reduce has no backward, the head's entry all-reduces
  const Plan no_sp = korthikanti_plan(8, false, Recompute::none);
  EXPECT_EQ(find(build_embedding_ops(test::gpt3_175b(), no_sp, {b, s, Dtype::bf16}), "embedding.reduce")->bwd_comm.kind,
            CollectiveKind::none);
  const auto plain_head = build_head_ops(test::gpt3_175b(), no_sp, {b, s, Dtype::bf16});
  const LayerOp* plain = find(plain_head, "head.enter");
  ASSERT_NE(plain, nullptr);
  EXPECT_EQ(plain->bwd_comm.kind, CollectiveKind::all_reduce);
  EXPECT_EQ(plain->bwd_regather.kind, CollectiveKind::none);
}

TEST(LayerOps, NoCollectivesWithoutParallelism) {
  for (const LayerOp& op : build_layer_ops(test::gpt3_175b(), 0, korthikanti_plan(1, false, Recompute::none),
                                           {b, s, Dtype::bf16}))
    EXPECT_NE(op.kind, OpKind::collective) << op.name;
}

// GQA (Llama 2 70B: 64 query heads, 8 KV heads of 128): QKV output 8192 + 2 * 1024,
// K and V saved with 1024 columns.
TEST(LayerOps, GroupedQueryAttentionShrinksKeysAndValues) {
  Plan p;
  const std::int64_t tokens = 4096;
  const auto ops = build_layer_ops(test::llama2_70b(), 0, p, {1, tokens, Dtype::bf16});
  EXPECT_EQ(find(ops, "attn.qkv")->n, 8192 + 2 * 1024);
  EXPECT_EQ(saved(*find(ops, "attn.core"), "k"), tokens * 1024 * 2);
  EXPECT_EQ(saved(*find(ops, "attn.core"), "q"), tokens * 8192 * 2);
  EXPECT_NE(find(ops, "attn.rope"), nullptr);
}

// SwiGLU (Shazeer 2020): gate and up both saved; the down projection keeps its input.
TEST(LayerOps, SwigluKeepsGateAndUp) {
  Plan p;
  p.tp = 2;
  const std::int64_t tokens = 4096, ffn = 11008;
  const auto ops = build_layer_ops(test::llama2_7b(), 0, p, {1, tokens, Dtype::bf16});
  ASSERT_NE(find(ops, "mlp.gate_up"), nullptr);
  EXPECT_EQ(find(ops, "mlp.gate_up")->n, 2 * ffn / 2);
  EXPECT_EQ(saved(*find(ops, "mlp.act"), "gate"), tokens * ffn / 2 * 2);
  EXPECT_EQ(saved(*find(ops, "mlp.act"), "up"), tokens * ffn / 2 * 2);
  EXPECT_EQ(saved(*find(ops, "mlp.down"), "input"), tokens * ffn / 2 * 2);
  EXPECT_EQ(find(ops, "mlp.fc1"), nullptr);
}

// Mixtral: 8 experts, top 2, EP 4 -> 2 local experts, each on average b*s*top_k*ep/E
// tokens (tokens from all 4 EP ranks), so each GPU runs b*s*top_k tokens in all.
TEST(LayerOps, MoeExpertsGetTheirShareOfTokens) {
  Plan p;
  p.ep = 4;
  const std::int64_t tokens = 4096;
  const auto ops = build_layer_ops(test::mixtral_8x7b(), 0, p, {1, tokens, Dtype::bf16});
  const LayerOp* up = find(ops, "moe.experts.gate_up");
  ASSERT_NE(up, nullptr);
  EXPECT_EQ(up->count, 2);
  EXPECT_EQ(up->m, tokens * 2 * 4 / 8);
  EXPECT_DOUBLE_EQ(up->fwd_flops, 2.0 * tokens * 2 * (2 * 14336) * 4096);
  ASSERT_NE(find(ops, "moe.router"), nullptr);
  ASSERT_NE(find(ops, "moe.dispatch"), nullptr);
  EXPECT_EQ(find(ops, "moe.dispatch")->fwd_comm.kind, CollectiveKind::all_to_all);
  EXPECT_EQ(find(ops, "moe.dispatch")->fwd_comm.bytes, tokens * 2 * 4096 * 2);
  EXPECT_EQ(find(ops, "mlp.gate_up"), nullptr);
}

// The combine weights each expert's output rows by their probability: the rows are kept
// for the probabilities' grad, as large as the dispatched input.
TEST(LayerOps, MoeKeepsTheExpertOutputsForTheCombine) {
  const std::int64_t tokens = 4096;
  const auto ops = build_layer_ops(test::mixtral_8x7b(), 0, Plan{}, {1, tokens, Dtype::bf16});
  EXPECT_EQ(saved(*find(ops, "moe.experts.down"), "output"), tokens * 2 * 4096 * 2);
  EXPECT_EQ(saved(*find(ops, "moe.experts.gate_up"), "input"), tokens * 2 * 4096 * 2);
}

TEST(LayerOps, SharedExpertsAndDenseLayers) {
  ModelSpec m = test::mixtral_8x7b();
  m.moe->shared_experts = 2;
  m.moe->dense_layers = 1;
  Plan p;
  EXPECT_NE(find(build_layer_ops(m, 0, p, {1, 128, Dtype::bf16}), "mlp.gate_up"), nullptr);
  const auto moe_ops = build_layer_ops(m, 1, p, {1, 128, Dtype::bf16});
  ASSERT_NE(find(moe_ops, "moe.shared.gate_up"), nullptr);
  EXPECT_EQ(find(moe_ops, "moe.shared.gate_up")->n, 2 * 2 * 14336);
}

// CP splits the sequence: each GPU keeps its s/cp tokens, its queries attend to all s keys.
TEST(LayerOps, ContextParallelSplitsTheSequence) {
  Plan one = korthikanti_plan(1, false, Recompute::none), two = one;
  two.cp = 2;
  two.flash_attention = one.flash_attention = true;
  const auto a1 = build_layer_ops(test::gpt3_175b(), 0, one, {b, s, Dtype::bf16});
  const auto a2 = build_layer_ops(test::gpt3_175b(), 0, two, {b, s, Dtype::bf16});
  EXPECT_EQ(saved_bytes(a2) * 2, saved_bytes(a1));
  EXPECT_DOUBLE_EQ(find(a2, "attn.core")->fwd_flops * 2, find(a1, "attn.core")->fwd_flops);
  ASSERT_NE(find(a2, "attn.cp_ring"), nullptr);
}

}  // namespace
}  // namespace twinsim

namespace twinsim {
namespace {

// torchtitan's op-level checkpointing on a Llama-3-8B-shaped layer (h 4096, 32 query heads,
// 8 KV heads of 128, FFN 14336), one 8192-token sequence in bf16: the layer keeps its input
// (h), Q (4096) and V (1024) from wq and wv, the attention's output (4096, attn.proj's input)
// and its fp32 logsumexp (4 bytes per head and token), w1's output (SwiGLU's gate, 14336)
// and w2's (h): 2 s (4096 + 4096 + 1024 + 4096 + 14336 + 4096) + 4 x 32 s bytes. Recomputed:
// wk (2 s 1024 h of QKV's 2 s 6144 h), wo (2 s h h) and w3 (2 s 14336 h of gate/up's twice that).
TEST(LayerOps, OpLevelCheckpointingKeepsTorchtitansSavedOutputs) {
  const ModelSpec m = test::llama2(32, 4096, 32, 8, 14336);
  Plan p;
  p.recompute = Recompute::selective_op;
  constexpr std::int64_t seq = 8192, h = 4096;
  const std::vector<LayerOp> ops = build_layer_ops(m, 0, p, {1, seq, Dtype::bf16});
  EXPECT_EQ(saved_bytes(ops), 2 * seq * (4096 + 4096 + 1024 + 4096 + 14336 + 4096) + 4 * 32 * seq);
  double recomputed_gemm_flops = 0;
  for (const LayerOp& op : ops)
    if (op.recomputed && op.kind == OpKind::gemm) recomputed_gemm_flops += op.fwd_flops * op.recompute_share;
  EXPECT_NEAR(recomputed_gemm_flops, 2.0 * seq * h * (1024 + 4096 + 14336), 1.0);
  EXPECT_FALSE(find(ops, op_names::kAttnCore)->recomputed);  // the attention's output is saved
  EXPECT_FALSE(find(ops, op_names::kMlpDown)->recomputed);   // w2's too
  EXPECT_TRUE(find(ops, op_names::kAttnNorm)->recomputed);
  EXPECT_TRUE(find(ops, op_names::kAttnProj)->recomputed);
}

// fp8 training (Transformer Engine): each GEMM keeps the fp8 copy of its input it cast for the
// forward, 1 byte an element, where bf16 training keeps the 16-bit tensor. Mixtral, top 2 of 8,
// 4096 tokens: the QKV and the experts' two GEMM inputs halve; the attention output (also flash
// attention's O) and the SwiGLU's gate and up stay 16-bit.
TEST(LayerOps, Fp8TrainingKeepsGemmInputsInFp8) {
  const std::int64_t tokens = 4096;
  MicroBatchShape bf16{1, tokens, Dtype::bf16};
  MicroBatchShape fp8 = bf16;
  fp8.quantized_gemm_inputs = Dtype::fp8;
  const auto a = build_layer_ops(test::mixtral_8x7b(), 0, Plan{}, bf16);
  const auto b = build_layer_ops(test::mixtral_8x7b(), 0, Plan{}, fp8);
  EXPECT_EQ(saved(*find(b, "attn.qkv"), "input"), tokens * 4096);
  EXPECT_EQ(saved(*find(b, "moe.experts.gate_up"), "input"), tokens * 2 * 4096);
  EXPECT_EQ(saved(*find(b, "moe.experts.down"), "input"), tokens * 2 * 14336);
  EXPECT_EQ(saved(*find(b, "attn.proj"), "input"), saved(*find(a, "attn.proj"), "input"));
  EXPECT_EQ(saved_bytes(a) - saved_bytes(b), tokens * 4096 + tokens * 2 * 4096 + tokens * 2 * 14336);
}

}  // namespace
}  // namespace twinsim

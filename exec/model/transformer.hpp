#pragma once
// One pipeline stage of the transformer on one rank: the embedding (first stage), its
// layers, the head and loss (last stage), each piece's weights in its own ParamBlock.
// forward/backward run one micro-batch; the pipeline schedule (exec/train) decides the
// order and moves activations between stages.
#include <memory>
#include <string>
#include <vector>

#include "exec/model/attention_block.hpp"
#include "exec/model/embedding.hpp"
#include "exec/model/gemm_workspace.hpp"
#include "exec/model/loss.hpp"
#include "exec/model/ffn_block.hpp"
#include "exec/model/model_context.hpp"
#include "exec/model/tp_region.hpp"
#include "exec/model/transformer_config.hpp"
#include "exec/model/weights.hpp"

namespace twinsim::exec {

// Called around every use of a block's weights; ZeRO 3 gathers the parameters here and
// ZeRO 2/3 reduce-scatter the grads when the backward is done. Calls nest (a tied
// embedding is used twice on a single stage), so implementations count them.
// pass_done ends every forward and backward of a micro-batch on the stage.
class BlockHooks {
 public:
  virtual ~BlockHooks() = default;
  virtual void acquire(ParamBlock& block, bool backward) = 0;
  virtual void release(ParamBlock& block, bool backward) = 0;
  virtual void pass_done(bool /*backward*/) {}
};

struct LayerSaved {
  Tensor input;  // the layer's input rows: all that full recompute keeps
  Tensor mid;    // the attention half's output, the MLP half's input
  AttentionSaved attn;
  FfnSaved mlp;  // the dense MLP or the experts
  bool on_host = false;  // activation offload: waiting in CPU memory for the backward
  std::vector<Tensor*> tensors() {
    std::vector<Tensor*> all{&input, &mid};
    for (Tensor* t : attn.tensors()) all.push_back(t);
    for (Tensor* t : mlp.tensors()) all.push_back(t);
    return all;
  }
};

// Everything one micro-batch keeps between its forward and its backward on this stage.
struct MicroBatchState {
  std::vector<int> tokens;   // [micro_batch * seq_len], first stage
  std::vector<int> targets;  // next tokens, last stage
  std::vector<LayerSaved> layers;
  std::vector<int> offloading;  // activation offload: layers whose copy to CPU memory is under way
  HeadSaved head;
  float loss = 0;  // last stage: mean cross-entropy of this micro-batch
};

// The parameter blocks a stage holds, named and in the order TransformerStage::blocks()
// returns them, without allocating anything (for up-front memory estimates).
struct BlockSpecs {
  std::string name;
  std::vector<ParamSpec> specs;
};
std::vector<BlockSpecs> stage_block_specs(const TransformerConfig& c);

class TransformerStage {
 public:
  // pad_multiple: every flat block is padded to a multiple of it (the DP degree for ZeRO);
  // expert_pad_multiple > 0: the layers' routed experts get a segment of their own padded
  // to it (the expert-data-parallel degree; flat_layout)
  explicit TransformerStage(TransformerConfig config, int pad_multiple = 1, int expert_pad_multiple = 0);
  TransformerStage(const TransformerStage&) = delete;
  TransformerStage& operator=(const TransformerStage&) = delete;

  const TransformerConfig& config() const { return c_; }
  void initialize();  // plan-independent initial weights
  std::vector<ParamBlock*> blocks();
  // The word embedding (first stage) or its tied copy (last stage): the blocks whose grads
  // are summed over the embedding group when pp > 1. Null when the stage has neither.
  ParamBlock* tied_embedding_block();
  void set_hooks(BlockHooks* hooks) { hooks_ = hooks; }

  // First stage reads st.tokens, later ones take `input` [local_tokens, hidden]. Returns
  // the output rows, or on the last stage nothing (the loss goes to st.loss).
  Tensor forward(const ModelContext& ctx, Tensor input, MicroBatchState& st);
  // Last stage starts from dloss, others from the grad of their output. Returns the
  // grad of the stage input (nothing on the first stage).
  Tensor backward(const ModelContext& ctx, Tensor doutput, float dloss, MicroBatchState& st);

 private:
  TransformerConfig c_;
  std::unique_ptr<ParamBlock> word_, position_, head_norm_, output_;
  std::vector<std::unique_ptr<ParamBlock>> layer_params_;
  std::vector<AttentionBlock> attention_;
  std::vector<FfnBlock> mlp_;
  std::unique_ptr<Embedding> embedding_;
  std::unique_ptr<Head> head_;
  BlockHooks* hooks_ = nullptr;
  GatherBuffer gather_buffer_;  // sequence parallelism's all-gathers (tp_region.hpp)
  GemmWorkspace gemm_workspace_;  // the GEMM's fp32 tiles for 16-bit operands

  ModelContext context(const ModelContext& ctx);  // ctx with this stage's gather buffer

  Tensor layer_forward(const ModelContext& ctx, int i, Tensor x, LayerSaved& s, Pass pass);
  Tensor layer_backward(const ModelContext& ctx, int i, Tensor dy, LayerSaved& s);
  // Activation offload (c_.offload_layers): the copies out finished by `before_layer`
  // (a layer's is waited for by the layer after next), and a layer brought back with the one
  // before it (the backward's double buffer).
  void finish_offloads(const ModelContext& ctx, MicroBatchState& st, int before_layer);
  void reload(const ModelContext& ctx, MicroBatchState& st, int layer);
  void acquire(ParamBlock* b, bool backward) { if (hooks_ && b) hooks_->acquire(*b, backward); }
  void release(ParamBlock* b, bool backward) { if (hooks_ && b) hooks_->release(*b, backward); }
  void pass_done(bool backward) { if (hooks_) hooks_->pass_done(backward); }
};

}  // namespace twinsim::exec

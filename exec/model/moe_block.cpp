#include "exec/model/moe_block.hpp"

#include <algorithm>
#include <cmath>
#include <string>

#include "exec/model/host_view.hpp"
#include "exec/model/tp_region.hpp"
#include "models/op_names.hpp"

namespace twinsim::exec {

using kernels::from_float;
using kernels::to_float;
constexpr MemCategory kAct = MemCategory::activations;

std::vector<Tensor*> MoeSaved::tensors() {
  return {&norm.mean, &norm.rstd, &normed,     &probs,      &permuted,   &up1,
          &up2,       &act,       &expert_out, &shared_up1, &shared_up2, &shared_act};
}

void MoeSaved::release_all() {
  for (Tensor* t : tensors()) t->release();
  row_token.clear();
  expert_rows.clear();
  local_rows.clear();
  recv_counts.clear();
}

namespace {

// One FFN's matrices under `prefix` ("layer1.mlp.experts.3."), Megatron's initialisation.
void add_ffn_specs(std::vector<ParamSpec>& s, const std::string& prefix, const TransformerConfig& c, std::int64_t width) {
  const std::int64_t h = c.hidden();
  const float out_std = c.init_std / std::sqrt(2.0f * static_cast<float>(c.model.layers));  // as mlp_block.cpp
  if (c.swiglu()) {
    s.push_back({prefix + "gate.weight", width, h, Shard::rows, Init::normal, c.init_std, false, true});
    s.push_back({prefix + "up.weight", width, h, Shard::rows, Init::normal, c.init_std, false, true});
    s.push_back({prefix + "down.weight", h, width, Shard::cols, Init::normal, out_std, false, true});
  } else {
    s.push_back({prefix + "fc1.weight", width, h, Shard::rows, Init::normal, c.init_std, false, true});
    s.push_back({prefix + "fc2.weight", h, width, Shard::cols, Init::normal, out_std, false, true});
  }
}

std::string layer_prefix(int layer) { return "layer" + std::to_string(layer) + ".mlp."; }

// Expert parallelism: where each source rank's rows start among those this rank's experts
// received (source by source), and their end.
std::vector<std::size_t> source_offsets(const MoeSaved& s, int ranks) {
  const int local = static_cast<int>(s.recv_counts.size()) / ranks;
  std::vector<std::size_t> at(ranks + 1, 0);
  for (int src = 0; src < ranks; ++src) {
    at[src + 1] = at[src];
    for (int j = 0; j < local; ++j) at[src + 1] += static_cast<std::size_t>(s.recv_counts[src * local + j]);
  }
  return at;
}

// run(w[g], first row, rows) for each group g whose rows [bounds[g], bounds[g + 1]) are not empty.
template <class W, class Run>
void for_each_group(const std::vector<int>& bounds, const std::vector<W>& w, Run&& run) {
  for (std::size_t g = 0; g + 1 < bounds.size(); ++g)
    if (bounds[g + 1] > bounds[g]) run(w[g], bounds[g], bounds[g + 1] - bounds[g]);
}

}  // namespace

std::vector<ParamSpec> moe_param_specs(const TransformerConfig& c, int layer) {
  const MoeSpec& moe = *c.model.moe;
  const std::string p = layer_prefix(layer);
  const std::int64_t h = c.hidden();
  std::vector<ParamSpec> s;
  s.push_back({p + "norm.weight", 1, h, Shard::none, Init::ones, 0, false, false});
  if (!c.rmsnorm()) s.push_back({p + "norm.bias", 1, h, Shard::none, Init::zeros, 0, false, false});
  s.push_back({p + "router.weight", moe.experts, h, Shard::none, Init::normal, c.init_std, false, true});
  for (int e = c.first_expert(); e < c.first_expert() + c.local_experts(); ++e) {  // this rank's
    const std::size_t first = s.size();
    add_ffn_specs(s, p + "experts." + std::to_string(e) + ".", c, moe.expert_ffn_hidden);
    for (std::size_t i = first; i < s.size(); ++i) {
      s[i].expert = true;
      s[i].shard_ways = c.etp();  // split over the expert TP group (weights.hpp)
    }
  }
  if (moe.shared_experts > 0) add_ffn_specs(s, p + "shared.", c, moe.shared_experts * moe.shared_width());
  return s;
}

MoeBlock::MoeBlock(const TransformerConfig& c, int layer, ParamBlock& params) : c_(c), layer_(layer), p_(params) {
  const std::string p = layer_prefix(layer);
  const std::string up = c.swiglu() ? "gate" : "fc1", down = c.swiglu() ? "down" : "fc2";
  const auto ffn = [&](const std::string& prefix) {
    Ffn f;
    f.w1 = p_.index_of(prefix + up + ".weight");
    f.w2 = p_.index_of(prefix + down + ".weight");
    if (c.swiglu()) f.w3 = p_.index_of(prefix + "up.weight");
    return f;
  };
  norm_w_ = p_.index_of(p + "norm.weight");
  if (!c.rmsnorm()) norm_b_ = p_.index_of(p + "norm.bias");
  router_w_ = p_.index_of(p + "router.weight");
  for (int e = c.first_expert(); e < c.first_expert() + c.local_experts(); ++e)
    experts_.push_back(ffn(p + "experts." + std::to_string(e) + "."));
  if (c.model.moe->shared_experts > 0) shared_ = ffn(p + "shared.");
}

op_names::FfnOpNames MoeBlock::expert_ops() const {
  return op_names::ffn_op_names(op_names::Ffn::routed_experts, c_.swiglu());
}

op_names::FfnOpNames MoeBlock::shared_ops() const {
  return op_names::ffn_op_names(op_names::Ffn::shared_experts, c_.swiglu());
}

// The rows this rank's experts run: local expert g's are [bounds[g], bounds[g + 1]).
const std::vector<int>& MoeBlock::local_bounds(const ModelContext& ctx, const MoeSaved& s) const {
  return ctx.ep_size() > 1 ? s.local_rows : s.expert_rows;
}

int MoeBlock::local_expert_width() const { return static_cast<int>(c_.model.moe->expert_ffn_hidden) / c_.etp(); }

int MoeBlock::local_shared_width() const {
  const MoeSpec& moe = *c_.model.moe;
  return static_cast<int>(moe.shared_experts * moe.shared_width()) / c_.tp;
}

void MoeBlock::route(MoeSaved& s) const {
  const int t = c_.tokens(), experts = c_.model.moe->experts, top_k = c_.model.moe->top_k;
  const int slice = t / c_.expert_slices(), begin = c_.expert_slice() * slice;  // the tokens this rank routes
  // on the host (staged where the host cannot read the device): the ranks' routing tables
  HostView<const float> staged(current_backend(), s.probs.data(), s.probs.size());
  const float* probs = staged.get();
  std::vector<std::vector<int>> tokens_of(experts);
  std::vector<int> order(experts);
  for (int i = begin; i < begin + slice; ++i) {
    const float* p = probs + static_cast<std::size_t>(i) * experts;
    for (int e = 0; e < experts; ++e) order[e] = e;
    // the top_k largest, ties to the lower index (torch.topk on a CPU tensor is not
    // specified on ties; the numpy reference breaks them the same way)
    std::partial_sort(order.begin(), order.begin() + top_k, order.end(),
                      [p](int a, int b) { return p[a] > p[b] || (p[a] == p[b] && a < b); });
    for (int j = 0; j < top_k; ++j) tokens_of[order[j]].push_back(i);
  }
  s.row_token.clear();
  s.expert_rows.assign(1, 0);
  for (const std::vector<int>& rows : tokens_of) {
    s.row_token.insert(s.row_token.end(), rows.begin(), rows.end());
    s.expert_rows.push_back(static_cast<int>(s.row_token.size()));
  }
}

// How many rows each rank sends each other, per expert: an all-to-all of the counts
// (MoeSpec::counts_exchange_bytes prices it), before any row moves, as Megatron-core's
// alltoall dispatcher exchanges them before the tokens.
void MoeBlock::exchange_counts(const ModelContext& ctx, MoeSaved& s, Pass pass) const {
  auto op = ctx.op(layer_, op_names::kMoeCounts, pass);  // timed apart from the rows' dispatch
  Communicator& group = *ctx.ep;
  const int ranks = group.size(), local = c_.local_experts();
  std::vector<float> sent(static_cast<std::size_t>(ranks) * local), got(sent.size());
  for (int d = 0; d < ranks; ++d)
    for (int j = 0; j < local; ++j)
      sent[d * local + j] = static_cast<float>(s.expert_rows[d * local + j + 1] - s.expert_rows[d * local + j]);
  group.all_to_all(sent.data(), got.data(), static_cast<std::size_t>(local));
  s.recv_counts.assign(got.begin(), got.end());
  s.local_rows.assign(1, 0);
  for (int j = 0; j < local; ++j) {
    int rows_j = 0;
    for (int src = 0; src < ranks; ++src) rows_j += s.recv_counts[src * local + j];
    s.local_rows.push_back(s.local_rows.back() + rows_j);
  }
}

// Rank d of the EP group holds experts [d L, (d + 1) L), L = local experts. Each pair of
// ranks exchanges exactly its rows, pairwise (rank r sends to r + k while it receives from
// r - k, k = 1 .. ranks - 1, as NCCL runs an all-to-all), in the layout the forward's count
// exchange set (the backward's crossings reuse it). The rows arrive source by source; the
// experts take them by local expert, then by source.
template <class T>
Tensor MoeBlock::to_owners(const ModelContext& ctx, const T* rows, const MoeSaved& s) const {
  Communicator& group = *ctx.ep;
  const int ranks = group.size(), me = group.rank(), local = c_.local_experts(), h = c_.hidden();
  const std::vector<std::size_t> at = source_offsets(s, ranks);  // rows, source by source
  const auto hh = static_cast<std::size_t>(h);
  Tensor recv = Tensor::uninitialized_of<T>(kAct, at[ranks] * hh);
  for (int k = 0; k < ranks; ++k) {
    const int to = (me + k) % ranks, from = (me - k + ranks) % ranks;
    const std::size_t first = s.expert_rows[to * local], count = s.expert_rows[(to + 1) * local] - first;
    T* into = recv.as<T>() + at[from] * hh;
    if (k == 0) ctx.device().copy_on_device(into, rows + first * hh, count * hh * sizeof(T));
    else group.send_recv(rows + first * hh, count * hh, to, into, (at[from + 1] - at[from]) * hh, from);
  }
  Tensor out = Tensor::uninitialized_of<T>(kAct, static_cast<std::size_t>(s.local_rows.back()) * hh);
  std::vector<std::size_t> taken(at.begin(), at.end() - 1);  // next row of each source's part
  T* next = out.as<T>();
  for (int j = 0; j < local; ++j)
    for (int src = 0; src < ranks; ++src) {
      const std::size_t count = static_cast<std::size_t>(s.recv_counts[src * local + j]);
      ctx.device().copy_on_device(next, recv.as<T>() + taken[src] * hh, count * hh * sizeof(T));
      next += count * hh;
      taken[src] += count;
    }
  return out;
}

// The reverse of to_owners: rows laid out by local expert and source go back to their
// sources, where they land in global expert order (s.expert_rows).
template <class T>
Tensor MoeBlock::from_owners(const ModelContext& ctx, const T* local_rows, const MoeSaved& s) const {
  Communicator& group = *ctx.ep;
  const int ranks = group.size(), me = group.rank(), local = c_.local_experts(), h = c_.hidden();
  const std::vector<std::size_t> at = source_offsets(s, ranks);
  const auto hh = static_cast<std::size_t>(h);
  Tensor send = Tensor::uninitialized_of<T>(kAct, at[ranks] * hh);  // source by source
  std::vector<std::size_t> put(at.begin(), at.end() - 1);
  const T* from_row = local_rows;
  for (int j = 0; j < local; ++j)
    for (int src = 0; src < ranks; ++src) {
      const std::size_t count = static_cast<std::size_t>(s.recv_counts[src * local + j]);
      ctx.device().copy_on_device(send.as<T>() + put[src] * hh, from_row, count * hh * sizeof(T));
      from_row += count * hh;
      put[src] += count;
    }
  Tensor out = Tensor::uninitialized_of<T>(kAct, static_cast<std::size_t>(s.expert_rows.back()) * hh);
  for (int k = 0; k < ranks; ++k) {
    const int to = (me + k) % ranks, from = (me - k + ranks) % ranks;  // back to `to`, ours from `from`
    const std::size_t first = s.expert_rows[from * local], count = s.expert_rows[(from + 1) * local] - first;
    const T* part = send.as<T>() + at[to] * hh;
    if (k == 0) ctx.device().copy_on_device(out.as<T>() + first * hh, part, count * hh * sizeof(T));
    else group.send_recv(part, (at[to + 1] - at[to]) * hh, to, out.as<T>() + first * hh, count * hh, from);
  }
  return out;
}

void MoeBlock::forward(const ModelContext& ctx, const Tensor& x, Tensor& y, MoeSaved& s, Pass pass) const {
  with_storage(c_.storage, [&]<class T>() { forward_t(ctx, x.as<T>(), y.as<T>(), s, pass); });
}

template <class T>
void MoeBlock::forward_t(const ModelContext& ctx, const T* x, T* y, MoeSaved& s, Pass pass) const {
  const int t = c_.tokens(), h = c_.hidden();
  s.normed = Tensor::uninitialized_of<T>(kAct, static_cast<std::size_t>(t) * h);
  {
    auto op = ctx.op(layer_, op_names::kMlpNorm, pass);
    norm_forward(ctx, c_, x, p_.param<T>(norm_w_), p_.param<T>(norm_b_), s.normed.as<T>(), s.norm, t);
  }
  router_forward<T>(ctx, s, pass);
  dispatch<T>(ctx, s, pass);
  experts_up<T>(ctx, s, pass);
  // every output row is a (partial, under TP) sum: the combine adds p_e x expert rows
  Tensor partial = Tensor::zeros_of<T>(kAct, static_cast<std::size_t>(t) * h);
  experts_down_and_combine(ctx, s, partial.as<T>(), pass);
  if (shared_.w1 >= 0) shared_forward(ctx, s, partial.as<T>(), pass);
  if (!s.for_backward) {
    s.normed.release();
    s.probs.release();
  }
  if (ctx.tp_size() > 1) {
    auto op = ctx.op(layer_, op_names::kMlpTpExit, pass);
    all_reduce_tp(ctx, partial.as<T>(), partial.size());
  }
  auto op = ctx.op(layer_, op_names::kMlpResidual, pass);
  ctx.kernels().residual_forward(x, partial.as<T>(), nullptr, y, t, h);
}

int MoeBlock::routed_rows() const { return c_.tokens() / c_.expert_slices() * c_.model.moe->top_k; }

// The router: logits = normed W_r^T, then the fp32 softmax (as Megatron's router) and the
// top_k routing on the host.
template <class T>
void MoeBlock::router_forward(const ModelContext& ctx, MoeSaved& s, Pass pass) const {
  const int t = c_.tokens(), h = c_.hidden(), experts = c_.model.moe->experts;
  auto op = ctx.op(layer_, op_names::kMoeRouter, pass);
  Tensor logits = Tensor::uninitialized_of<T>(kAct, static_cast<std::size_t>(t) * experts);
  ctx.kernels().linear_forward(s.normed.as<T>(), p_.param<T>(router_w_), nullptr, logits.as<T>(), t, h, experts);
  s.probs = Tensor::uninitialized(kAct, static_cast<std::size_t>(t) * experts);
  HostView<const T> logits_host(ctx.device(), logits.as<T>(), logits.size());
  HostView<float> probs(ctx.device(), s.probs.data(), s.probs.size());
  for (int i = 0; i < t; ++i) {
    const T* l = logits_host.get() + static_cast<std::size_t>(i) * experts;
    float* p = probs.get() + static_cast<std::size_t>(i) * experts;
    float top = -INFINITY, sum = 0;
    for (int e = 0; e < experts; ++e) top = std::max(top, to_float(l[e]));
    for (int e = 0; e < experts; ++e) sum += p[e] = std::exp(to_float(l[e]) - top);
    for (int e = 0; e < experts; ++e) p[e] /= sum;
  }
  probs.store();
  route(s);
}

// Each routed row's copy of its token's normed input, experts side by side in order.
template <class T>
void MoeBlock::permute(const ModelContext& ctx, const MoeSaved& s, T* into) const {
  const auto hh = static_cast<std::size_t>(c_.hidden());
  const T* n = s.normed.as<T>();
  for (int r = 0; r < routed_rows(); ++r)
    ctx.device().copy_on_device(into + r * hh, n + static_cast<std::size_t>(s.row_token[r]) * hh, hh * sizeof(T));
}

// The rows this rank's experts run, into s.permuted: under expert parallelism the counts,
// then the rows to the ranks holding their experts; otherwise a buffer that experts_up
// fills (the permute timed with the experts' up projection).
template <class T>
void MoeBlock::dispatch(const ModelContext& ctx, MoeSaved& s, Pass pass) const {
  const std::size_t size = static_cast<std::size_t>(routed_rows()) * c_.hidden();
  if (ctx.ep_size() <= 1) {
    s.permuted = Tensor::uninitialized_of<T>(kAct, size);
    return;
  }
  exchange_counts(ctx, s, pass);
  auto op = ctx.op(layer_, op_names::kMoeDispatch, pass);
  Tensor outgoing = Tensor::uninitialized_of<T>(kAct, size);
  permute(ctx, s, outgoing.as<T>());
  s.permuted = to_owners(ctx, outgoing.as<T>(), s);
}

// The local experts' up projections (SwiGLU's two) and activation on their rows.
template <class T>
void MoeBlock::experts_up(const ModelContext& ctx, MoeSaved& s, Pass pass) const {
  const int h = c_.hidden(), f = local_expert_width();
  const bool swiglu = c_.swiglu(), ep = ctx.ep_size() > 1;
  const std::vector<int>& bounds = local_bounds(ctx, s);
  const std::size_t inner = static_cast<std::size_t>(bounds.back()) * f;
  s.up1 = Tensor::uninitialized_of<T>(kAct, inner);
  if (swiglu) s.up2 = Tensor::uninitialized_of<T>(kAct, inner);
  {
    auto op = ctx.op(layer_, expert_ops().up, pass);
    if (!ep) permute(ctx, s, s.permuted.as<T>());
    for_each_group(bounds, experts_, [&](const Ffn& e, int first, int rows) {
      const T* in = s.permuted.as<T>() + static_cast<std::size_t>(first) * h;
      const std::size_t at = static_cast<std::size_t>(first) * f;
      ctx.kernels().linear_forward(in, p_.param<T>(e.w1), nullptr, s.up1.as<T>() + at, rows, h, f);
      if (swiglu) ctx.kernels().linear_forward(in, p_.param<T>(e.w3), nullptr, s.up2.as<T>() + at, rows, h, f);
    });
  }
  if (!s.for_backward) s.permuted.release();
  s.act = Tensor::uninitialized_of<T>(kAct, inner);
  {
    auto op = ctx.op(layer_, expert_ops().act, pass);
    if (swiglu) ctx.kernels().swiglu_forward(s.up1.as<T>(), s.up2.as<T>(), s.act.as<T>(), static_cast<long>(inner));
    else ctx.kernels().gelu_forward(s.up1.as<T>(), s.act.as<T>(), static_cast<long>(inner));
  }
  if (!s.for_backward) {
    s.up1.release();
    s.up2.release();
  }
}

// The local experts' down projections, then their rows weighted back onto their tokens in
// `partial` (under expert parallelism after the combine brings them home).
template <class T>
void MoeBlock::experts_down_and_combine(const ModelContext& ctx, MoeSaved& s, T* partial, Pass pass) const {
  const int h = c_.hidden(), f = local_expert_width();
  const bool ep = ctx.ep_size() > 1;
  const std::vector<int>& bounds = local_bounds(ctx, s);
  Tensor out = Tensor::uninitialized_of<T>(kAct, static_cast<std::size_t>(bounds.back()) * h);
  {
    auto op = ctx.op(layer_, expert_ops().down, pass);
    for_each_group(bounds, experts_, [&](const Ffn& e, int first, int rows) {
      ctx.kernels().linear_forward(s.act.as<T>() + static_cast<std::size_t>(first) * f, p_.param<T>(e.w2), nullptr,
                                   out.as<T>() + static_cast<std::size_t>(first) * h, rows, f, h);
    });
    if (!ep) {
      s.expert_out = std::move(out);
      unpermute(ctx, s, partial);
    }
  }
  if (ep) {  // the outputs come back to their tokens' ranks
    auto op = ctx.op(layer_, op_names::kMoeCombine, pass);
    s.expert_out = from_owners(ctx, out.as<T>(), s);
    out.release();
    unpermute(ctx, s, partial);
  }
  if (!s.for_backward) {
    s.act.release();
    s.expert_out.release();
  }
}

// partial[token] += p_e x expert e's row, expert by expert, on the host (staged where it must be).
template <class T>
void MoeBlock::unpermute(const ModelContext& ctx, const MoeSaved& s, T* partial) const {
  const int h = c_.hidden(), experts = c_.model.moe->experts;
  HostView<const float> probs(ctx.device(), s.probs.data(), s.probs.size());
  HostView<const T> outs(ctx.device(), s.expert_out.as<T>(), s.expert_out.size());
  HostView<T> sums(ctx.device(), partial, static_cast<std::size_t>(c_.tokens()) * h);
  for (int e = 0; e < experts; ++e)
    for (int r = s.expert_rows[e]; r < s.expert_rows[e + 1]; ++r) {
      const int i = s.row_token[r];
      const float w = probs.get()[static_cast<std::size_t>(i) * experts + e];
      const T* out = outs.get() + static_cast<std::size_t>(r) * h;
      T* dst = sums.get() + static_cast<std::size_t>(i) * h;
      for (int j = 0; j < h; ++j) dst[j] = from_float<T>(to_float(dst[j]) + w * to_float(out[j]));
    }
  sums.store();
}

// The shared experts: one FFN every token visits, its down projection added into `partial`.
template <class T>
void MoeBlock::shared_forward(const ModelContext& ctx, MoeSaved& s, T* partial, Pass pass) const {
  const int t = c_.tokens(), h = c_.hidden(), fs = local_shared_width();
  const bool swiglu = c_.swiglu();
  const T* n = s.normed.as<T>();
  const std::size_t shared_inner = static_cast<std::size_t>(t) * fs;
  s.shared_up1 = Tensor::uninitialized_of<T>(kAct, shared_inner);
  if (swiglu) s.shared_up2 = Tensor::uninitialized_of<T>(kAct, shared_inner);
  {
    auto op = ctx.op(layer_, shared_ops().up, pass);
    ctx.kernels().linear_forward(n, p_.param<T>(shared_.w1), nullptr, s.shared_up1.as<T>(), t, h, fs);
    if (swiglu) ctx.kernels().linear_forward(n, p_.param<T>(shared_.w3), nullptr, s.shared_up2.as<T>(), t, h, fs);
  }
  s.shared_act = Tensor::uninitialized_of<T>(kAct, shared_inner);
  {
    auto op = ctx.op(layer_, shared_ops().act, pass);
    if (swiglu)
      ctx.kernels().swiglu_forward(s.shared_up1.as<T>(), s.shared_up2.as<T>(), s.shared_act.as<T>(),
                                   static_cast<long>(shared_inner));
    else ctx.kernels().gelu_forward(s.shared_up1.as<T>(), s.shared_act.as<T>(), static_cast<long>(shared_inner));
  }
  if (!s.for_backward) {
    s.shared_up1.release();
    s.shared_up2.release();
  }
  auto op = ctx.op(layer_, shared_ops().down, pass);
  ctx.kernels().gemm_forward(s.shared_act.as<T>(), p_.param<T>(shared_.w2), partial, t, h, fs, false, true, 1.0f, 1.0f);
  if (!s.for_backward) s.shared_act.release();
}

Tensor MoeBlock::backward(const ModelContext& ctx, const Tensor& dy, const Tensor& x, MoeSaved& s) const {
  return with_storage(c_.storage, [&]<class T>() { return backward_t(ctx, dy.as<T>(), x.as<T>(), s); });
}

// The backward of FFNs side by side in one set of buffers: group g (an expert, or the
// shared experts alone) owns rows [bounds[g], bounds[g + 1]) and the matrices w[g]. Op by
// op over all groups, as the forward ran them (mlp_block.cpp's order: down dgrad and
// wgrad, the activation, up dgrad and wgrad), freeing each tensor after its last user:
// dout (when owned) and act after down, dact, up1 and up2 after the activation; din
// [rows, hidden] is allocated for the up dgrad that writes it.
template <class T>
void MoeBlock::ffn_backward(const ModelContext& ctx, const op_names::FfnOpNames& ops, const std::vector<int>& bounds,
                            const std::vector<Ffn>& w, int f, const T* dout, Tensor* owned_dout, const T* in,
                            FfnSaved& saved, Tensor& din) const {
  const int h = c_.hidden();
  const std::size_t inner = static_cast<std::size_t>(bounds.back()) * f;
  const auto each = [&](auto&& run) { for_each_group(bounds, w, run); };
  const auto rows_h = [h](int first) { return static_cast<std::size_t>(first) * h; };
  const auto rows_f = [f](int first) { return static_cast<std::size_t>(first) * f; };
  Tensor dact = Tensor::uninitialized_of<T>(kAct, inner);
  {
    auto op = ctx.op(layer_, ops.down, Pass::bwd_dgrad);
    each([&](const Ffn& e, int first, int rows) {
      ctx.kernels().linear_backward_input(dout + rows_h(first), p_.param<T>(e.w2), dact.as<T>() + rows_f(first),
                                          rows, f, h);
    });
  }
  {
    auto op = ctx.op(layer_, ops.down, Pass::bwd_wgrad);
    each([&](const Ffn& e, int first, int rows) {
      ctx.kernels().linear_backward_weight(dout + rows_h(first), saved.act->as<T>() + rows_f(first),
                                           p_.grad<T>(e.w2), rows, f, h, true);
    });
  }
  if (owned_dout) owned_dout->release();
  saved.act->release();
  Tensor d1 = Tensor::uninitialized_of<T>(kAct, inner), d3;
  {
    auto op = ctx.op(layer_, ops.act, Pass::bwd_dgrad);
    if (c_.swiglu()) {
      d3 = Tensor::uninitialized_of<T>(kAct, inner);
      ctx.kernels().swiglu_backward(dact.as<T>(), saved.up1->as<T>(), saved.up2->as<T>(), d1.as<T>(), d3.as<T>(),
                                    static_cast<long>(inner));
    } else {
      ctx.kernels().gelu_backward(dact.as<T>(), saved.up1->as<T>(), d1.as<T>(), static_cast<long>(inner));
    }
  }
  dact.release();
  saved.up1->release();
  saved.up2->release();
  din = Tensor::uninitialized_of<T>(kAct, static_cast<std::size_t>(bounds.back()) * h);
  {
    auto op = ctx.op(layer_, ops.up, Pass::bwd_dgrad);
    each([&](const Ffn& e, int first, int rows) {  // din = d1 W1 (+ d3 W3)
      T* out = din.as<T>() + rows_h(first);
      ctx.kernels().gemm_forward(d1.as<T>() + rows_f(first), p_.param<T>(e.w1), out, rows, h, f, false, false, 1.0f,
                                 0.0f);
      if (e.w3 >= 0) ctx.kernels().gemm_forward(d3.as<T>() + rows_f(first), p_.param<T>(e.w3), out, rows, h, f,
                                                false, false, 1.0f, 1.0f);
    });
  }
  auto op = ctx.op(layer_, ops.up, Pass::bwd_wgrad);
  each([&](const Ffn& e, int first, int rows) {
    ctx.kernels().linear_backward_weight(d1.as<T>() + rows_f(first), in + rows_h(first), p_.grad<T>(e.w1), rows, h,
                                         f, true);
    if (e.w3 >= 0)
      ctx.kernels().linear_backward_weight(d3.as<T>() + rows_f(first), in + rows_h(first), p_.grad<T>(e.w3), rows, h,
                                           f, true);
  });
}

template <class T>
Tensor MoeBlock::backward_t(const ModelContext& ctx, const T* dy, const T* x, MoeSaved& s) const {
  const int t = c_.tokens(), h = c_.hidden();
  // dy is the grad of the (partial) expert and shared outputs too: the exit all-reduce's
  // backward is the identity
  Tensor dn;  // the grad of the norm output: the shared experts' input grad, or zeros
  if (shared_.w1 >= 0) {
    FfnSaved shared{&s.shared_up1, &s.shared_up2, &s.shared_act};
    ffn_backward(ctx, shared_ops(), {0, t}, {shared_}, local_shared_width(), dy, nullptr, s.normed.as<T>(), shared, dn);
  } else {
    dn = Tensor::zeros_of<T>(kAct, static_cast<std::size_t>(t) * h);
  }
  Tensor dprobs(kAct, static_cast<std::size_t>(t) * c_.model.moe->experts);  // fp32, zero where not routed
  Tensor dexpert_out = combine_backward(ctx, dy, s, dprobs);
  const bool ep = ctx.ep_size() > 1;
  if (ep) {  // the output grads go to the ranks whose experts made the rows
    auto op = ctx.op(layer_, op_names::kMoeCombine, Pass::bwd_dgrad);
    Tensor local = to_owners(ctx, dexpert_out.as<T>(), s);
    dexpert_out = std::move(local);
  }
  Tensor dpermuted;
  FfnSaved routed_saved{&s.up1, &s.up2, &s.act};
  ffn_backward(ctx, expert_ops(), local_bounds(ctx, s), experts_, local_expert_width(), dexpert_out.as<T>(),
               &dexpert_out, s.permuted.as<T>(), routed_saved, dpermuted);
  s.permuted.release();
  if (ep) {  // the input grads go back to their tokens' ranks
    auto op = ctx.op(layer_, op_names::kMoeDispatch, Pass::bwd_dgrad);
    Tensor back = from_owners(ctx, dpermuted.as<T>(), s);
    dpermuted = std::move(back);
  }
  permute_backward(ctx, s, dpermuted.as<T>(), dn.as<T>());
  dpermuted.release();
  if (ctx.tp_size() > 1) {  // partial sums of the experts' input grads
    auto op = ctx.op(layer_, op_names::kMlpTpEnter, Pass::bwd_dgrad);
    all_reduce_tp(ctx, dn.as<T>(), dn.size());
  }
  router_backward(ctx, s, dprobs, dn.as<T>());
  Tensor dx = Tensor::uninitialized_of<T>(kAct, static_cast<std::size_t>(t) * h);
  {
    auto op = ctx.op(layer_, op_names::kMlpNorm, Pass::bwd_dgrad);
    norm_backward(ctx, c_, dn.as<T>(), x, p_.param<T>(norm_w_), s.norm, dx.as<T>(), p_.grad<T>(norm_w_),
                  p_.grad<T>(norm_b_), t);
    ctx.kernels().residual_forward(dx.as<T>(), dy, nullptr, dx.as<T>(), t, h);  // + the residual path's grad
  }
  s.release_all();
  return dx;
}

// The combine's backward: d(expert row) = p_e dy[token] (returned, rows as the routing's),
// dp_e = <dy[token], expert row> into dprobs (summed over TP: the rows are partial).
template <class T>
Tensor MoeBlock::combine_backward(const ModelContext& ctx, const T* dy, MoeSaved& s, Tensor& dprobs) const {
  const int t = c_.tokens(), h = c_.hidden(), experts = c_.model.moe->experts;
  Tensor dexpert_out = Tensor::uninitialized_of<T>(kAct, static_cast<std::size_t>(routed_rows()) * h);
  auto op = ctx.op(layer_, expert_ops().down, Pass::bwd_dgrad);
  HostView<const T> dy_host(ctx.device(), dy, static_cast<std::size_t>(t) * h);
  HostView<const T> outs(ctx.device(), s.expert_out.as<T>(), s.expert_out.size());
  HostView<const float> probs(ctx.device(), s.probs.data(), s.probs.size());
  HostView<T> dexpert(ctx.device(), dexpert_out.as<T>(), dexpert_out.size());
  HostView<float> dp(ctx.device(), dprobs.data(), dprobs.size());
  for (int e = 0; e < experts; ++e)
    for (int r = s.expert_rows[e]; r < s.expert_rows[e + 1]; ++r) {
      const std::size_t at = static_cast<std::size_t>(s.row_token[r]) * experts + e;
      const T* g = dy_host.get() + static_cast<std::size_t>(s.row_token[r]) * h;
      const T* out = outs.get() + static_cast<std::size_t>(r) * h;
      T* d = dexpert.get() + static_cast<std::size_t>(r) * h;
      double dot = 0;
      for (int j = 0; j < h; ++j) {
        dot += static_cast<double>(to_float(g[j])) * to_float(out[j]);
        d[j] = from_float<T>(probs.get()[at] * to_float(g[j]));
      }
      dp.get()[at] = static_cast<float>(dot);
    }
  dexpert.store();
  dp.store();
  s.expert_out.release();
  if (ctx.tp_size() > 1) ctx.tp->all_reduce(dprobs.data(), dprobs.size(), ReduceOp::sum);  // partial rows' dots
  return dexpert_out;
}

// The permute's backward: each routed row's grad added back onto its token's in dn.
template <class T>
void MoeBlock::permute_backward(const ModelContext& ctx, const MoeSaved& s, const T* dpermuted, T* dn) const {
  const int h = c_.hidden(), routed = routed_rows();
  auto op = ctx.op(layer_, expert_ops().up, Pass::bwd_dgrad);
  HostView<T> dn_host(ctx.device(), dn, static_cast<std::size_t>(c_.tokens()) * h);
  HostView<const T> rows(ctx.device(), dpermuted, static_cast<std::size_t>(routed) * h);
  for (int r = 0; r < routed; ++r) {
    T* d = dn_host.get() + static_cast<std::size_t>(s.row_token[r]) * h;
    const T* g = rows.get() + static_cast<std::size_t>(r) * h;
    for (int j = 0; j < h; ++j) d[j] = from_float<T>(to_float(d[j]) + to_float(g[j]));
  }
  dn_host.store();
}

// The router (replicated: its grad is added after the all-reduce, once): the softmax's
// backward, the input grad into dn, the weight gradient timed apart, as the simulator's op
// list prices it (models/layer_ops.cpp).
template <class T>
void MoeBlock::router_backward(const ModelContext& ctx, MoeSaved& s, Tensor& dprobs, T* dn) const {
  const int t = c_.tokens(), h = c_.hidden(), experts = c_.model.moe->experts;
  Tensor dlogits = Tensor::uninitialized_of<T>(kAct, static_cast<std::size_t>(t) * experts);
  {
    auto op = ctx.op(layer_, op_names::kMoeRouter, Pass::bwd_dgrad);
    HostView<const float> probs(ctx.device(), s.probs.data(), s.probs.size());
    HostView<const float> dprobs_host(ctx.device(), dprobs.data(), dprobs.size());
    HostView<T> dl(ctx.device(), dlogits.as<T>(), dlogits.size());
    for (int i = 0; i < t; ++i) {  // softmax: dl = p (dp - <p, dp>)
      const float* p = probs.get() + static_cast<std::size_t>(i) * experts;
      const float* dp = dprobs_host.get() + static_cast<std::size_t>(i) * experts;
      float dot = 0;
      for (int e = 0; e < experts; ++e) dot += p[e] * dp[e];
      for (int e = 0; e < experts; ++e)
        dl.get()[static_cast<std::size_t>(i) * experts + e] = from_float<T>(p[e] * (dp[e] - dot));
    }
    dl.store();
    dprobs.release();
    s.probs.release();
    ctx.kernels().gemm_forward(dlogits.as<T>(), p_.param<T>(router_w_), dn, t, h, experts, false, false, 1.0f, 1.0f);
  }
  {
    auto op = ctx.op(layer_, op_names::kMoeRouter, Pass::bwd_wgrad);
    ctx.kernels().linear_backward_weight(dlogits.as<T>(), s.normed.as<T>(), p_.grad<T>(router_w_), t, h, experts, true);
  }
  dlogits.release();
  s.normed.release();
}

}  // namespace twinsim::exec

#include "exec/train/pipeline.hpp"
#include "models/op_names.hpp"

#include <algorithm>

namespace twinsim::exec {

namespace {

// One stage's view: its neighbours and the size of what crosses to them.
class StageLinks {
 public:
  explicit StageLinks(PipelineRun& run)
      : run_(run),
        stage_(run.pp.rank()),
        stages_(run.pp.size()),
        count_(static_cast<std::size_t>(run.stage.config().local_tokens()) * run.stage.config().hidden()),
        storage_(run.stage.config().storage),
        states_(run.micro_batches) {}

  bool first() const { return stage_ == 0; }
  bool last() const { return stage_ == stages_ - 1; }
  int warmup() const { return std::min(stages_ - stage_ - 1, run_.micro_batches); }

  Tensor recv_forward() {
    if (first()) return {};
    Tensor x = fresh();
    auto op = run_.ctx.op(-1, op_names::kPpRecv, Pass::fwd);
    recv(x, stage_ - 1);
    return x;
  }
  void send_forward(const Tensor& y) {
    if (last()) return;
    auto op = run_.ctx.op(-1, op_names::kPpSend, Pass::fwd);
    send(y, stage_ + 1);
  }
  Tensor recv_backward() {
    if (last()) return {};
    Tensor dy = fresh();
    auto op = run_.ctx.op(-1, op_names::kPpRecv, Pass::bwd_dgrad);
    recv(dy, stage_ + 1);
    return dy;
  }
  void send_backward(const Tensor& dx) {
    if (first()) return;
    auto op = run_.ctx.op(-1, op_names::kPpSend, Pass::bwd_dgrad);
    send(dx, stage_ - 1);
  }
  // Sends y forward and receives the grad of an earlier micro-batch's output, at once.
  Tensor send_forward_recv_backward(const Tensor& y) {
    if (last()) return {};
    Tensor dy = fresh();
    auto op = run_.ctx.op(-1, op_names::kPpSendRecv, Pass::fwd);
    send_recv(y, dy, stage_ + 1);
    return dy;
  }
  // Sends dx backward and receives the next micro-batch's input, at once.
  Tensor send_backward_recv_forward(const Tensor& dx) {
    if (first()) return {};
    Tensor x = fresh();
    auto op = run_.ctx.op(-1, op_names::kPpSendRecv, Pass::bwd_dgrad);
    send_recv(dx, x, stage_ - 1);
    return x;
  }

  Tensor forward(int i, Tensor x) {
    run_.load(i, states_[i]);
    return run_.stage.forward(run_.ctx, std::move(x), states_[i]);
  }
  Tensor backward(int i, Tensor dy) { return run_.stage.backward(run_.ctx, std::move(dy), run_.dloss, states_[i]); }

  std::vector<float> losses() const {
    std::vector<float> out;
    if (last())
      for (const MicroBatchState& s : states_) out.push_back(s.loss);
    return out;
  }

 private:
  PipelineRun& run_;
  int stage_, stages_;
  std::size_t count_;
  Dtype storage_;  // of the activations and grads that cross (the stage's storage type)

  Tensor fresh() const { return Tensor(MemCategory::activations, count_, storage_); }
  void send(const Tensor& t, int peer) {
    with_storage(storage_, [&]<class T>() { run_.pp.send(t.as<T>(), count_, peer); });
  }
  void recv(Tensor& t, int peer) {
    with_storage(storage_, [&]<class T>() { run_.pp.recv(t.as<T>(), count_, peer); });
  }
  void send_recv(const Tensor& out, Tensor& in, int peer) {
    with_storage(storage_, [&]<class T>() { run_.pp.send_recv(out.as<T>(), count_, peer, in.as<T>(), count_, peer); });
  }
  std::vector<MicroBatchState> states_;
};

void gpipe(StageLinks& s, int m) {
  for (int i = 0; i < m; ++i) s.send_forward(s.forward(i, s.recv_forward()));
  for (int i = 0; i < m; ++i) s.send_backward(s.backward(i, s.recv_backward()));
}

void one_f_one_b(StageLinks& s, int m) {
  const int warmup = s.warmup(), steady = m - warmup;
  for (int i = 0; i < warmup; ++i) s.send_forward(s.forward(i, s.recv_forward()));
  Tensor x = steady > 0 ? s.recv_forward() : Tensor();
  for (int i = 0; i < steady; ++i) {
    Tensor y = s.forward(warmup + i, std::move(x));
    Tensor dy = s.send_forward_recv_backward(y);
    y.release();
    Tensor dx = s.backward(i, std::move(dy));
    if (i == steady - 1) s.send_backward(dx);
    else x = s.send_backward_recv_forward(dx);
  }
  for (int i = steady; i < m; ++i) s.send_backward(s.backward(i, s.recv_backward()));
}

}  // namespace

std::vector<float> run_pipeline(Schedule schedule, PipelineRun& run) {
  StageLinks links(run);
  if (schedule == Schedule::gpipe) gpipe(links, run.micro_batches);
  else one_f_one_b(links, run.micro_batches);
  return links.losses();
}

}  // namespace twinsim::exec

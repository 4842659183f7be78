#include "sim/training/zero_comm.hpp"

#include <cmath>

#include "sim/cost/collective_cost.hpp"
#include "sim/training/rank_layout.hpp"
#include "sim/training/transfer_bytes.hpp"

namespace twinsim {

namespace {

// `calls` equal calls of `params x element_bytes` in all, back to back on the DP stream.
double dp_calls_s(const ClusterSpec& cluster, const Plan& plan, CollectiveOp op, double params, int element_bytes,
                  std::int64_t bucket) {
  const auto calls = static_cast<double>(zero_calls(params, bucket));
  const GroupLayout dp = group_layout(cluster, plan, ParallelGroup::dp);
  return calls * collective_time_s(cluster, op, dp, params * element_bytes / calls);
}

}  // namespace

std::int64_t zero_calls(double params, std::int64_t bucket) {
  if (bucket <= 0 || params <= static_cast<double>(bucket)) return 1;
  return static_cast<std::int64_t>(std::ceil(params / static_cast<double>(bucket)));
}

double zero3_layer_gather_s(const ClusterSpec& cluster, const Plan& plan, const StackSpec& stack, double params,
                            Dtype precision) {
  return dp_calls_s(cluster, plan, CollectiveOp::all_gather, params, param_element_bytes(precision),
                    stack.zero_gather_bucket_params);
}

double zero_layer_reduce_s(const ClusterSpec& cluster, const Plan& plan, const StackSpec& stack, double params,
                           Dtype precision) {
  return dp_calls_s(cluster, plan, CollectiveOp::reduce_scatter, params, grad_element_bytes(precision),
                    stack.zero_reduce_bucket_params);
}

}  // namespace twinsim

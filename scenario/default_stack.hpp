#pragma once
// The software stack a scenario gets when it names none (docs/SCENARIO.md, `stack`): what runs
// such a workload on such a cluster today, so that a user who has never heard of stacks gets
// a realistic answer rather than the device alone (`stack: none`, the ideal bound, asked for
// by name).
#include <string>
#include <string_view>

#include "scenario/scenario.hpp"

namespace twinsim {

// The catalog stack (hardware/catalog/stacks/) for `s`'s workload and GPU:
// * training on a catalog GPU: `megatron-core` (Megatron-Core with Transformer Engine, the
//   host time per op and per micro-batch fitted on vTrain's measured Megatron runs);
//   `deepspeed` where the plan uses what only DeepSpeed runs: ZeRO-Offload or ZeRO-Infinity
//   (plan.offload_optimizer, plan.offload_params), ZeRO++ (plan.zero_quantized_weights,
//   zero_quantized_gradients, zero_hpz_partition_size > 1); `torchtitan-compile` (PyTorch's
//   FSDP2 in torchtitan, compiled) where the plan uses what only torchtitan composes: per-op
//   selective recompute (recompute: selective_op), or ZeRO-2/3 sharding with pp or cp above 1,
//   with tp_comm_overlap or with hybrid sharding (plan.dp_replicate above 1) (DeepSpeed refuses ZeRO-2/3 under its
//   pipeline and has no ring attention; Megatron-Core's distributed optimizer is ZeRO-1), or ZeRO-3 with tp above 1
//   (DeepSpeed's AutoTP training takes ZeRO stages 0-2 only); `deepspeed` for the rest of
//   ZeRO stage 2 or 3;
// * serving on a catalog GPU: `vllm-v1` (vLLM's V1 engine, the default engine since v0.8), or
//   `trtllm-v1` for NVFP4 weights (inference.weight_dtype nvfp4: NVIDIA's NVFP4 checkpoints
//   name TensorRT-LLM their runtime engine);
// * the CPU host (`cluster: host`, a calibration written by `twinsim calibrate`) or a GPU
//   written out whole with no catalog name: `none`. The CPU executor issues its ops from C++
//   with no queue between host and device, and no software is known for a GPU made up.
std::string default_stack_name(const Scenario& s);

// Whether `plan` uses a ZeRO knob only DeepSpeed runs: ZeRO-Offload, ZeRO-Infinity, ZeRO++.
bool deepspeed_only_plan(const PlanKnobs& plan);

// The training rule above for `plan` alone (a catalog GPU other than the host's assumed): a
// string literal, no allocation, so the plan search calls it on every candidate.
std::string_view default_training_stack_name(const PlanKnobs& plan);

// The catalog stack of that name: what apply_default_stack gives a training scenario with `plan`.
StackSpec default_training_stack(const PlanKnobs& plan);

// Whether `s`'s stack is its default and that default follows its plan (training on a catalog
// GPU): the plan search then prices each candidate on its own plan's default.
bool default_stack_follows_plan(const Scenario& s);

// `s.stack` set to the default above, marked as such (Scenario::stack_is_default).
void apply_default_stack(Scenario& s);

}  // namespace twinsim

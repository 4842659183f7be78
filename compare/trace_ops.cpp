#include "compare/trace_ops.hpp"

#include <algorithm>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string_view>
#include <utility>

namespace twinsim::compare {

namespace {

double number(const nlohmann::json& e, const char* key) {
  const auto it = e.find(key);
  return it != e.end() && it->is_number() ? it->get<double>() : 0;
}

const nlohmann::json& args_of(const nlohmann::json& e) {
  static const nlohmann::json none = nlohmann::json::object();
  const auto it = e.find("args");
  return it != e.end() && it->is_object() ? *it : none;
}

// A tensor's dims: a non-empty list of integers; anything else (a scalar, a list of tensors) is empty.
std::vector<std::int64_t> tensor_dims(const nlohmann::json& dims) {
  std::vector<std::int64_t> out;
  if (!dims.is_array()) return out;
  for (const nlohmann::json& d : dims) {
    if (!d.is_number_integer()) return {};
    out.push_back(d.get<std::int64_t>());
  }
  return out;
}

double elements(const std::vector<std::int64_t>& dims) {
  double n = 1;
  for (std::int64_t d : dims) n *= static_cast<double>(d);
  return n;
}

// The op's tensor inputs (dims, element bytes), nested lists of tensors (aten::cat) flattened.
std::vector<std::pair<std::vector<std::int64_t>, int>> tensors_of(const nlohmann::json& args) {
  std::vector<std::pair<std::vector<std::int64_t>, int>> out;
  const auto dims = args.find("Input Dims");
  const auto types = args.find("Input type");
  if (dims == args.end() || !dims->is_array()) return out;
  for (std::size_t i = 0; i < dims->size(); ++i) {
    const std::string type = types != args.end() && types->is_array() && i < types->size() && (*types)[i].is_string()
                                 ? (*types)[i].get<std::string>() : "";
    const nlohmann::json& d = (*dims)[i];
    if (std::vector<std::int64_t> t = tensor_dims(d); !t.empty()) {
      out.emplace_back(std::move(t), trace_type_bytes(type));
    } else if (d.is_array()) {  // a list of tensors: each of the list's element type
      for (const nlohmann::json& each : d)  // element size unknown (0): the caller's fallback
        if (std::vector<std::int64_t> t = tensor_dims(each); !t.empty()) out.emplace_back(std::move(t), 0);
    }
  }
  return out;
}

bool size_gemm(const std::string& name, const std::vector<std::pair<std::vector<std::int64_t>, int>>& in, TraceOp& op) {
  const bool with_bias = name == "aten::addmm" || name == "aten::baddbmm";
  const std::size_t a = with_bias ? 1 : 0;
  if (in.size() < a + 2) return false;
  const std::vector<std::int64_t>& lhs = in[a].first;
  const std::vector<std::int64_t>& rhs = in[a + 1].first;
  if (lhs.size() == 2 && rhs.size() == 2 && lhs[1] == rhs[0]) {
    op.m = lhs[0], op.k = lhs[1], op.n = rhs[1];
  } else if (lhs.size() == 3 && rhs.size() == 3 && lhs[0] == rhs[0] && lhs[2] == rhs[1]) {
    op.batch = lhs[0], op.m = lhs[1], op.k = lhs[2], op.n = rhs[2];
  } else {
    return false;
  }
  op.flops = 2.0 * static_cast<double>(op.batch) * static_cast<double>(op.m) * static_cast<double>(op.n) *
             static_cast<double>(op.k);  // a multiply and an add per term
  return true;
}

bool size_attention(const std::string& name, const std::vector<std::pair<std::vector<std::int64_t>, int>>& in,
                    TraceOp& op) {
  if (in.size() < 2 || in[0].first.size() != 4 || in[1].first.size() != 4) return false;
  const std::vector<std::int64_t>& q = in[0].first;
  const std::vector<std::int64_t>& k = in[1].first;
  const bool heads_second = name.starts_with("aten::_scaled_dot_product");  // [b, h, s, d]; flash's own: [b, s, h, d]
  op.batch = q[0];
  op.heads = heads_second ? q[1] : q[2];
  op.seq = heads_second ? q[2] : q[1];
  op.seq_kv = heads_second ? k[2] : k[1];
  op.head_dim = q[3];
  // QK^T and PV: 2 GEMMs of 2 s s_k d FLOPs per head, the full square (models/layer_ops)
  op.flops = 4.0 * static_cast<double>(op.batch * op.heads) * static_cast<double>(op.seq) *
             static_cast<double>(op.seq_kv) * static_cast<double>(op.head_dim);
  return true;
}

bool is_attention(std::string_view name) {
  for (std::string_view a : {"aten::_flash_attention_forward", "aten::_scaled_dot_product_flash_attention",
                             "aten::_efficient_attention_forward", "aten::_scaled_dot_product_efficient_attention",
                             "aten::_scaled_dot_product_cudnn_attention"})
    if (name == a) return true;
  return false;
}

void size_op(const nlohmann::json& cpu_op, TraceOp& op) {
  op.op = cpu_op.value("name", "");
  const nlohmann::json& args = args_of(cpu_op);
  const auto in = tensors_of(args);
  const auto types = args.find("Input type");
  if (types != args.end() && types->is_array() && !types->empty() && (*types)[0].is_string())
    op.dtype = (*types)[0].get<std::string>();
  const bool gemm = op.op == "aten::mm" || op.op == "aten::addmm" || op.op == "aten::bmm" || op.op == "aten::baddbmm";
  if (gemm) {
    if (size_gemm(op.op, in, op)) op.kind = TraceOpKind::gemm;
    return;
  }
  if (is_attention(op.op)) {
    if (size_attention(op.op, in, op)) op.kind = TraceOpKind::attention;
    return;
  }
  op.family = kernel_family(op.kernel);
  if (op.family == "index") return;  // a gather reads the rows its indices pick: the dims do not say which
  // element size of a list's tensors (aten::cat): the op's first typed tensor's, else 2
  int fallback = 0;
  for (const auto& [dims, bytes] : in) fallback = fallback ? fallback : bytes;
  double read = 0, largest = 0;
  for (const auto& [dims, bytes] : in) {
    const double b = elements(dims) * (bytes ? bytes : (fallback ? fallback : 2));
    read += b;
    largest = std::max(largest, b);
  }
  if (read <= 0) return;
  // written: a concatenation all it read, a reduction next to nothing, an element-wise op its largest input
  op.bytes = read + (op.family == "cat" ? read : op.family == "reduce" ? 0 : largest);
  op.kind = TraceOpKind::memory;
}

// The GPU's ProfilerStep annotations on `device` (begin, end) in microseconds.
std::vector<std::pair<double, double>> gpu_steps(const nlohmann::json& events) {
  std::vector<std::pair<double, double>> out;
  for (const nlohmann::json& e : events)
    if (e.value("cat", "") == "gpu_user_annotation" && e.value("name", "").starts_with("ProfilerStep#"))
      out.emplace_back(number(e, "ts"), number(e, "ts") + number(e, "dur"));
  return out;
}

int busiest_device(const nlohmann::json& events) {
  std::map<int, double> us;
  for (const nlohmann::json& e : events)
    if (e.value("cat", "") == "kernel") us[args_of(e).value("device", 0)] += number(e, "dur");
  if (us.empty()) return -1;
  return std::max_element(us.begin(), us.end(), [](const auto& a, const auto& b) { return a.second < b.second; })->first;
}

}  // namespace

const char* to_string(TraceOpKind kind) {
  switch (kind) {
    case TraceOpKind::gemm: return "gemm";
    case TraceOpKind::attention: return "attention";
    case TraceOpKind::memory: return "memory";
    case TraceOpKind::unsized: break;
  }
  return "unsized";
}

std::string kernel_family(const std::string& kernel) {
  // the first template whose name the kernel's contains; order matters: "vectorized_elementwise_kernel"
  // contains "elementwise_kernel"
  static const std::pair<const char*, const char*> families[] = {
      {"vectorized_elementwise_kernel", "elementwise"}, {"unrolled_elementwise_kernel", "elementwise"},
      {"elementwise_kernel", "strided"},                {"reduce_kernel", "reduce"},
      {"CatArrayBatchedCopy", "cat"},                   {"oftMax", "softmax"},
      {"softmax", "softmax"},                           {"layer_norm", "norm"},
      {"index", "index"}};
  for (const auto& [part, family] : families)
    if (kernel.find(part) != std::string::npos) return family;
  return "other";
}

int trace_type_bytes(const std::string& type) {
  static const std::map<std::string, int, std::less<>> bytes{
      {"c10::BFloat16", 2}, {"c10::Half", 2}, {"float", 4}, {"double", 8}, {"long int", 8}, {"int", 4},
      {"short int", 2}, {"bool", 1}, {"unsigned char", 1}, {"signed char", 1}, {"c10::Float8_e4m3fn", 1}};
  const auto it = bytes.find(type);
  return it == bytes.end() ? 0 : it->second;
}

double TraceOps::kernel_s(TraceOpKind kind) const {
  double s = 0;
  for (const TraceOp& op : ops)
    if (op.kind == kind) s += op.dur_s;
  return s / std::max(1, steps);
}

double TraceOps::kernel_s() const {
  double s = 0;
  for (const TraceOp& op : ops) s += op.dur_s;
  return s / std::max(1, steps);
}

TraceOps read_trace_ops(const nlohmann::json& trace, const std::string& origin) {
  if (!trace.is_object() || !trace.contains("traceEvents") || !trace["traceEvents"].is_array())
    throw std::invalid_argument(origin + ": not a profiler trace (no traceEvents array)");
  const nlohmann::json& events = trace["traceEvents"];
  const int device = busiest_device(events);
  if (device < 0) throw std::invalid_argument(origin + ": the trace has no GPU kernel (profile with ProfilerActivity.CUDA)");
  std::map<long long, const nlohmann::json*> op_by_id, id_by_launch;
  for (const nlohmann::json& e : events) {
    const nlohmann::json& args = args_of(e);
    const std::string cat = e.value("cat", "");
    if (cat == "cpu_op" && args.contains("External id")) op_by_id[args["External id"].get<long long>()] = &e;
    if ((cat == "cuda_runtime" || cat == "cuda_driver") && args.contains("correlation") && args.contains("External id"))
      id_by_launch[args["correlation"].get<long long>()] = &e;
  }
  TraceOps out;
  out.origin = origin;
  const std::vector<std::pair<double, double>> steps = gpu_steps(events);
  out.steps = static_cast<int>(steps.size());
  double first = std::numeric_limits<double>::infinity(), last = -first;
  for (const nlohmann::json& e : events) {
    if (e.value("cat", "") != "kernel") continue;
    const nlohmann::json& args = args_of(e);
    if (args.value("device", 0) != device) continue;
    const double ts = number(e, "ts");
    if (!steps.empty() && std::none_of(steps.begin(), steps.end(), [ts](const auto& s) { return ts >= s.first && ts < s.second; }))
      continue;
    TraceOp op;
    op.kernel = e.value("name", "");
    op.dur_s = number(e, "dur") * 1e-6;
    first = std::min(first, ts), last = std::max(last, ts + number(e, "dur"));
    long long id = args.contains("External id") ? args["External id"].get<long long>() : -1;
    if (id < 0 && args.contains("correlation")) {
      const auto launch = id_by_launch.find(args["correlation"].get<long long>());
      if (launch != id_by_launch.end()) id = args_of(*launch->second)["External id"].get<long long>();
    }
    if (const auto cpu = op_by_id.find(id); cpu != op_by_id.end()) size_op(*cpu->second, op);
    out.ops.push_back(std::move(op));
  }
  for (const auto& [begin, end] : steps) out.step_s += (end - begin) * 1e-6 / static_cast<double>(steps.size());
  if (steps.empty() && !out.ops.empty()) out.step_s = (last - first) * 1e-6;
  if (const auto props = trace.find("deviceProperties"); props != trace.end() && props->is_array())
    for (const nlohmann::json& p : *props)
      if (p.value("id", -1) == device) out.gpu_name = p.value("name", "");
  return out;
}

}  // namespace twinsim::compare

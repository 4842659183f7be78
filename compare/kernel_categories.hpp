#pragma once
// The categories a real run's kernels and the simulator's ops are lined up in
// (compare/kernel_categories.csv, built into the binary; docs/SCENARIO.md): gemm, attention,
// norm_elementwise, optimizer, communication (a kernel's: communication.all_reduce, ...),
// memcpy_memset; "unknown" where no row matches.
#include <string>
#include <vector>

namespace twinsim::compare {

inline constexpr const char* kUnknownCategory = "unknown";

struct CategoryRule {
  bool kernel = true;              // false: a simulator op's rule
  std::vector<std::string> words;  // kernel: lower-case substrings, all needed; op: one name
  bool prefix = false;             // op: the name ends with '.', a prefix
  std::string category;
};

class CategoryTable {
 public:
  explicit CategoryTable(std::vector<CategoryRule> rules) : rules_(std::move(rules)) {}
  // The category of a profiler kernel's name (case-insensitive; first matching row).
  std::string of_kernel(const std::string& kernel_name) const;
  // The category of a simulator op ("attn.qkv.fwd": its name without the pass).
  std::string of_op(const std::string& op_name) const;

 private:
  std::vector<CategoryRule> rules_;
};

// Parses the table's CSV text; a malformed line throws std::runtime_error naming it.
CategoryTable parse_category_table(const std::string& text, const std::string& origin);
// The table built into the binary.
const CategoryTable& category_table();

// "communication.all_reduce" -> "communication".
std::string top_category(const std::string& category);

}  // namespace twinsim::compare

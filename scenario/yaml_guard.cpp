#include "scenario/yaml_guard.hpp"

#include <algorithm>
#include <sstream>
#include <unordered_map>
#include <vector>

#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/parser.h>

#include "scenario/errors.hpp"

namespace twinsim {

namespace {

// A node as its aliases would expand it: how many nodes, and how many levels of
// collections (0 for a single value).
struct Expanded {
  std::uint64_t nodes = 1;
  int depth = 0;
};

// Counts the parser's events; throws ScenarioError at the first limit crossed, so the
// count never runs past the budget either.
class LimitCounter final : public YAML::EventHandler {
 public:
  explicit LimitCounter(std::string origin) : origin_(std::move(origin)) {}

  void OnDocumentStart(const YAML::Mark&) override {}
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark& mark, YAML::anchor_t anchor) override { value(mark, anchor, false); }
  void OnScalar(const YAML::Mark& mark, const std::string&, YAML::anchor_t anchor, const std::string&) override {
    value(mark, anchor, true);
  }
  void OnSequenceStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t anchor,
                       YAML::EmitterStyle::value) override {
    open(mark, anchor, false);
  }
  void OnMapStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t anchor,
                  YAML::EmitterStyle::value) override {
    open(mark, anchor, true);
  }
  void OnSequenceEnd() override { close(); }
  void OnMapEnd() override { close(); }

  void OnAlias(const YAML::Mark& mark, YAML::anchor_t anchor) override {
    const auto found = anchors_.find(anchor);
    // the parser knows the anchor, so it names a collection still open: the alias is inside it
    if (found == anchors_.end()) fail(mark, "an alias refers to a collection that contains it (a cycle)");
    const Expanded& e = found->second;
    alias_nodes_ += e.nodes;
    if (alias_nodes_ > kMaxYamlAliasNodes)
      fail(mark, "its aliases expand to more than " + std::to_string(kMaxYamlAliasNodes) +
                     " nodes (a YAML alias bomb?); a scenario needs a few hundred");
    if (static_cast<int>(open_.size()) + e.depth > kMaxYamlDepth) fail(mark, too_deep());
    add(e, mark, e.depth == 0);
  }

 private:
  struct Open {
    YAML::anchor_t anchor;
    bool map;
    std::uint64_t children = 0;
    Expanded size{1, 1};
    YAML::Mark mark;
  };

  [[noreturn]] void fail(const YAML::Mark& mark, const std::string& rule) const {
    throw ScenarioError(origin_, "",
                        "line " + std::to_string(mark.line + 1) + ", column " + std::to_string(mark.column + 1) + ": " + rule);
  }
  static std::string too_deep() { return "nests deeper than " + std::to_string(kMaxYamlDepth) + " levels"; }

  void value(const YAML::Mark& mark, YAML::anchor_t anchor, bool named) {
    const Expanded e{};
    if (anchor != YAML::NullAnchor) anchors_[anchor] = e;
    add(e, mark, named);
  }

  void open(const YAML::Mark& mark, YAML::anchor_t anchor, bool map) {
    if (static_cast<int>(open_.size()) + 1 > kMaxYamlDepth) fail(mark, too_deep());
    open_.push_back(Open{anchor, map, 0, Expanded{1, 1}, mark});
  }

  void close() {
    const Open done = open_.back();
    open_.pop_back();
    if (done.anchor != YAML::NullAnchor) anchors_[done.anchor] = done.size;
    add(done.size, done.mark, false);
  }

  // `e` joins the collection open now; in a mapping every other child is a key, which
  // must be a name: the readers look keys up by their text.
  void add(const Expanded& e, const YAML::Mark& mark, bool named) {
    if (open_.empty()) return;
    Open& parent = open_.back();
    if (parent.map && parent.children % 2 == 0 && !named)
      fail(mark, "a mapping key must be a name, not a list, a mapping or empty");
    ++parent.children;
    parent.size.nodes += e.nodes;
    parent.size.depth = std::max(parent.size.depth, e.depth + 1);
  }

  std::string origin_;
  std::vector<Open> open_;
  std::unordered_map<YAML::anchor_t, Expanded> anchors_;
  std::uint64_t alias_nodes_ = 0;
};

}  // namespace

YAML::Node load_yaml(const std::string& text, const std::string& origin) {
  {
    std::istringstream in(text);
    YAML::Parser parser(in);
    LimitCounter counter(origin);
    parser.HandleNextDocument(counter);  // YAML::Load reads the first document only, as here
  }
  return YAML::Load(text);
}

}  // namespace twinsim

// The docs point at things that exist (issue 57: two comments pointed to a DESIGN document
// that was not in the repository): every relative Markdown link, and every repository path
// named in backticks, in README.md files and under docs/.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <string>
#include <vector>

namespace twinsim {
namespace {

namespace fs = std::filesystem;

const fs::path kRoot = TWINSIM_SOURCE_DIR;

// A folder the walk skips: hidden ones, build trees (their copies of the docs sit elsewhere).
bool skipped(const fs::path& dir) {
  const std::string name = dir.filename().string();
  return name.starts_with(".") || name.starts_with("build") || fs::exists(dir / "CMakeCache.txt");
}

// README.md in any folder of the repository, and every page under docs/.
std::vector<fs::path> walk_pages() {
  std::vector<fs::path> found;
  for (auto it = fs::recursive_directory_iterator(kRoot); it != fs::recursive_directory_iterator(); ++it) {
    if (it->is_directory() && skipped(it->path())) {
      it.disable_recursion_pending();
      continue;
    }
    const fs::path& file = it->path();
    const bool in_docs = fs::relative(file, kRoot).string().starts_with("docs/");
    if (it->is_regular_file() && (file.filename() == "README.md" || (in_docs && file.extension() == ".md")))
      found.push_back(file);
  }
  return found;
}

// The walk again when a file vanished under it: ctest runs other tests beside this one, and
// some write and remove scratch files in the source tree (pytest's caches, a validate run).
std::vector<fs::path> pages() {
  for (int attempt = 1;; ++attempt) {
    try {
      return walk_pages();
    } catch (const fs::filesystem_error&) {
      if (attempt == 5) throw;
    }
  }
}

// The repository's top-level entries: a backticked path is the repository's when it starts with one.
std::set<std::string> top_level_names() {
  std::set<std::string> names;
  for (const auto& entry : fs::directory_iterator(kRoot))
    if (!skipped(entry.path())) names.insert(entry.path().filename().string());
  return names;
}

// A path written as a pattern or a placeholder (`scenarios/validation/*/README.md`,
// `report_N.md`, `<dir>/x`, `{a,b}`, `$OUT/x`, `a|b`), not a name to look up.
bool is_pattern(const std::string& path) {
  static const std::regex pattern(R"([*<>{}|$]|\.\.\.|(^|[/_-])N([/._-]|$))");
  return std::regex_search(path, pattern);
}

// A module named without its extension (`sim/cost/offload_io`) counts when one of its files exists.
bool names_something(const std::string& path, const fs::path& page_dir) {
  for (const fs::path& base : {kRoot, page_dir}) {
    if (fs::exists(base / path)) return true;
    for (const char* ext : {".hpp", ".cpp", ".py", ".sh", ".yaml"})
      if (fs::exists(base / (path + ext))) return true;
  }
  return false;
}

TEST(DocsLinks, RelativeLinksAndBacktickedPathsExist) {
  static const std::regex link(R"(\]\(([^)\s#]*)(#[^)\s]*)?\))");
  static const std::regex code_span(R"(`([^`\s]+)`)");
  const std::set<std::string> tops = top_level_names();
  int checked = 0;
  for (const fs::path& page : pages()) {
    std::ifstream in(page);
    std::string line;
    bool fenced = false;
    for (int n = 1; std::getline(in, line); ++n) {
      if (line.starts_with("```")) fenced = !fenced;
      if (fenced || line.starts_with("```")) continue;
      for (std::sregex_iterator m(line.begin(), line.end(), link), end; m != end; ++m) {
        const std::string target = (*m)[1];
        if (target.empty() || std::regex_search(target, std::regex("^[a-z]+:"))) continue;  // #anchor, https:
        ++checked;
        EXPECT_TRUE(fs::exists(page.parent_path() / target)) << page << ":" << n << ": link to " << target;
      }
      for (std::sregex_iterator m(line.begin(), line.end(), code_span), end; m != end; ++m) {
        std::string path = (*m)[1];
        while (!path.empty() && std::string(".,:;").find(path.back()) != std::string::npos) path.pop_back();
        const std::size_t slash = path.find('/');
        if (slash == std::string::npos || !tops.contains(path.substr(0, slash)) || is_pattern(path)) continue;
        ++checked;
        EXPECT_TRUE(names_something(path, page.parent_path())) << page << ":" << n << ": `" << path << "`";
      }
    }
  }
  EXPECT_GT(checked, 100) << "the walk found too few links and paths to have looked at the docs";
}

TEST(DocsLinks, PatternsAreNotLookedUp) {
  EXPECT_TRUE(is_pattern("scenarios/validation/*/README.md"));
  EXPECT_TRUE(is_pattern("/work/briefs/report_N.md"));
  EXPECT_TRUE(is_pattern("$OUT/gpu"));
  EXPECT_FALSE(is_pattern("sim/cost/offload_io"));
  EXPECT_FALSE(is_pattern("models/catalog/hf/NOTICE.md"));
}

}  // namespace
}  // namespace twinsim

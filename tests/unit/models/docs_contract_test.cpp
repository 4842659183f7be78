// The contract's pages (docs/) against the code: the plan-key table is the plan-field
// table's (models/plan_key_table.hpp), and every line is short enough to read in a diff.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "models/plan_key_table.hpp"

namespace twinsim {
namespace {

namespace fs = std::filesystem;

std::vector<fs::path> doc_pages() {
  std::vector<fs::path> pages;
  for (const auto& entry : fs::recursive_directory_iterator(fs::path(TWINSIM_SOURCE_DIR) / "docs"))
    if (entry.is_regular_file() && entry.path().extension() == ".md") pages.push_back(entry.path());
  return pages;
}

std::string read_all(const fs::path& file) {
  std::ifstream in(file);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// Writes `text` whole over `file` (a temporary file beside it, renamed).
void write_whole(const fs::path& file, const std::string& text) {
  const fs::path tmp = file.string() + ".tmp";
  std::ofstream(tmp) << text;
  fs::rename(tmp, file);
}

TEST(PlanKeyTable, DocsHoldTheCodesTable) {
  int found = 0;
  for (const fs::path& page : doc_pages()) {
    const std::string text = read_all(page);
    const std::size_t begin = text.find(kPlanKeyTableBegin);
    if (begin == std::string::npos) continue;
    ++found;
    const std::size_t from = text.find('\n', begin) + 1;
    const std::size_t to = text.find(kPlanKeyTableEnd, from);
    ASSERT_NE(to, std::string::npos) << page << ": no end marker after the plan-key table";
    const std::string expected = plan_key_table_markdown();
    if (text.compare(from, to - from, expected) == 0) continue;
    // TWINSIM_WRITE_PLAN_KEYS=1 rewrites the page's table from the code (then review the diff)
    if (std::getenv("TWINSIM_WRITE_PLAN_KEYS")) {
      write_whole(page, text.substr(0, from) + expected + text.substr(to));
      continue;
    }
    ADD_FAILURE() << page << ": the plan-key table differs from models/plan_fields.hpp; it should read\n"
                  << expected << "(run with TWINSIM_WRITE_PLAN_KEYS=1 to write it)";
  }
  EXPECT_EQ(found, 1) << "the plan-key table's marker should be in exactly one page under docs/";
}

TEST(PlanKeyTable, HasOneRowPerKnob) {
  const std::string table = plan_key_table_markdown();
  EXPECT_NE(table.find("| `plan.tp` | integer, 1 to "), std::string::npos);
  EXPECT_NE(table.find("| `plan.recompute` | `none`, `selective`, `full`, `selective_op` | `none` | yes |"),
            std::string::npos);
  EXPECT_NE(table.find("| `plan.dp` | integer, 1 to 16777216 | `0` (derived) | as a parallel degree |"),
            std::string::npos);
}

// Characters of a UTF-8 line (bytes other than continuation bytes): "µs" is two.
std::size_t characters(const std::string& line) {
  std::size_t n = 0;
  for (const char c : line) n += (static_cast<unsigned char>(c) & 0xC0u) != 0x80u;
  return n;
}

// Outside code blocks, no line of the docs (docs/ and the top README) is longer than 200
// characters (the contract was one file of lines up to 16,000 characters, unreadable in a
// diff; scripts/split_scenario_doc.py).
TEST(DocsPages, NoLineOver200Characters) {
  std::vector<fs::path> pages = doc_pages();
  pages.push_back(fs::path(TWINSIM_SOURCE_DIR) / "README.md");
  for (const fs::path& page : pages) {
    std::ifstream in(page);
    std::string line;
    bool fenced = false;
    for (int n = 1; std::getline(in, line); ++n) {
      if (line.rfind("```", 0) == 0) {
        fenced = !fenced;
      } else if (!fenced) {
        EXPECT_LE(characters(line), 200u) << page << ":" << n;
      }
    }
  }
}

}  // namespace
}  // namespace twinsim

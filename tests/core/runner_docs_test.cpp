// docs/runners.md is what the schemas say. When they change, regenerate it:
// BERTH_UPDATE_DOCS=1 ctest -R runner_docs
#include <gtest/gtest.h>

#include <cstdlib>

#include "core/runner_config.h"
#include "sys/files.h"

namespace berth {
namespace {

TEST(RunnerDocs, DocsRunnersMdMatchesTheSchemas) {
  std::string generated = RunnerSchemasMarkdown();
  if (const char* update = std::getenv("BERTH_UPDATE_DOCS"); update && *update == '1') {
    ASSERT_TRUE(sys::WriteFileAtomic(
        BERTH_RUNNERS_DOC, generated,
        std::filesystem::perms::owner_read | std::filesystem::perms::owner_write |
            std::filesystem::perms::group_read | std::filesystem::perms::others_read));
  }
  auto committed = sys::ReadFile(BERTH_RUNNERS_DOC);
  ASSERT_TRUE(committed) << "docs/runners.md is missing: BERTH_UPDATE_DOCS=1 ctest -R runner_docs";
  EXPECT_EQ(*committed, generated)
      << "docs/runners.md is out of date: BERTH_UPDATE_DOCS=1 ctest -R runner_docs";
  EXPECT_NE(generated.find("| `cluster.auth.gcp_audience` |"), std::string::npos);
}

}  // namespace
}  // namespace berth

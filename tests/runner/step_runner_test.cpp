// A step's output as the log gets it: a line too long to hold is written in parts, and no part
// ends inside a secret (each half would pass the masker).
#include "runner/step_runner.h"

#include <fcntl.h>
#include <gtest/gtest.h>

#include "core/clock.h"
#include "sys/fd.h"

namespace berth::runner {
namespace {

TEST(StepRunner, ALineTooLongToHoldIsWrittenInPartsThatNeverSplitASecret) {
  const std::string secret = "tok-SECRET-4f9a";
  Masker masker;
  masker.Add(secret);
  sys::Fd null(open("/dev/null", O_WRONLY | O_CLOEXEC));
  LogSink sink(null.Get(), null.Get(), SystemClock::Instance());
  std::string joined;
  int parts = 0;
  sink.Tee([&](std::string_view line) {
    const std::string_view prefix = "[long] ";
    ASSERT_TRUE(line.starts_with(prefix)) << line.substr(0, 40);
    joined += line.substr(prefix.size());
    ++parts;
  });
  StepRunner steps(masker, {"PATH=/usr/bin:/bin"}, "/", sink, -1, std::chrono::seconds(5),
                   std::nullopt);
  // 400 KB on one line: the runner cuts it several times, wherever its reads end.
  const int repeats = 20000;
  auto outcome =
      steps.Run("long", {"/bin/sh", "-c",
                         "i=0; while [ $i -lt " + std::to_string(repeats) + " ]; do printf 'ab " +
                             secret + " '; i=$((i+1)); done; echo"});
  ASSERT_EQ(outcome.exit_code, 0) << outcome.tail;
  EXPECT_GT(parts, 2);
  std::string expected;
  for (int i = 0; i < repeats; ++i) expected += "ab *** ";
  EXPECT_EQ(joined.size(), expected.size());
  EXPECT_TRUE(joined == expected) << "a part of the secret passed the masker";
  EXPECT_EQ(joined.find("tok-"), std::string::npos);
}

}  // namespace
}  // namespace berth::runner

// The log sink as the Kubernetes logging flags configure it: one stream or split streams, info
// held up to a buffer size and written at the flush frequency (time moved by hand), and which
// verbose lines -v and --vmodule let through.
#include "runner/log_sink.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "sys/fd.h"

namespace berth::runner {
namespace {

using std::chrono::seconds;

// A pipe whose read end gives what has been written so far, without waiting.
class Capture {
 public:
  Capture() {
    int fds[2];
    EXPECT_EQ(pipe2(fds, O_NONBLOCK | O_CLOEXEC), 0);
    read_ = sys::Fd(fds[0]);
    write_ = sys::Fd(fds[1]);
  }
  int WriteFd() const { return write_.Get(); }
  std::string Take() {
    std::string got;
    char buffer[4096];
    for (ssize_t n; (n = read(read_.Get(), buffer, sizeof buffer)) > 0;)
      got.append(buffer, static_cast<size_t>(n));
    return got;
  }

 private:
  sys::Fd read_, write_;
};

TEST(LogSink, OneStreamCarriesInfoAndErrorsInOrder) {
  Capture out, err;
  ManualClock clock;
  LogSink log(out.WriteFd(), err.WriteFd(), clock);
  log.Line("plan", "one");
  log.Error("runner", "plan failed");
  log.Line("plan", "two");
  EXPECT_EQ(out.Take(), "[plan] one\n[runner] plan failed\n[plan] two\n");
  EXPECT_EQ(err.Take(), "");
}

TEST(LogSink, SplitStreamsSendErrorsToStderrAndInfoToStdout) {
  Capture out, err;
  ManualClock clock;
  LogSink log(out.WriteFd(), err.WriteFd(), clock, {.split_stream = true});
  log.Line("plan", "one");
  log.Error("runner", "plan failed");
  EXPECT_EQ(out.Take(), "[plan] one\n");
  EXPECT_EQ(err.Take(), "[runner] plan failed\n");
}

TEST(LogSink, InfoIsHeldUpToItsBufferThenWrittenAtTheFlushFrequency) {
  Capture out, err;
  ManualClock clock;
  LogSink log(out.WriteFd(), err.WriteFd(), clock,
              {.split_stream = true, .info_buffer_bytes = 32, .flush_frequency = seconds(5)});
  log.Line("plan", "held");  // 12 bytes
  log.Error("runner", "errors are never held");
  EXPECT_EQ(out.Take(), "");
  EXPECT_EQ(err.Take(), "[runner] errors are never held\n");

  clock.Advance(seconds(4));
  log.FlushIfDue();
  EXPECT_EQ(out.Take(), "") << "written before the flush frequency passed";
  clock.Advance(seconds(1));
  log.FlushIfDue();
  EXPECT_EQ(out.Take(), "[plan] held\n");

  log.Line("plan", "0123456789");  // 18 bytes: held
  EXPECT_EQ(out.Take(), "");
  log.Line("plan", "abcdefghij");  // 36 bytes: past the buffer, written at once
  EXPECT_EQ(out.Take(), "[plan] 0123456789\n[plan] abcdefghij\n");
}

TEST(LogSink, WhatIsHeldIsWrittenWhenTheSinkCloses) {
  Capture out, err;
  ManualClock clock;
  {
    LogSink log(out.WriteFd(), err.WriteFd(), clock,
                {.split_stream = true, .info_buffer_bytes = 1024});
    log.Line("apply", "last words");
    EXPECT_EQ(out.Take(), "");
  }
  EXPECT_EQ(out.Take(), "[apply] last words\n");
}

TEST(LogSink, JsonErrorsAreMarked) {
  Capture out, err;
  ManualClock clock;
  LogSink log(out.WriteFd(), err.WriteFd(), clock, {.json = true});
  log.Error("runner", "boom");
  auto doc = nlohmann::json::parse(out.Take());
  EXPECT_EQ(doc["msg"], "boom");
  EXPECT_EQ(doc["err"], true);
}

TEST(LogSink, TheTeeSeesEveryLineInOrder) {
  Capture out, err;
  ManualClock clock;
  LogSink log(out.WriteFd(), err.WriteFd(), clock, {.split_stream = true});
  std::vector<std::string> teed;
  log.Tee([&teed](std::string_view line) { teed.emplace_back(line); });
  log.Line("init", "a");
  log.Error("runner", "b");
  EXPECT_EQ(teed, (std::vector<std::string>{"[init] a", "[runner] b"}));
}

TEST(Verbosity, VmoduleDecidesForTheStepsItMatchesAndVForTheRest) {
  Verbosity v(1);
  auto modules = Verbosity::ParseVmodule("pl*=3,init=0,?pply=2");
  ASSERT_TRUE(modules);
  v.SetModules(*modules);
  EXPECT_TRUE(v.Enabled("plan", 3));
  EXPECT_FALSE(v.Enabled("plan", 4));
  EXPECT_FALSE(v.Enabled("init", 1)) << "init=0 lowers the level for init";
  EXPECT_TRUE(v.Enabled("apply", 2));
  EXPECT_TRUE(v.Enabled("runner", 1));
  EXPECT_FALSE(v.Enabled("runner", 2));
}

TEST(Verbosity, VmoduleRefusesWhatIsNotPatternEqualsLevel) {
  for (const char* bad : {"x", "=1", "a=", "a=-1", "a=one", "a=1,", "a=1,,b=2"}) {
    auto parsed = Verbosity::ParseVmodule(bad);
    EXPECT_FALSE(parsed) << bad;
  }
  EXPECT_FALSE(Verbosity::ParseVmodule(std::string(300, 'a') + "=1"));
}

TEST(GlobMatch, StarAndQuestionMark) {
  EXPECT_TRUE(GlobMatch("*", ""));
  EXPECT_TRUE(GlobMatch("a*c", "abbbc"));
  EXPECT_TRUE(GlobMatch("a?c", "abc"));
  EXPECT_FALSE(GlobMatch("a?c", "ac"));
  EXPECT_FALSE(GlobMatch("plan", "planx"));
  EXPECT_TRUE(GlobMatch("*a*a*a*b", std::string(2000, 'a') + "b"));
  EXPECT_FALSE(GlobMatch("*a*a*a*b", std::string(2000, 'a')));
}

}  // namespace
}  // namespace berth::runner

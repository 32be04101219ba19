// berth's log as its readers (people, log shippers) take it: one whole line per event, text or
// JSON, with quoting that keeps a value with spaces one value, and lines of many threads never
// torn into each other.
#include "sys/logger.h"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>
#include <vector>

namespace berth::sys {
namespace {

// The lines written to a pipe's write end while write runs.
std::vector<std::string> LinesOf(const std::function<void(int fd)>& write) {
  int fds[2];
  EXPECT_EQ(pipe(fds), 0);
  std::string read;
  std::thread reader([&] {
    char buffer[4096];
    for (ssize_t n; (n = ::read(fds[0], buffer, sizeof buffer)) > 0;)
      read.append(buffer, static_cast<size_t>(n));
  });
  write(fds[1]);
  close(fds[1]);
  reader.join();
  close(fds[0]);
  std::vector<std::string> lines;
  std::istringstream in(read);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

TEST(Logger, TextLinesQuoteWhatWouldSplitAValue) {
  auto lines = LinesOf([](int fd) {
    Logger log(Logger::Format::kText, 0, fd);
    log.Info("run ended", {{"run", "d-1"}, {"why", "it said \"no\" = done"}, {"empty", ""}});
    log.V(1, "hidden at -v=0");
  });
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_NE(lines[0].find(" INFO run ended run=d-1 why=\"it said \\\"no\\\" = done\" empty=\"\""),
            std::string::npos)
      << lines[0];
}

TEST(Logger, JsonLinesAreWholeObjectsWithTheVerboseOnesAtTheirLevel) {
  auto lines = LinesOf([](int fd) {
    Logger log(Logger::Format::kJson, 1, fd);
    log.Warn("odd\nevent", {{"bytes", std::string("\xff\xfe", 2)}});
    log.V(1, "shown at -v=1");
    log.V(2, "hidden at -v=1");
  });
  ASSERT_EQ(lines.size(), 2u);
  auto first = nlohmann::json::parse(lines[0]);
  EXPECT_EQ(first["level"], "WARN");
  EXPECT_EQ(first["event"], "odd\nevent");
  EXPECT_TRUE(first["bytes"].is_string());  // invalid UTF-8 replaced, the line still parses
  EXPECT_EQ(nlohmann::json::parse(lines[1])["level"], "DEBUG");
}

TEST(Logger, LinesOfManyThreadsAreNeverTorn) {
  constexpr int kThreads = 8, kLines = 100;
  // Beyond PIPE_BUF, where the kernel no longer keeps one write to a pipe whole: the logger's
  // own lock is what keeps these lines apart.
  const std::string payload(20000, 'x');
  auto lines = LinesOf([&](int fd) {
    Logger log(Logger::Format::kText, 0, fd);
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t)
      threads.emplace_back([&, t] {
        for (int i = 0; i < kLines; ++i)
          log.Info("line", {{"t", std::to_string(t)}, {"p", payload}});
      });
    for (auto& thread : threads) thread.join();
  });
  ASSERT_EQ(lines.size(), size_t{kThreads * kLines});
  for (const std::string& line : lines) EXPECT_TRUE(line.ends_with(" p=" + payload)) << line.size();
}

// Linking spdlog's shared library beside fmt made fmt print 160.0 as "200" in berth-controller
// (its --kube-api-burst metric): a program that logs formats numbers as written.
TEST(Logger, AProgramThatLogsFormatsNumbersAsWritten) {
  Logger log(Logger::Format::kText, 0, -1);
  log.Info("nowhere");
  EXPECT_EQ(fmt::format("{} {} {}", 160.0, 170.5, 0.005), "160 170.5 0.005");
}

}  // namespace
}  // namespace berth::sys

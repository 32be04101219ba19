// The HTTP API, driven by transcripts (in the spirit of sqllogictest): each file in
// transcripts/ is a sequence of requests against a fresh berthd API over real HTTP, each with
// the status and body fragments it must answer.
//
//   ### what this step shows
//   POST /orgs/acme/runners            method and target
//   Authorization: Bearer $ACME        headers, until a blank line ($ACME, $OTHER: tokens)
//
//   {"id": "r1"}                       body, until the expectation
//   --- 201                            the status
//   "id":"r1"                          fragments the body must contain (!fragment: must not)
//   header ETag: "1"                   a header and its value
#include <gtest/gtest.h>

#include <fstream>
#include <regex>
#include <sstream>

#include "api_without_runners.h"
#include "net/http_client.h"
#include "net/http_server.h"
#include "store/store.h"
#include "sys/files.h"

namespace berth::server {
namespace {

namespace fs = std::filesystem;

struct Step {
  std::string title;
  int line = 0;
  std::string method, target, body;
  std::vector<std::pair<std::string, std::string>> headers;
  int status = 0;
  std::vector<std::string> contains, absent;
  std::vector<std::pair<std::string, std::string>> expect_headers;
};

std::vector<Step> ParseTranscript(const std::string& text) {
  std::vector<Step> steps;
  std::istringstream in(text);
  std::string line;
  int number = 0;
  enum { kNone, kRequest, kHeaders, kBody, kExpect } state = kNone;
  while (std::getline(in, line)) {
    ++number;
    if (line.starts_with("###")) {
      steps.push_back({});
      steps.back().title = line.substr(3);
      steps.back().line = number;
      state = kRequest;
      continue;
    }
    if (state == kNone || (line.starts_with("#") && state != kBody)) continue;
    Step& s = steps.back();
    if (line.starts_with("--- ")) {
      s.status = std::stoi(line.substr(4));
      state = kExpect;
      continue;
    }
    switch (state) {
      case kRequest:
        if (line.empty()) continue;
        s.method = line.substr(0, line.find(' '));
        s.target = line.substr(line.find(' ') + 1);
        state = kHeaders;
        break;
      case kHeaders:
        if (line.empty()) {
          state = kBody;
        } else {
          auto colon = line.find(':');
          s.headers.emplace_back(line.substr(0, colon), line.substr(colon + 2));
        }
        break;
      case kBody:
        s.body += (s.body.empty() ? "" : "\n") + line;
        break;
      case kExpect:
        if (line.empty()) break;
        if (line.starts_with("header ")) {
          auto colon = line.find(':');
          s.expect_headers.emplace_back(line.substr(7, colon - 7), line.substr(colon + 2));
        } else if (line.starts_with("!")) {
          s.absent.push_back(line.substr(1));
        } else {
          s.contains.push_back(line);
        }
        break;
      case kNone:
        break;
    }
  }
  return steps;
}

std::string Substitute(std::string text, const std::map<std::string, std::string>& vars) {
  for (const auto& [name, value] : vars) {
    size_t at;
    while ((at = text.find(name)) != std::string::npos) text.replace(at, name.size(), value);
  }
  return text;
}

std::vector<std::string> TranscriptFiles() {
  std::vector<std::string> files;
  for (const auto& e : fs::directory_iterator(BERTH_TRANSCRIPTS))
    files.push_back(e.path().filename());
  std::sort(files.begin(), files.end());
  return files;
}

class ApiTranscript : public ::testing::TestWithParam<std::string> {};

TEST_P(ApiTranscript, Passes) {
  auto dir = sys::TempDir::Create("api-transcript");
  ASSERT_TRUE(dir);
  auto store = store::OpenStore("sqlite:" + (dir->Path() / "berth.db").string());
  ASSERT_TRUE(store) << store.error().ToString();
  ASSERT_TRUE((*store)->CreateOrganization("acme"));
  ASSERT_TRUE((*store)->CreateOrganization("other"));
  auto acme = IssueToken(**store, "acme", "test");
  auto other = IssueToken(**store, "other", "test");
  ASSERT_TRUE(acme && other);
  ApiWithoutRunners api(**store);
  auto server =
      net::StartHttpServer({}, [&api](const net::ServerRequest& r) { return api.Handle(r); });
  ASSERT_TRUE(server) << server.error().ToString();
  std::string base = "http://127.0.0.1:" + std::to_string((*server)->Port());
  std::map<std::string, std::string> vars = {
      {"$ACME", *acme}, {"$OTHER", *other}, {"$BIG", std::string(2 << 20, 'x')}};
  auto text = sys::ReadFile(fs::path(BERTH_TRANSCRIPTS) / GetParam());
  ASSERT_TRUE(text);
  auto http = net::MakeCurlHttpClient();
  for (const auto& step : ParseTranscript(*text)) {
    SCOPED_TRACE(GetParam() + ":" + std::to_string(step.line) + " " + step.title);
    net::HttpRequest request{.method = step.method, .url = base + Substitute(step.target, vars)};
    for (const auto& [name, value] : step.headers)
      request.headers.emplace_back(name, Substitute(value, vars));
    request.body = Substitute(step.body, vars);
    auto response = http->Send(request);
    ASSERT_TRUE(response) << response.error().ToString();
    EXPECT_EQ(response->status, step.status) << response->body;
    for (const auto& fragment : step.contains) {
      EXPECT_NE(response->body.find(Substitute(fragment, vars)), std::string::npos)
          << "missing " << fragment << " in " << response->body;
    }
    for (const auto& fragment : step.absent) {
      EXPECT_EQ(response->body.find(Substitute(fragment, vars)), std::string::npos)
          << "unexpected " << fragment << " in " << response->body;
    }
    for (const auto& [name, value] : step.expect_headers) {
      std::string lower = name;
      for (auto& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      EXPECT_EQ(response->headers[lower], value) << name;
    }
  }
  (*server)->Stop();
}

INSTANTIATE_TEST_SUITE_P(Files, ApiTranscript, ::testing::ValuesIn(TranscriptFiles()),
                         [](const auto& row) {
                           std::string n = row.param.substr(0, row.param.find('.'));
                           for (auto& c : n)
                             c = std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
                           return n;
                         });

}  // namespace
}  // namespace berth::server

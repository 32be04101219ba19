// Browser sessions through the API as berthd builds it: a token or a one-time login code is
// exchanged for a session whose secret only its cookie holds; a session's changes need its
// CSRF token; it has its token's scopes and never outlives it; logout and revoking the token
// end it.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "api_fixture.h"

namespace berth::server {
namespace {

using nlohmann::json;

struct Session {
  std::string secret;  // what the browser's cookie holds
  std::string csrf;
  json answer;
  std::string set_cookie;
};

class ApiSessions : public ApiFixture {
 protected:
  ApiOptions Options() override { return {.clock = &clock_}; }

  // Opens a session with a bearer token (or login code).
  Session Open(const std::string& bearer) {
    auto opened = CallAs(bearer, "POST", "/orgs/acme/sessions");
    EXPECT_EQ(opened.status, 201) << opened.body;
    Session s{.answer = json::parse(opened.body, nullptr, false),
              .set_cookie = opened.headers["Set-Cookie"]};
    const std::string prefix = "berth_session=";
    EXPECT_TRUE(s.set_cookie.starts_with(prefix)) << s.set_cookie;
    s.secret = s.set_cookie.substr(prefix.size(), s.set_cookie.find(';') - prefix.size());
    if (s.answer.is_object()) s.csrf = s.answer.value("csrf_token", "");
    return s;
  }
  // A request as a browser sends it: the cookie, and the CSRF header when csrf is not empty.
  net::ServerResponse AsBrowser(const std::string& cookie_header, const std::string& method,
                                const std::string& target, const std::string& csrf = "",
                                const std::string& body = "") {
    net::ServerRequest request{.method = method, .target = target, .body = body};
    request.headers = {{"cookie", cookie_header}};
    if (!csrf.empty()) request.headers["x-berth-csrf"] = csrf;
    if (!body.empty()) request.headers["content-type"] = "application/json";
    return api_->Handle(request);
  }
  net::ServerResponse As(const Session& s, const std::string& method, const std::string& target,
                         const std::string& csrf = "", const std::string& body = "") {
    return AsBrowser("theme=dark; berth_session=" + s.secret, method, target, csrf, body);
  }
  std::string NewToken(const json& body) {
    auto made = Call("POST", "/orgs/acme/tokens", body.dump());
    EXPECT_EQ(made.status, 201) << made.body;
    return json::parse(made.body)["secret"];
  }
  static std::string Message(const net::ServerResponse& r) {
    return json::parse(r.body, nullptr, false)["error"].value("message", "");
  }

  ManualClock clock_;
};

TEST_F(ApiSessions, ATokenOpensASessionWhoseSecretOnlyItsCookieHolds) {
  Session s = Open(token_);
  EXPECT_NE(s.set_cookie.find("; Path=/;"), std::string::npos) << s.set_cookie;
  EXPECT_NE(s.set_cookie.find("; Max-Age=43200;"), std::string::npos) << s.set_cookie;
  EXPECT_NE(s.set_cookie.find("; HttpOnly"), std::string::npos) << s.set_cookie;
  EXPECT_NE(s.set_cookie.find("; SameSite=Strict"), std::string::npos) << s.set_cookie;
  EXPECT_EQ(s.set_cookie.find("Secure"), std::string::npos) << "not served over TLS here";
  EXPECT_TRUE(s.answer["id"].get<std::string>().starts_with("ses-")) << s.answer;
  EXPECT_EQ(s.answer["scopes"], json({"admin"}));
  EXPECT_EQ(s.answer.dump().find(s.secret), std::string::npos) << "the secret is the cookie's";
  EXPECT_NE(s.csrf, s.secret);

  auto read = As(s, "GET", "/orgs/acme/projects/web");
  EXPECT_EQ(read.status, 200) << read.body;
  // The session's secret is no bearer token; an API token is no cookie.
  EXPECT_EQ(CallAs(s.secret, "GET", "/orgs/acme/projects/web").status, 401);
  EXPECT_EQ(AsBrowser("berth_session=" + token_, "GET", "/orgs/acme/projects/web").status, 401);
  // A bearer token beside a cookie is what the request is made with.
  net::ServerRequest both{.method = "GET", .target = "/orgs/acme/projects/web"};
  both.headers = {{"authorization", "Bearer nope"}, {"cookie", "berth_session=" + s.secret}};
  EXPECT_EQ(api_->Handle(both).status, 401);

  auto current = As(s, "GET", "/orgs/acme/session");
  ASSERT_EQ(current.status, 200) << current.body;
  EXPECT_EQ(json::parse(current.body)["csrf_token"], s.csrf);
  EXPECT_EQ(Call("GET", "/orgs/acme/session").status, 404) << "a bearer token is no session";
  auto listed = Call("GET", "/orgs/acme/tokens");
  EXPECT_NE(listed.body.find(s.answer["id"].get<std::string>()), std::string::npos);
  EXPECT_EQ(listed.body.find(s.secret), std::string::npos);
  // A session opens no other.
  EXPECT_EQ(As(s, "POST", "/orgs/acme/sessions", s.csrf).status, 409);
}

TEST_F(ApiSessions, ASessionsChangesNeedItsCsrfToken) {
  Session s = Open(token_);
  Session other = Open(token_);
  const std::string project = R"({"id":"shop"})";
  auto forged = As(s, "POST", "/orgs/acme/projects", "", project);
  EXPECT_EQ(forged.status, 403);
  EXPECT_NE(Message(forged).find("X-Berth-CSRF"), std::string::npos) << forged.body;
  EXPECT_EQ(As(s, "POST", "/orgs/acme/projects", other.csrf, project).status, 403);
  EXPECT_EQ(As(s, "POST", "/orgs/acme/projects", s.csrf + "0", project).status, 403);
  EXPECT_EQ(Call("GET", "/orgs/acme/projects/shop").status, 404) << "a refused change was made";
  EXPECT_EQ(As(s, "DELETE", "/orgs/acme/session").status, 403) << "logout is a change too";

  auto made = As(s, "POST", "/orgs/acme/projects", s.csrf, project);
  EXPECT_EQ(made.status, 201) << made.body;
}

TEST_F(ApiSessions, ASessionHasItsTokensScopesAndNeverOutlivesIt) {
  std::string reader = NewToken({{"scopes", {"read"}}, {"expires_in_seconds", 3600}});
  Session s = Open(reader);
  EXPECT_EQ(s.answer["scopes"], json({"read"}));
  EXPECT_NE(s.set_cookie.find("; Max-Age=3600;"), std::string::npos) << s.set_cookie;
  auto denied = As(s, "POST", "/orgs/acme/projects", s.csrf, R"({"id":"shop"})");
  EXPECT_EQ(denied.status, 403);
  EXPECT_NE(Message(denied).find("needs scope configure"), std::string::npos) << denied.body;

  Session admin = Open(token_);
  clock_.Advance(std::chrono::seconds(3601));
  EXPECT_EQ(As(s, "GET", "/orgs/acme/projects/web").status, 401) << "it outlived its token";
  EXPECT_EQ(As(admin, "GET", "/orgs/acme/projects/web").status, 200);
  clock_.Advance(std::chrono::hours(11));
  EXPECT_EQ(As(admin, "GET", "/orgs/acme/projects/web").status, 401) << "12 hours at most";
}

TEST_F(ApiSessions, ALoginCodeOpensOneSessionAndNothingElse) {
  auto made = Call("POST", "/orgs/acme/login-codes");
  ASSERT_EQ(made.status, 201) << made.body;
  std::string code = json::parse(made.body)["code"];
  auto elsewhere = CallAs(code, "GET", "/orgs/acme/projects/web");
  EXPECT_EQ(elsewhere.status, 401);
  EXPECT_NE(Message(elsewhere).find("only opens a session"), std::string::npos) << elsewhere.body;
  EXPECT_EQ(CallAs(code, "POST", "/orgs/acme/login-codes").status, 401);

  Session s = Open(code);
  EXPECT_EQ(s.answer["scopes"], json({"admin"}));
  EXPECT_EQ(As(s, "GET", "/orgs/acme/projects/web").status, 200);
  EXPECT_EQ(CallAs(code, "POST", "/orgs/acme/sessions").status, 401) << "a code opens one";
  // Neither a session nor a code makes codes.
  EXPECT_EQ(As(s, "POST", "/orgs/acme/login-codes", s.csrf).status, 409);

  std::string late = json::parse(Call("POST", "/orgs/acme/login-codes").body)["code"];
  clock_.Advance(std::chrono::seconds(121));
  EXPECT_EQ(CallAs(late, "POST", "/orgs/acme/sessions").status, 401) << "2 minutes at most";
}

TEST_F(ApiSessions, LogoutAndRevokingItsTokenEndASession) {
  Session s = Open(token_);
  auto out = As(s, "DELETE", "/orgs/acme/session", s.csrf);
  EXPECT_EQ(out.status, 204) << out.body;
  EXPECT_NE(out.headers["Set-Cookie"].find("berth_session=; Path=/; Max-Age=0;"), std::string::npos)
      << out.headers["Set-Cookie"];
  auto after = As(s, "GET", "/orgs/acme/projects/web");
  EXPECT_EQ(after.status, 401);
  EXPECT_NE(Message(after).find("log in again"), std::string::npos) << after.body;

  auto made = Call("POST", "/orgs/acme/tokens", json{{"scopes", {"deploy"}}}.dump());
  json token = json::parse(made.body);
  Session direct = Open(token["secret"]);
  std::string code =
      json::parse(CallAs(token["secret"], "POST", "/orgs/acme/login-codes").body)["code"];
  Session by_code = Open(code);
  Session unrelated = Open(token_);
  ASSERT_EQ(Call("DELETE", "/orgs/acme/tokens/" + token["id"].get<std::string>()).status, 204);
  EXPECT_EQ(As(direct, "GET", "/orgs/acme/projects/web").status, 401);
  EXPECT_EQ(As(by_code, "GET", "/orgs/acme/projects/web").status, 401);
  EXPECT_EQ(As(unrelated, "GET", "/orgs/acme/projects/web").status, 200);
}

TEST_F(ApiSessions, ACookieIsSecureWhenBerthdServesTls) {
  Start({.clock = &clock_, .secure_cookies = true});
  EXPECT_NE(Open(token_).set_cookie.find("; Secure"), std::string::npos);
}

TEST_F(ApiSessions, HostileCookieHeadersAreRefusedNotFollowed) {
  Session s = Open(token_);
  for (const std::string& header :
       {std::string("berth_session"), std::string(";;;;"), std::string("berth_session="),
        std::string(" berth_session = " + s.secret), std::string(100000, ';'),
        "berth_session=" + std::string(100000, 'x'), "other=" + s.secret}) {
    EXPECT_EQ(AsBrowser(header, "GET", "/orgs/acme/projects/web").status, 401)
        << header.substr(0, 40);
  }
  EXPECT_EQ(
      AsBrowser("a=b;berth_session=" + s.secret + ";c=d", "GET", "/orgs/acme/projects/web").status,
      200);
}

}  // namespace
}  // namespace berth::server

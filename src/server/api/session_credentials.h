// What tells a browser session apart from an API token: its id, the cookie that carries its
// secret, and the CSRF token every state-changing request of a session must carry.
#pragma once

#include <map>
#include <string>
#include <string_view>

namespace berth::server {

inline constexpr std::string_view kSessionCookie = "berth_session";
inline constexpr std::string_view kCsrfHeader = "x-berth-csrf";  // lower-cased, as requests have
// What a token is, by its id: what each may do is checked by it.
inline constexpr std::string_view kApiTokenIdPrefix = "tok-";
inline constexpr std::string_view kSessionIdPrefix = "ses-";
inline constexpr std::string_view kLoginCodeIdPrefix = "login-";

// Derived from the session's secret: only who was given the session has it, and it gives
// away nothing of the cookie (which scripts cannot read).
std::string CsrfToken(std::string_view session_secret);

// The value of the cookie `name` in a Cookie header; empty when it has none.
std::string CookieValue(std::string_view header, std::string_view name);

// The secret an API request carries: its bearer token, else its session cookie's.
struct ApiSecret {
  std::string secret;  // empty: none
  bool by_cookie = false;
};
ApiSecret ApiSecretOf(const std::map<std::string, std::string>& headers);

}  // namespace berth::server

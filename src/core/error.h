// The one error vocabulary of berth: a kind, a message that names the field and the rule, and
// context. Modules return Result<T> across their boundaries; exceptions never cross them.
#pragma once

#include <boost/system/result.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace berth {

// Canonical kinds (after Abseil's status codes). Each maps once to an HTTP status.
enum class ErrorKind {
  kInvalidArgument,  // bad input: the message names the field and the rule
  kNotFound,
  kAlreadyExists,
  kConflict,  // a concurrent change or a state that forbids the request
  kFailedPrecondition,
  kUnauthenticated,
  kPermissionDenied,
  kResourceExhausted,  // quota, rate limit, size limit
  kUnavailable,        // a peer that may come back: retry
  kDeadlineExceeded,
  kCancelled,
  kInternal,  // a broken invariant or an unexpected failure of the system
};

// Everything a kind means to the outside, in one table (core/error.cpp): its name in JSON
// error bodies, the HTTP status berthd answers with, and the exit code of `berth` when the
// server answers with it.
struct ErrorKindInfo {
  ErrorKind kind;
  std::string_view name;
  int http_status;
  int cli_exit;
};
const ErrorKindInfo& Describe(ErrorKind kind);
std::optional<ErrorKind> ParseErrorKind(std::string_view name);
// The kind an HTTP status stands for, for an answer whose body names none (a proxy's 502).
ErrorKind ErrorKindForStatus(int status);

inline std::string_view ErrorKindName(ErrorKind kind) { return Describe(kind).name; }
inline int HttpStatus(ErrorKind kind) { return Describe(kind).http_status; }

// One offending value of a request: its JSON path and the rule it broke.
struct FieldError {
  std::string path;  // "$.runner_configuration.cluster.name"
  std::string rule;  // "is required", "must be one of: ..."
};
using FieldErrors = std::vector<FieldError>;

struct Error {
  ErrorKind kind = ErrorKind::kInternal;
  std::string message;
  std::string context;  // where it happened (a path, a URL, a step); may be empty
  FieldErrors fields;   // for kInvalidArgument on a document: every field that is wrong
  std::string reason;   // a machine-readable cause within the kind ("Expired", "QuotaExceeded")

  // "message (context)" for logs and CLI output.
  std::string ToString() const;
};

inline Error MakeError(ErrorKind kind, std::string message, std::string context = {}) {
  return Error{kind, std::move(message), std::move(context), {}, {}};
}

// kInvalidArgument for a document with these field errors; the message lists them all
// ("what: $.a is required; $.b must be ...") for a reader without the fields.
Error InvalidFields(std::string_view what, FieldErrors fields);

// Boost.System's result behaves as std::expected; see cmake/Dependencies.cmake for why. It is
// [[nodiscard]]: a result nobody looks at is an error nobody handles, so the build refuses it
// (a caller that means to drop one says so with IgnoreError and a reason).
template <class T>
class [[nodiscard]] Result : public boost::system::result<T, Error> {
 public:
  using boost::system::result<T, Error>::result;
};

// Drops a result on purpose; `why` is for the reader (best-effort cleanup, a log nobody
// waits for).
template <class T>
void IgnoreError(const Result<T>& /*result*/, std::string_view /*why*/) {}

// A success holding value, for types (such as nlohmann::json) that could also be built from an
// Error and so make the implicit conversion ambiguous.
template <class T>
Result<T> Ok(T value) {
  return Result<T>(boost::system::in_place_value, std::move(value));
}

// Called by Result<T>::value() on an error: a caller that did not check gets an exception
// carrying the message instead of undefined behaviour.
// NOLINTNEXTLINE(readability-identifier-naming): the name Boost looks up.
[[noreturn]] void throw_exception_from_error(const Error& error,
                                             const boost::source_location& location);

}  // namespace berth

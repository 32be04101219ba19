// The table of berth's error kinds: names, HTTP statuses, exit codes.
#include "core/error.h"

#include <array>
#include <stdexcept>

#include "core/exit_codes.h"

namespace berth {

namespace {

using exit_code::kCliConflict;
using exit_code::kCliNotFound;
using exit_code::kCliRefused;
using exit_code::kCliUnavailable;

// clang-format off
constexpr std::array<ErrorKindInfo, 12> kKinds{{
    // kind                            name                  HTTP  berth exits
    {ErrorKind::kInvalidArgument,    "InvalidArgument",    400, kCliRefused},
    {ErrorKind::kNotFound,           "NotFound",           404, kCliNotFound},
    {ErrorKind::kAlreadyExists,      "AlreadyExists",      409, kCliConflict},
    {ErrorKind::kConflict,           "Conflict",           409, kCliConflict},
    {ErrorKind::kFailedPrecondition, "FailedPrecondition", 409, kCliConflict},
    {ErrorKind::kUnauthenticated,    "Unauthenticated",    401, kCliRefused},
    {ErrorKind::kPermissionDenied,   "PermissionDenied",   403, kCliRefused},
    {ErrorKind::kResourceExhausted,  "ResourceExhausted",  429, kCliRefused},
    {ErrorKind::kUnavailable,        "Unavailable",        503, kCliUnavailable},
    {ErrorKind::kDeadlineExceeded,   "DeadlineExceeded",   504, kCliUnavailable},
    {ErrorKind::kCancelled,          "Cancelled",          499, kCliRefused},
    {ErrorKind::kInternal,           "Internal",           500, kCliUnavailable},
}};
// clang-format on

}  // namespace

const ErrorKindInfo& Describe(ErrorKind kind) {
  for (const ErrorKindInfo& info : kKinds) {
    if (info.kind == kind) return info;
  }
  return kKinds.back();  // kInternal
}

std::optional<ErrorKind> ParseErrorKind(std::string_view name) {
  for (const ErrorKindInfo& info : kKinds) {
    if (info.name == name) return info.kind;
  }
  return std::nullopt;
}

ErrorKind ErrorKindForStatus(int status) {
  if (status == 404) return ErrorKind::kNotFound;
  if (status == 409 || status == 412) return ErrorKind::kConflict;
  if (status >= 500) return ErrorKind::kUnavailable;
  return ErrorKind::kInvalidArgument;
}

std::string Error::ToString() const {
  if (context.empty()) return message;
  return message + " (" + context + ")";
}

void throw_exception_from_error(const Error& error, const boost::source_location& /*location*/) {
  throw std::runtime_error(error.ToString());
}

Error InvalidFields(std::string_view what, FieldErrors fields) {
  std::string message(what);
  char separator = ':';
  for (const auto& field : fields) {
    message += separator;
    message += " " + field.path + " " + field.rule;
    separator = ';';
  }
  Error error = MakeError(ErrorKind::kInvalidArgument, std::move(message));
  error.fields = std::move(fields);
  return error;
}

}  // namespace berth

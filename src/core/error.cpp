// Names and HTTP statuses of berth's error kinds.
#include "core/error.h"

#include <stdexcept>

namespace berth {

std::string_view ErrorKindName(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::kInvalidArgument:
      return "InvalidArgument";
    case ErrorKind::kNotFound:
      return "NotFound";
    case ErrorKind::kAlreadyExists:
      return "AlreadyExists";
    case ErrorKind::kConflict:
      return "Conflict";
    case ErrorKind::kFailedPrecondition:
      return "FailedPrecondition";
    case ErrorKind::kUnauthenticated:
      return "Unauthenticated";
    case ErrorKind::kPermissionDenied:
      return "PermissionDenied";
    case ErrorKind::kResourceExhausted:
      return "ResourceExhausted";
    case ErrorKind::kUnavailable:
      return "Unavailable";
    case ErrorKind::kDeadlineExceeded:
      return "DeadlineExceeded";
    case ErrorKind::kCancelled:
      return "Cancelled";
    case ErrorKind::kInternal:
      return "Internal";
  }
  return "Internal";
}

int HttpStatus(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::kInvalidArgument:
      return 400;
    case ErrorKind::kUnauthenticated:
      return 401;
    case ErrorKind::kPermissionDenied:
      return 403;
    case ErrorKind::kNotFound:
      return 404;
    case ErrorKind::kAlreadyExists:
    case ErrorKind::kConflict:
    case ErrorKind::kFailedPrecondition:
      return 409;
    case ErrorKind::kResourceExhausted:
      return 429;
    case ErrorKind::kCancelled:
      return 499;
    case ErrorKind::kUnavailable:
      return 503;
    case ErrorKind::kDeadlineExceeded:
      return 504;
    case ErrorKind::kInternal:
      return 500;
  }
  return 500;
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

#include "core/inflate.h"

#include <zlib.h>

namespace berth {
namespace {

Error Refused(Compression format, const std::string& rule) {
  return MakeError(
      ErrorKind::kFailedPrecondition,
      std::string(format == Compression::kGzip ? "gzip" : "deflate") + " data " + rule);
}

}  // namespace

Result<std::string> Inflate(std::string_view data, Compression format, uint64_t max_bytes) {
  if (data.size() > UINT32_MAX) return Refused(format, "is larger than 4 GiB");
  std::string out;
  z_stream z{};
  int window_bits = format == Compression::kGzip ? 16 + MAX_WBITS : -MAX_WBITS;
  if (inflateInit2(&z, window_bits) != Z_OK) return Refused(format, "cannot be read: no zlib");
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  z.avail_in = static_cast<uInt>(data.size());
  char buffer[65536];
  while (true) {
    z.next_out = reinterpret_cast<Bytef*>(buffer);
    z.avail_out = sizeof buffer;
    int rc = inflate(&z, Z_NO_FLUSH);
    out.append(buffer, sizeof buffer - z.avail_out);
    if (out.size() > max_bytes) {
      inflateEnd(&z);
      return Refused(format, "inflates to more than " + std::to_string(max_bytes) + " bytes");
    }
    if (rc == Z_STREAM_END) {
      // A gzip file may hold several members; a zip entry is one stream.
      if (z.avail_in == 0 || format == Compression::kRawDeflate) break;
      inflateReset(&z);
      continue;
    }
    if (rc != Z_OK) {
      inflateEnd(&z);
      return Refused(format, "is not valid");
    }
    if (z.avail_in == 0 && z.avail_out != 0) {
      inflateEnd(&z);
      return Refused(format, "ends early");
    }
  }
  inflateEnd(&z);
  return out;
}

Result<std::string> Gzip(std::string_view data, GzipLevel level) {
  if (data.size() > UINT32_MAX)
    return MakeError(ErrorKind::kInvalidArgument, "gzip input over 4 GiB");
  z_stream z{};
  const int compression = level == GzipLevel::kFast ? Z_BEST_SPEED : Z_BEST_COMPRESSION;
  if (deflateInit2(&z, compression, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY) != Z_OK)
    return MakeError(ErrorKind::kInternal, "cannot start gzip");
  std::string out(deflateBound(&z, static_cast<uLong>(data.size())), '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  z.avail_in = static_cast<uInt>(data.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  const int rc = deflate(&z, Z_FINISH);
  out.resize(z.total_out);
  deflateEnd(&z);
  if (rc != Z_STREAM_END) return MakeError(ErrorKind::kInternal, "gzip failed");
  return out;
}

}  // namespace berth

// Writing plan files by hand for the tests: protobuf fields, and a zip with a CRC-32 and the
// sizes in the central directory only (as Go's zip writer leaves them), stored or deflated.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace berth::tf::testing {

std::string Varint(uint32_t number, uint64_t value);
std::string Bytes(uint32_t number, std::string_view bytes);

struct ZipEntrySpec {
  std::string name;
  std::string content;
  bool deflate = true;
  int64_t declared_size = -1;  // what the directory says the size is; -1: the true size
};
std::string Zip(const std::vector<ZipEntrySpec>& entries);

// A plan file (format version 3) of the given ResourceInstanceChange messages.
std::string PlanFile(const std::vector<std::string>& resource_changes, uint64_t version = 3);
// A ResourceInstanceChange: address, action (planproto's number) and msgpack values.
std::string ResourceChange(std::string_view address, uint64_t action,
                           const std::vector<std::string>& values);

}  // namespace berth::tf::testing

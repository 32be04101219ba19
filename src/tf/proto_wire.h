// Reading Protocol Buffers' wire format field by field, bounds-checked: enough to read a
// message whose field numbers are known without generated code.
#pragma once

#include <cstdint>
#include <string_view>

namespace berth::tf {

struct ProtoField {
  uint32_t number = 0;
  uint64_t varint = 0;     // wire type 0 (and fixed32/fixed64 values)
  std::string_view bytes;  // wire type 2: strings, bytes, embedded messages
  bool is_bytes = false;
};

class ProtoReader {
 public:
  explicit ProtoReader(std::string_view message) : rest_(message) {}

  // The next field into *field; false at the end of the message or on malformed input (then
  // Failed() says so). Groups (wire types 3 and 4) are malformed: proto3 has none.
  bool Next(ProtoField* field);
  bool Failed() const { return failed_; }

 private:
  bool Varint(uint64_t* value);

  std::string_view rest_;
  bool failed_ = false;
};

}  // namespace berth::tf

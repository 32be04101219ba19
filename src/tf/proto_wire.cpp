// https://protobuf.dev/programming-guides/encoding/
#include "tf/proto_wire.h"

namespace berth::tf {

bool ProtoReader::Varint(uint64_t* value) {
  *value = 0;
  for (int shift = 0; shift < 64; shift += 7) {
    if (rest_.empty()) return false;
    auto byte = static_cast<unsigned char>(rest_.front());
    rest_.remove_prefix(1);
    *value |= static_cast<uint64_t>(byte & 0x7f) << shift;
    if ((byte & 0x80) == 0) return true;
  }
  return false;  // more than ten bytes
}

bool ProtoReader::Next(ProtoField* field) {
  if (rest_.empty() || failed_) return false;
  uint64_t key = 0;
  failed_ = true;  // until the field is read whole
  if (!Varint(&key) || (key >> 3) == 0 || (key >> 3) > UINT32_MAX) return false;
  *field = ProtoField{.number = static_cast<uint32_t>(key >> 3)};
  switch (key & 7) {
    case 0:
      if (!Varint(&field->varint)) return false;
      break;
    case 1:
    case 5: {
      size_t width = (key & 7) == 1 ? 8 : 4;
      if (rest_.size() < width) return false;
      for (size_t i = width; i-- > 0;)
        field->varint = field->varint << 8 | static_cast<unsigned char>(rest_[i]);
      rest_.remove_prefix(width);
      break;
    }
    case 2: {
      uint64_t length = 0;
      if (!Varint(&length) || length > rest_.size()) return false;
      field->bytes = rest_.substr(0, length);
      field->is_bytes = true;
      rest_.remove_prefix(length);
      break;
    }
    default:
      return false;
  }
  failed_ = false;
  return true;
}

}  // namespace berth::tf

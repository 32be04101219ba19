// libFuzzer target: the msgpack of a plan's values (go-cty's encoding), decoded without a
// schema. It must decode or refuse, never crash or recurse without bound; what it decodes
// dumps as JSON.
#include <cstdint>
#include <string_view>

#include "tf/cty_msgpack.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto value =
      berth::tf::DecodeCtyMsgpack(std::string_view(reinterpret_cast<const char*>(data), size));
  if (value) (void)value->dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  return 0;
}

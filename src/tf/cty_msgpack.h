// The msgpack in which tofu's plan file holds values (go-cty's encoding), decoded without a
// provider schema for people to read: maps become objects, arrays arrays, a dynamic value's
// [type, value] pair its value, and an unknown value (known only after apply) a marker.
// Every byte is hostile: sizes are checked against what is left, and nesting is bounded.
#pragma once

#include <nlohmann/json.hpp>
#include <string_view>

#include "core/error.h"

namespace berth::tf {

// What stands for a value the plan cannot show: known only after apply, or sensitive. Objects
// with a key cty never writes ("\0"), so that no decoded value is mistaken for one by accident.
nlohmann::json UnknownMarker();
nlohmann::json SensitiveMarker();
bool IsUnknownMarker(const nlohmann::json& value);
bool IsSensitiveMarker(const nlohmann::json& value);

// kInvalidArgument naming what is wrong when bytes are not one whole msgpack value.
Result<nlohmann::json> DecodeCtyMsgpack(std::string_view bytes);

}  // namespace berth::tf

// Base64 (RFC 4648 section 4, with padding): kubeconfig data fields, Secret data, JWS parts use
// the URL alphabet (section 5) without padding.
#pragma once

#include <string>
#include <string_view>

#include "core/error.h"

namespace berth {

enum class Base64Alphabet { kStandard, kUrlNoPadding };

std::string Base64Encode(std::string_view data,
                         Base64Alphabet alphabet = Base64Alphabet::kStandard);
// Rejects characters outside the alphabet, bad padding and bits left over in the last symbol.
Result<std::string> Base64Decode(std::string_view text,
                                 Base64Alphabet alphabet = Base64Alphabet::kStandard);

}  // namespace berth

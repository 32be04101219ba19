// JSON from outside berthd, parsed with a bound on its nesting: a document deeper than the
// bound is refused before any of it is built, so nothing that walks a parsed document
// recursively (validation, merge patches, dump) can overflow the stack on hostile input.
#pragma once

#include <nlohmann/json.hpp>
#include <string_view>

#include "core/error.h"

namespace berth {

// API bodies, results, tokens: berth's own documents are a handful of levels deep.
inline constexpr int kMaxJsonDepth = 64;
// TF's own documents (state, outputs) nest a resource's attributes: more room, still bounded.
inline constexpr int kMaxTfDocumentDepth = 256;

// The document, or kInvalidArgument naming the rule broken (not JSON; deeper than max_depth).
Result<nlohmann::json> ParseBoundedJson(std::string_view text, int max_depth = kMaxJsonDepth);
// The document, or null when it is refused: for callers that check its shape next.
nlohmann::json ParseBoundedJsonOrNull(std::string_view text, int max_depth = kMaxJsonDepth);

}  // namespace berth

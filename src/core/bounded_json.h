// JSON from outside berthd, parsed with bounds on its nesting and its size: a document deeper
// than the bound is refused before any of it is built, so nothing that walks a parsed document
// recursively (validation, merge patches, dump) can overflow the stack on hostile input; one
// of more values than the bound is refused before it is built whole, so a body of two-byte
// values (`[{},{},...]`, some forty times its size once built) cannot take berthd's memory.
#pragma once

#include <cstddef>
#include <nlohmann/json.hpp>
#include <string_view>

#include "core/error.h"

namespace berth {

struct JsonBounds {
  int depth = 0;
  size_t values = 0;  // every object, array, string, number, boolean and null counts one
};

// API bodies (1 MiB), results, tokens: berth's own documents are a handful of levels deep.
inline constexpr JsonBounds kApiJson{.depth = 64, .values = 100'000};
// TF's own documents (outputs, plan and apply events, kept states) nest a resource's
// attributes: more room, still bounded (a document of this many values takes about 100 MiB
// once built).
inline constexpr JsonBounds kTfDocument{.depth = 256, .values = 1'000'000};

// The document, or kInvalidArgument naming the rule broken (not JSON; too deep; too many values).
Result<nlohmann::json> ParseBoundedJson(std::string_view text, JsonBounds bounds = kApiJson);
// The document, or null when it is refused: for callers that check its shape next.
nlohmann::json ParseBoundedJsonOrNull(std::string_view text, JsonBounds bounds = kApiJson);

// Whether text is JSON no deeper than max_depth, read as a stream: nothing is built, so a
// document berthd only keeps (a state) costs no memory beyond one of its strings to check.
Result<void> CheckBoundedJson(std::string_view text, int max_depth);

}  // namespace berth

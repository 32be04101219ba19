// The OpenAPI 3 description of the API, kept in docs/openapi.json and compiled in.
#pragma once

#include <string_view>

namespace berth::server {

std::string_view OpenApiDocument();

}  // namespace berth::server

// docs/openapi.json's runner schemas come from the schemas berthd validates runners with: one
// component per runner type and per state storage type, and the runner bodies' two fields as a
// oneOf over them. tests/server/openapi_test.cpp holds the document to this (and
// BERTH_UPDATE_DOCS=1 rewrites it).
#pragma once

#include <nlohmann/json.hpp>

namespace berth::server {

// document with its runner components and the runner bodies' references to them replaced.
nlohmann::ordered_json WithRunnerSchemas(nlohmann::ordered_json document);

}  // namespace berth::server

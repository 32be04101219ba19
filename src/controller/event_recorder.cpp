#include "controller/event_recorder.h"

#include "core/time_format.h"
#include "crypto/random.h"

namespace berth::controller {

void EventRecorder::Record(const launch::TerraformObject& object, bool warning,
                           std::string_view reason, std::string_view action,
                           std::string_view note) {
  constexpr size_t kNoteBytes = 1024;  // the API refuses a longer note
  nlohmann::json event = {
      {"apiVersion", "events.k8s.io/v1"},
      {"kind", "Event"},
      {"metadata", {{"name", object.name + "." + crypto::RandomId(16)}, {"namespace", object.ns}}},
      {"eventTime", FormatRfc3339(std::chrono::system_clock::now(), 6)},
      {"reportingController", "berth.dev/controller"},
      {"reportingInstance", instance_.substr(0, 128)},
      {"action", action},
      {"reason", reason},
      {"note", note.substr(0, kNoteBytes)},
      {"type", warning ? "Warning" : "Normal"},
      {"regarding",
       {{"apiVersion", launch::kTerraformApiVersion},
        {"kind", launch::kTerraformKind},
        {"namespace", object.ns},
        {"name", object.name},
        {"uid", object.uid}}}};
  auto posted = api_.Create(kube::kEvents, object.ns, event);
  (void)posted;  // best effort, as said above
}

}  // namespace berth::controller

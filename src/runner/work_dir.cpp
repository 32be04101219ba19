// Laying out the module, the environment, and the secrets to mask.
#include "runner/work_dir.h"

#include <re2/re2.h>

#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>

#include "core/bounded_json.h"
#include "core/tf_variables.h"
#include "runner/module_archive.h"
#include "runner/prepared_init.h"
#include "sys/files.h"

namespace berth::runner {
namespace {

namespace fs = std::filesystem;

Error Unavailable(std::string message, std::string context = {}) {
  return MakeError(ErrorKind::kFailedPrecondition, std::move(message), std::move(context));
}

bool IsArchive(const std::string& module) {
  return module.ends_with(".tar.gz") || module.ends_with(".tgz");
}

// --path must stay inside the module.
Result<void> CheckSubPath(const std::string& path) {
  fs::path p(path);
  if (p.is_absolute()) return Unavailable("--path: must be relative to the module", path);
  for (const auto& part : p) {
    if (part == "..") return Unavailable("--path: must not contain \"..\"", path);
  }
  return {};
}

// The variables a .tf.json file declares sensitive: {"variable": {"NAME": {"sensitive": true}}},
// where JSON syntax also lets the top level, the variable block and a variable's body be lists
// of such objects.
void SensitiveInTfJson(const std::string& text, std::vector<std::string>& names) {
  auto doc = ParseBoundedJson(text);
  if (!doc) return;
  auto objects = [](const nlohmann::json& v) {
    std::vector<const nlohmann::json*> out;
    if (v.is_object()) out.push_back(&v);
    if (v.is_array()) {
      for (const auto& item : v) {
        if (item.is_object()) out.push_back(&item);
      }
    }
    return out;
  };
  for (const auto* top : objects(*doc)) {
    if (!top->contains("variable")) continue;
    for (const auto* block : objects((*top)["variable"])) {
      for (const auto& [name, declaration] : block->items()) {
        for (const auto* body : objects(declaration)) {
          auto sensitive = body->find("sensitive");
          if (sensitive != body->end() && *sensitive == true) names.push_back(name);
        }
      }
    }
  }
}

// Names of variables declared with `sensitive = true` in the module's .tf files (a light scan,
// not an HCL parser) and .tf.json files. tofu itself also redacts these values; this keeps them
// out of anything the runner writes even where it did not (a nonsensitive(), a provider).
std::vector<std::string> SensitiveVariables(const fs::path& workdir) {
  static const re2::RE2 kVariable(R"re(variable\s+"([^"]+)"\s*\{)re");
  static const re2::RE2 kSensitive(R"re(\bsensitive\s*=\s*true\b)re");
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(workdir, ec)) {
    std::string file = entry.path().filename().string();
    bool hcl = file.ends_with(".tf"), json = file.ends_with(".tf.json");
    if (!hcl && !json) continue;
    auto text = sys::ReadFile(entry.path());
    if (!text) continue;
    if (json) {
      SensitiveInTfJson(*text, names);
      continue;
    }
    re2::StringPiece rest(*text);
    std::string name;
    while (re2::RE2::FindAndConsume(&rest, kVariable, &name)) {
      size_t open = static_cast<size_t>(rest.data() - text->data());
      int depth = 1;
      size_t i = open;
      for (; i < text->size() && depth > 0; ++i) {
        if ((*text)[i] == '{') ++depth;
        if ((*text)[i] == '}') --depth;
      }
      re2::StringPiece body(text->data() + open, i - open);
      if (re2::RE2::PartialMatch(body, kSensitive)) names.push_back(name);
    }
  }
  return names;
}

}  // namespace

fs::path HomeFolder(const std::vector<std::string>& caller, const WorkDir& dir) {
  const std::string home = Lookup(caller, "HOME");
  return home.empty() ? dir.root : fs::path(home);
}

std::string Lookup(const std::vector<std::string>& env, std::string_view name) {
  for (const auto& entry : env) {
    if (entry.size() > name.size() && entry.compare(0, name.size(), name) == 0 &&
        entry[name.size()] == '=') {
      return entry.substr(name.size() + 1);
    }
  }
  return {};
}

namespace {

// The module's state goes where the runner is told (berthd's HTTP backend, or the runner's
// state storage). A module without a backend gets one; a module that names its own has it
// replaced by an override file (TF merges *_override.tf last).
Result<void> DeclareBackend(const fs::path& workdir, const std::string& type) {
  static const re2::RE2 kBackend("backend\\s+\"");
  bool has_backend = false;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(workdir, ec)) {
    if (entry.path().extension() != ".tf") continue;
    auto text = sys::ReadFile(entry.path());
    if (text && re2::RE2::PartialMatch(*text, kBackend)) has_backend = true;
  }
  fs::path file = workdir / (has_backend ? "_berth_backend_override.tf" : "_berth_backend.tf");
  return sys::WriteFileAtomicUnsynced(file, "terraform {\n  backend \"" + type + "\" {}\n}\n");
}

}  // namespace

fs::path WorkRoot(const RunOptions& options) {
  return options.workdir.empty() ? fs::path("/tmp") / (options.ns + "-" + options.name)
                                 : fs::path(options.workdir);
}

Result<WorkDir> PrepareWorkDir(const RunOptions& options) {
  if (auto ok = CheckSubPath(options.path); !ok) return ok.error();
  WorkDir dir;
  dir.root = WorkRoot(options);
  dir.workdir = options.path.empty() ? dir.root : dir.root / options.path;
  std::error_code ec;
  std::optional<PreparedInit> prepared;
  if (options.prepared) {
    prepared = PreparedInit::Stash(dir.root, dir.workdir);
  } else if (options.workdir.empty()) {
    // The runner's own folder starts empty: in a kept Pod, nothing of an earlier run (a file an
    // older revision had, its .terraform) is seen by this one. Links are removed, not followed.
    for (const auto& entry : fs::directory_iterator(dir.root, ec)) fs::remove_all(entry.path(), ec);
    ec.clear();
  }
  fs::create_directories(dir.root, ec);
  if (ec) return Unavailable("cannot create the work folder: " + ec.message(), dir.root);

  if (IsArchive(options.module)) {
    if (auto extracted = ExtractModuleArchive(options.module, dir.root); !extracted) {
      return extracted.error();
    }
  } else {
    if (!fs::is_directory(options.module, ec)) {
      return Unavailable("--module: not a folder or a .tar.gz archive", options.module);
    }
    // Symbolic links are copied as links; TF reads the module, it never follows them out.
    fs::copy(options.module, dir.root,
             fs::copy_options::recursive | fs::copy_options::overwrite_existing |
                 fs::copy_options::copy_symlinks,
             ec);
    if (ec) return Unavailable("cannot copy the module: " + ec.message(), options.module);
  }
  if (!fs::is_directory(dir.workdir, ec)) {
    return Unavailable("--path: no such folder in the module", options.path);
  }
  if (prepared) dir.initialised = prepared->Restore(dir.workdir);
  if (!options.state_backend.empty()) {
    if (auto declared = DeclareBackend(dir.workdir, options.state_backend); !declared)
      return declared.error();
  }
  return dir;
}

namespace {

// TF's CLI configuration: --cli-config, else one that installs from --providers' mirror only,
// else the caller's TF_CLI_CONFIG_FILE (a registry's credentials, mirrors of its own), else one
// for the image's baked-in mirror (BERTH_PROVIDERS, docs/images.md). Flags are berth's, given
// per run; the caller's configuration beats the image's default. Empty: the caller's.
std::string CliConfig(const std::vector<std::string>& caller, const RunOptions& options,
                      const WorkDir& dir) {
  if (!options.cli_config.empty()) return fs::absolute(options.cli_config).string();
  std::string mirror = options.providers;
  if (mirror.empty() && Lookup(caller, "TF_CLI_CONFIG_FILE").empty())
    mirror = Lookup(caller, "BERTH_PROVIDERS");
  std::error_code ec;
  if (mirror.empty() || !fs::is_directory(mirror, ec)) return "";
  // Only the mirror, no `direct`: its providers are used offline.
  auto config = dir.root / ".berth-cli.tfrc";
  std::string text = "provider_installation {\n  filesystem_mirror {\n    path = \"" +
                     fs::absolute(mirror).string() + "\"\n  }\n}\n";
  return sys::WriteFileAtomicUnsynced(config, text) ? config.string() : "";
}

}  // namespace

std::vector<std::string> TfEnvironment(const std::vector<std::string>& caller,
                                       const RunOptions& options, const WorkDir& dir,
                                       const std::function<void(const std::string&)>& dropped) {
  const std::string cli_config = CliConfig(caller, options, dir);
  std::vector<std::string> env;
  for (const auto& entry : caller) {
    std::string name = entry.substr(0, entry.find('='));
    if (name.starts_with("TF_")) {
      if (auto reserved = ReservedTfVariable(name)) {
        if (dropped) dropped(*reserved);
        continue;
      }
      if (name == "TF_CLI_CONFIG_FILE" && !cli_config.empty()) continue;  // berth's wins
    }
    if (name == "HOME" || name == "NO_COLOR" || name == "CHECKPOINT_DISABLE") continue;
    if (name == "TF_PLUGIN_CACHE_DIR") {
      // A kept Pod's cache starts in an empty /tmp: made here, else tofu refuses to use it.
      std::error_code made;
      fs::create_directories(entry.substr(name.size() + 1), made);
    }
    env.push_back(entry);
  }
  env.push_back("HOME=" + HomeFolder(caller, dir).string());
  env.push_back("TF_DATA_DIR=" + (dir.workdir / ".terraform").string());
  env.push_back("TF_IN_AUTOMATION=1");
  env.push_back("TF_INPUT=0");
  env.push_back("NO_COLOR=1");
  env.push_back("CHECKPOINT_DISABLE=1");
  if (!cli_config.empty()) env.push_back("TF_CLI_CONFIG_FILE=" + cli_config);
  return env;
}

Result<void> LoadSecrets(const RunOptions& options, const WorkDir& dir,
                         const std::vector<std::string>& caller, Masker& masker) {
  if (std::string mask_file = Lookup(caller, "BERTH_MASK_FILE"); !mask_file.empty()) {
    auto text = sys::ReadFile(mask_file);
    if (!text) return text.error();
    std::stringstream lines(*text);
    for (std::string line; std::getline(lines, line);) masker.Add(line);
  }
  if (options.config.empty()) return {};
  auto config = sys::ReadFile(options.config);
  if (!config) return config.error();
  auto values = ParseBoundedJson(*config);
  if (!values || !values->is_object()) {
    return MakeError(ErrorKind::kInvalidArgument, "--config: not a JSON object of variables",
                     options.config);
  }
  for (const auto& name : SensitiveVariables(dir.workdir)) {
    if (values->contains(name)) masker.AddValue((*values)[name]);
  }
  return {};
}

}  // namespace berth::runner

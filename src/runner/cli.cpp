// Flag definitions of `runner`: the global logging flags on every subcommand, then each
// subcommand's own.
#include "runner/cli.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <regex>

#include "core/run_result.h"
#include "runner/flag_set.h"

namespace berth::runner {
namespace {

constexpr std::array<std::string_view, 8> kOps = {"plan",  "apply",   "destroy", "refresh",
                                                  "drift", "restore", "output",  "validate"};

Result<void> Invalid(std::string rule) {
  return MakeError(ErrorKind::kInvalidArgument, std::move(rule));
}

FlagSet::Setter String(std::string* target) {
  return [target](std::string_view v) -> Result<void> {
    *target = std::string(v);
    return {};
  };
}

FlagSet::Setter NonEmptyString(std::string* target) {
  return [target](std::string_view v) -> Result<void> {
    if (v.empty()) return Invalid("must not be empty");
    *target = std::string(v);
    return {};
  };
}

FlagSet::Setter DurationFlag(Duration* target) {
  return [target](std::string_view v) -> Result<void> {
    auto d = ParseDuration(v);
    if (!d) return d.error();
    *target = *d;
    return {};
  };
}

template <class Int>
Result<Int> ParseInt(std::string_view v) {
  Int n{};
  auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
  if (ec != std::errc() || end != v.data() + v.size()) {
    return MakeError(ErrorKind::kInvalidArgument, "must be a whole number");
  }
  return n;
}

// A Kubernetes quantity of bytes as the logging buffer sizes take ("0", "512Ki", "1Mi").
Result<void> CheckByteSize(std::string_view v) {
  static const std::regex kSize(R"(^[0-9]+(Ki|Mi|Gi|k|M|G)?$)");
  if (!std::regex_match(std::string(v), kSize))
    return Invalid("must be a size such as 0, 64Ki or 1Mi");
  return {};
}

// "a,b,c" -> {"a", "b", "c"}; an empty value has no entries.
std::vector<std::string_view> SplitCommas(std::string_view v) {
  std::vector<std::string_view> parts;
  while (!v.empty()) {
    size_t comma = v.find(',');
    parts.push_back(v.substr(0, comma));
    if (comma == std::string_view::npos) break;
    v.remove_prefix(comma + 1);
    if (v.empty()) parts.emplace_back();  // a trailing comma leaves an empty entry
  }
  return parts;
}

void AddLoggingFlags(FlagSet& flags, LoggingOptions& logging) {
  auto verbosity = [&logging](std::string_view v) -> Result<void> {
    auto n = ParseInt<int>(v);
    if (!n || *n < 0) return Invalid("must be a whole number of at least 0");
    logging.verbosity = *n;
    return {};
  };
  flags.Value("v", verbosity, 'v');
  flags.Value("vmodule", [&logging](std::string_view v) -> Result<void> {
    // pattern=N[,pattern=N...]
    static const std::regex kEntry(R"(^[^=,]+=[0-9]+$)");
    for (std::string_view entry : SplitCommas(v)) {
      if (!std::regex_match(std::string(entry), kEntry)) {
        return Invalid("each entry must be pattern=N");
      }
    }
    logging.vmodule = std::string(v);
    return {};
  });
  flags.Value("logging-format", [&logging](std::string_view v) -> Result<void> {
    if (v != "text" && v != "json") return Invalid("must be text or json");
    logging.format = std::string(v);
    return {};
  });
  flags.Value("log-flush-frequency", DurationFlag(&logging.flush_frequency));
  flags.Bool("log-text-split-stream", &logging.text_split_stream);
  flags.Bool("log-json-split-stream", &logging.json_split_stream);
  for (const auto& flag :
       {std::pair{"log-text-info-buffer-size", &logging.text_info_buffer_size},
        std::pair{"log-json-info-buffer-size", &logging.json_info_buffer_size}}) {
    std::string* target = flag.second;
    flags.Value(flag.first, [target](std::string_view v) -> Result<void> {
      if (auto ok = CheckByteSize(v); !ok) return ok;
      *target = std::string(v);
      return {};
    });
  }
  flags.Value("feature-gates", [&logging](std::string_view v) -> Result<void> {
    // The logging gates a component registers: Name=true|false[,...]
    static const std::array<std::string_view, 3> kGates = {
        "ContextualLogging", "LoggingAlphaOptions", "LoggingBetaOptions"};
    for (std::string_view entry : SplitCommas(v)) {
      size_t eq = entry.find('=');
      if (eq == std::string_view::npos) return Invalid("each entry must be Name=true|false");
      std::string_view gate = entry.substr(0, eq);
      if (std::find(kGates.begin(), kGates.end(), gate) == kGates.end()) {
        return Invalid("unrecognized feature gate: " + std::string(gate));
      }
      if (!ParseBool(entry.substr(eq + 1)))
        return Invalid("the value of " + std::string(gate) + " must be true or false");
    }
    logging.feature_gates = std::string(v);
    return {};
  });
}

void AddRunFlags(FlagSet& flags, RunOptions& o) {
  flags.Value("op", [&o](std::string_view v) -> Result<void> {
    if (std::find(kOps.begin(), kOps.end(), v) == kOps.end()) {
      return Invalid(
          "must be one of plan, apply, destroy, refresh, drift, restore, output, validate");
    }
    o.op = std::string(v);
    return {};
  });
  flags.Value("module", NonEmptyString(&o.module));
  flags.Value("path", String(&o.path));
  flags.Value("namespace", NonEmptyString(&o.ns));
  flags.Value("name", NonEmptyString(&o.name));
  flags.Value("workdir", NonEmptyString(&o.workdir));
  flags.Value("binary", [&o](std::string_view v) -> Result<void> {
    if (v != "auto" && v != "tofu" && v != "terraform")
      return Invalid("must be auto, tofu or terraform");
    o.binary = std::string(v);
    return {};
  });
  flags.Value("bin", NonEmptyString(&o.bin));
  flags.Value("providers", NonEmptyString(&o.providers));
  flags.Value("config", NonEmptyString(&o.config));
  flags.Value("inputs-hash", [&o](std::string_view v) -> Result<void> {
    static const std::regex kHash("^sha256:[0-9a-f]{64}$");
    if (!std::regex_match(std::string(v), kHash))
      return Invalid("must be sha256: and 64 lowercase hex digits");
    o.inputs_hash = std::string(v);
    return {};
  });
  flags.Value("backend-config", [&o](std::string_view v) -> Result<void> {
    if (v.empty()) return Invalid("must be KEY=VALUE or a file");
    o.backend_config.emplace_back(v);
    return {};
  });
  flags.Value("lock-timeout", DurationFlag(&o.lock_timeout));
  flags.Value("stop-timeout", DurationFlag(&o.stop_timeout));
  flags.Value("timeout", [&o](std::string_view v) -> Result<void> {
    auto d = ParseDuration(v);
    if (!d) return d.error();
    if (d->count() == 0) {
      o.timeout.reset();  // 0: no timeout
    } else {
      o.timeout = *d;
    }
    return {};
  });
  flags.Value("force-unlock", NonEmptyString(&o.force_unlock));
  flags.Value("plan-file", NonEmptyString(&o.plan_file));
  flags.Value("approved-plan", [&o](std::string_view v) -> Result<void> {
    static const std::regex kHash("^(sha256:)?[0-9a-f]{64}$");
    if (!std::regex_match(std::string(v), kHash))
      return Invalid("must be a plan hash (sha256:HEX)");
    o.approved_plan = std::string(v);
    return {};
  });
  flags.Value("plan-key-file", NonEmptyString(&o.plan_key_file));
  flags.Bool("allow-destroy", &o.allow_destroy);
  flags.Bool("plan-destroy", &o.plan_destroy);
  flags.Value("restore-from", NonEmptyString(&o.restore_from));
  flags.Value("event-object", [&o](std::string_view v) -> Result<void> {
    static const std::regex kObject(
        "^[A-Za-z]+/[a-z0-9]([-a-z0-9]*[a-z0-9])?/[a-z0-9]([-.a-z0-9]*[a-z0-9])?$");
    if (!std::regex_match(std::string(v), kObject)) return Invalid("must be KIND/NAMESPACE/NAME");
    o.event_object = std::string(v);
    return {};
  });
  flags.Value("job-name", NonEmptyString(&o.job_name));
  flags.Value("state-backend", [&o](std::string_view v) -> Result<void> {
    if (v != "http" && v != "kubernetes" && v != "s3" && v != "gcs" && v != "azurerm")
      return Invalid("must be http (berthd's state backend), kubernetes, s3, gcs or azurerm");
    o.state_backend = std::string(v);
    return {};
  });
  flags.Value("gateway", [&o](std::string_view v) -> Result<void> {
    if (!v.starts_with("http://") && !v.starts_with("https://"))
      return Invalid("must be berthd's URL (http:// or https://)");
    o.gateway = std::string(v);
    while (o.gateway.ends_with('/')) o.gateway.pop_back();
    return {};
  });
  flags.Value("token-file", NonEmptyString(&o.token_file));
  flags.Value("run-id", [&o](std::string_view v) -> Result<void> {
    static const std::regex kId("^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$");
    if (!std::regex_match(std::string(v), kId)) return Invalid("must be a run id (a DNS label)");
    o.run_id = std::string(v);
    return {};
  });
  flags.Value("outputs", NonEmptyString(&o.outputs));
  flags.Value("image", String(&o.image));
  flags.Value("result", NonEmptyString(&o.result));
  flags.Value("result-max-bytes", [&o](std::string_view v) -> Result<void> {
    auto n = ParseInt<size_t>(v);
    if (!n || *n < kMinResultBytes) {
      return Invalid("must be a whole number of at least " + std::to_string(kMinResultBytes));
    }
    o.result_max_bytes = *n;
    return {};
  });
}

Error Usage(std::string message) {
  return MakeError(ErrorKind::kInvalidArgument, std::move(message));
}

}  // namespace

std::string_view Usage() {
  return "Usage:\n"
         "  runner [global flags] copy <dest>\n"
         "  runner [global flags] run --op=<op> [flags]\n"
         "  runner [global flags] version\n"
         "  runner --version[=raw]\n"
         "\n"
         "Global flags: -v/--v=N, --vmodule=pattern=N,..., --logging-format=text|json,\n"
         "  --log-flush-frequency=DURATION, --log-text-split-stream, --log-json-split-stream,\n"
         "  --log-text-info-buffer-size, --log-json-info-buffer-size, --feature-gates\n"
         "See docs/runner.md for the run flags.\n";
}

CommandLine ParseCommandLine(const std::vector<std::string>& args) {
  CommandLine line;
  FlagSet global("runner");
  AddLoggingFlags(global, line.logging);
  std::string version;
  global.OptionalValue("version", &version, "true");
  auto rest = global.Parse(args, true);
  if (!rest) {
    // A run whose global flags are wrong still owes a result: say it is a run.
    if (std::find(args.begin(), args.end(), "run") != args.end()) line.command = RunCommand{};
    line.error = rest.error();
    return line;
  }
  if (global.Changed("version")) {
    if (version != "true" && version != "raw") {
      line.error = Usage("--version: must be given alone or as --version=raw");
    } else if (!rest->empty()) {
      line.error = Usage("--version takes no subcommand");
    }
    line.command = VersionCommand{version == "raw", false};
    return line;
  }
  if (rest->empty()) return line;  // bare runner: usage

  const std::string sub = rest->front();
  std::vector<std::string> sub_args(rest->begin() + 1, rest->end());
  if (sub == "copy") {
    FlagSet flags("runner copy");
    AddLoggingFlags(flags, line.logging);
    auto positional = flags.Parse(sub_args);
    if (!positional) {
      line.error = positional.error();
    } else if (positional->size() != 1) {
      line.error = Usage("copy: exactly one argument, the destination, is required");
    }
    line.command = CopyCommand{positional ? *positional : std::vector<std::string>{}};
    return line;
  }
  if (sub == "version") {
    FlagSet flags("runner version");
    AddLoggingFlags(flags, line.logging);
    auto positional = flags.Parse(sub_args);
    if (!positional) {
      line.error = positional.error();
    } else if (!positional->empty()) {
      line.error = Usage("version: takes no arguments");
    }
    line.command = VersionCommand{false, true};
    return line;
  }
  if (sub == "run") {
    RunCommand run;
    FlagSet flags("runner run");
    AddLoggingFlags(flags, line.logging);
    AddRunFlags(flags, run.options);
    auto positional = flags.Parse(sub_args);
    if (!positional) {
      line.error = positional.error();
    } else if (!positional->empty()) {
      line.error =
          Usage("run: takes no arguments, only flags (got \"" + positional->front() + "\")");
    } else if (run.options.op.empty()) {
      line.error = Usage("run: --op is required");
    } else if (run.options.gateway.empty() != run.options.run_id.empty()) {
      line.error = Usage("run: --gateway and --run-id go together");
    }
    if (run.options.module.empty() && run.options.gateway.empty())
      run.options.module = "/berth/module";
    line.command = std::move(run);
    return line;
  }
  line.error = Usage("unknown command \"" + sub + "\" (copy, run or version)");
  return line;
}

}  // namespace berth::runner

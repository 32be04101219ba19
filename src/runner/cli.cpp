// Flag definitions of `runner`: the global logging flags on every subcommand, then each
// subcommand's own.
#include "runner/cli.h"

#include <algorithm>
#include <array>
#include <filesystem>

#include "core/decimal.h"
#include "core/pattern.h"
#include "core/quantity.h"
#include "core/run_result.h"
#include "crypto/age.h"
#include "runner/flag_set.h"
#include "runner/verbosity.h"

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
  auto n = ParseDecimal<Int>(v);
  if (!n) return MakeError(ErrorKind::kInvalidArgument, "must be a whole number");
  return *n;
}

// A Kubernetes quantity of bytes, as the logging buffer sizes take ("0", "512Ki", "1Mi").
FlagSet::Setter ByteSize(size_t* target) {
  return [target](std::string_view v) -> Result<void> {
    constexpr int64_t kMaxBytes = int64_t{1} << 30;
    auto q = Quantity::Parse(v);
    if (!q) return q.error();
    auto bytes = q->AsInt64();
    if (!bytes || *bytes < 0 || *bytes > kMaxBytes)
      return Invalid("must be a whole number of bytes from 0 to 1Gi, such as 64Ki");
    *target = static_cast<size_t>(*bytes);
    return {};
  };
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

// Kubernetes components register three logging gates; only LoggingAlphaOptions gates anything
// the runner has (its split streams and info buffers), so the other two are refused by name
// rather than accepted and ignored.
Result<void> SetFeatureGates(std::string_view v, LoggingOptions& logging) {
  for (std::string_view entry : SplitCommas(v)) {
    size_t eq = entry.find('=');
    if (eq == std::string_view::npos) return Invalid("each entry must be Name=true|false");
    std::string gate(entry.substr(0, eq));
    if (gate == "ContextualLogging" || gate == "LoggingBetaOptions") {
      return Invalid(gate + " gates nothing in the runner (it has no " +
                     (gate == "ContextualLogging" ? "contextual logging" : "beta logging options") +
                     "); only LoggingAlphaOptions is accepted");
    }
    if (gate != "LoggingAlphaOptions") return Invalid("unrecognized feature gate: " + gate);
    auto on = ParseBool(entry.substr(eq + 1));
    if (!on) return Invalid("the value of " + gate + " must be true or false");
    logging.logging_alpha_options = *on;
  }
  return {};
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
    auto modules = Verbosity::ParseVmodule(v);
    if (!modules) return modules.error();
    logging.vmodule = std::move(*modules);
    return {};
  });
  flags.Value("logging-format", [&logging](std::string_view v) -> Result<void> {
    if (v != "text" && v != "json") return Invalid("must be text or json");
    logging.format = std::string(v);
    return {};
  });
  flags.Value("log-flush-frequency", [&logging](std::string_view v) -> Result<void> {
    auto d = ParseDuration(v);
    if (!d) return d.error();
    if (d->count() <= 0) return Invalid("must be a positive duration, such as 5s");
    logging.flush_frequency = *d;
    return {};
  });
  flags.Bool("log-text-split-stream", &logging.text_split_stream);
  flags.Bool("log-json-split-stream", &logging.json_split_stream);
  flags.Value("log-text-info-buffer-size", ByteSize(&logging.text_info_buffer_bytes));
  flags.Value("log-json-info-buffer-size", ByteSize(&logging.json_info_buffer_bytes));
  flags.Value("feature-gates", [&logging](std::string_view v) -> Result<void> {
    return SetFeatureGates(v, logging);
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
  flags.Bool("prepared", &o.prepared);
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
    static const Pattern kHash("sha256:[0-9a-f]{64}");
    if (!kHash.Matches(v)) return Invalid("must be sha256: and 64 lowercase hex digits");
    o.inputs_hash = std::string(v);
    return {};
  });
  flags.Value("backend-config", [&o](std::string_view v) -> Result<void> {
    if (v.empty()) return Invalid("must be KEY=VALUE or a file");
    o.backend_config.emplace_back(v);
    return {};
  });
  flags.Value("cli-config", NonEmptyString(&o.cli_config));
  flags.Value("file-mapping", [&o](std::string_view v) -> Result<void> {
    const size_t equals = v.rfind('=');
    if (equals == std::string_view::npos || equals + 1 == v.size())
      return Invalid("must be home:PATH=FILE or workspace:PATH=FILE");
    auto mapping = ParseMappingTarget(v.substr(0, equals));
    if (!mapping) return Invalid(mapping.error().message);
    mapping->file = std::string(v.substr(equals + 1));
    o.file_mappings.push_back(std::move(*mapping));
    return {};
  });
  flags.Bool("lock", &o.lock);
  flags.Value("lock-timeout", DurationFlag(&o.lock_timeout));
  flags.Value("stop-timeout", DurationFlag(&o.stop_timeout));
  flags.Value("await-apply", DurationFlag(&o.await_apply));
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
  flags.Value("changes-file", NonEmptyString(&o.changes_file));
  flags.Value("approved-plan", [&o](std::string_view v) -> Result<void> {
    static const Pattern kHash("(sha256:)?[0-9a-f]{64}");
    if (!kHash.Matches(v)) return Invalid("must be a plan hash (sha256:HEX)");
    o.approved_plan = std::string(v);
    return {};
  });
  flags.Value("approved-plan-sha256", [&o](std::string_view v) -> Result<void> {
    static const Pattern kDigest("[0-9a-f]{64}");
    if (!kDigest.Matches(v)) return Invalid("must be the SHA-256 of a plan file (64 hex digits)");
    o.approved_plan_sha256 = std::string(v);
    return {};
  });
  flags.Value("plan-key-file", NonEmptyString(&o.plan_key_file));
  flags.Value("state-key-file", NonEmptyString(&o.state_key_file));
  flags.Value("state-token-file", NonEmptyString(&o.state_token_file));
  flags.Bool("state-encryption", &o.state_encryption);
  flags.Value("log-recipient", [&o](std::string_view v) -> Result<void> {
    auto key = crypto::ParseAgeRecipient(v);
    if (!key) return Invalid(key.error().message);
    o.log_recipient = std::string(v);
    return {};
  });
  flags.Bool("allow-destroy", &o.allow_destroy);
  flags.Bool("plan-destroy", &o.plan_destroy);
  flags.Value("restore-from", NonEmptyString(&o.restore_from));
  flags.Value("event-object", [&o](std::string_view v) -> Result<void> {
    static const Pattern kObject(
        "[A-Za-z]+/[a-z0-9]([-a-z0-9]*[a-z0-9])?/[a-z0-9]([-.a-z0-9]*[a-z0-9])?");
    if (!kObject.Matches(v)) return Invalid("must be KIND/NAMESPACE/NAME");
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
  flags.Value("berthd-relay", NonEmptyString(&o.berthd_relay));
  flags.Value("run-id", [&o](std::string_view v) -> Result<void> {
    static const Pattern kId("[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?");
    if (!kId.Matches(v)) return Invalid("must be a run id (a DNS label)");
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

void AddServeFlags(FlagSet& flags, ServeOptions& o) {
  flags.Value("listen", [&o](std::string_view v) -> Result<void> {
    static const Pattern kAddress("[^:]*:[0-9]{1,5}");
    if (!kAddress.Matches(v)) return Invalid("must be HOST:PORT or :PORT");
    o.listen = v.starts_with(':') ? "0.0.0.0" + std::string(v) : std::string(v);
    return {};
  });
  flags.Value("tls-cert", NonEmptyString(&o.tls_cert));
  flags.Value("tls-key", NonEmptyString(&o.tls_key));
  flags.Value("client-ca", NonEmptyString(&o.client_ca));
  flags.Value("client-name", NonEmptyString(&o.client_name));
  flags.Value("max-file-size", [&o](std::string_view v) -> Result<void> {
    size_t bytes = 0;
    if (auto set = ByteSize(&bytes)(v); !set) return set;
    if (bytes == 0) return Invalid("must be more than 0");
    o.max_file_bytes = bytes;
    return {};
  });
  flags.Value("spool", NonEmptyString(&o.spool));
}

Error Usage(std::string message) {
  return MakeError(ErrorKind::kInvalidArgument, std::move(message));
}

// The rules of Kubernetes' component-base for logging options that only go together.
// Init is skipped only where tofu checks what an earlier run installed against the approved
// plan's lock file: the apply of exactly the approved plan bytes, in a given work folder.
std::optional<Error> PreparedProblem(const RunOptions& o) {
  if (o.op != "apply" && o.op != "destroy")
    return Usage("run: --prepared continues an approved plan: it needs --op=apply or destroy");
  if (o.workdir.empty()) return Usage("run: --prepared names no folder: it needs --workdir");
  if (o.approved_plan_sha256.empty())
    return Usage(
        "run: --prepared skips init only for the approved plan's bytes: it needs "
        "--approved-plan-sha256");
  if (o.plan_file.empty() && o.gateway.empty())
    return Usage(
        "run: --prepared applies a saved plan: it needs --plan-file (or --gateway, whose "
        "approved plan it stages)");
  return std::nullopt;
}

std::optional<Error> ValidateLogging(const LoggingOptions& l) {
  if (!l.vmodule.empty() && l.format != "text")
    return Usage("--vmodule: only supported for --logging-format=text");
  struct Stream {
    std::string_view format;
    bool split;
    size_t buffer;
  };
  for (const Stream& s : {Stream{"text", l.text_split_stream, l.text_info_buffer_bytes},
                          Stream{"json", l.json_split_stream, l.json_info_buffer_bytes}}) {
    std::string split_flag = "--log-" + std::string(s.format) + "-split-stream";
    std::string buffer_flag = "--log-" + std::string(s.format) + "-info-buffer-size";
    for (const auto& [flag, set] : {std::pair{split_flag, s.split}, {buffer_flag, s.buffer > 0}}) {
      if (!set) continue;
      if (!l.logging_alpha_options)
        return Usage(flag + ": needs --feature-gates=LoggingAlphaOptions=true (an alpha option)");
      if (l.format != s.format)
        return Usage(flag + ": only applies to --logging-format=" + std::string(s.format));
    }
    if (s.buffer > 0 && !s.split) return Usage(buffer_flag + ": needs " + split_flag);
  }
  return std::nullopt;
}

// Where a `run` whose flags could not be parsed still writes its result: the --result it was
// given, found by a plain scan, else the default.
std::string ResultPathIn(const std::vector<std::string>& args) {
  std::string path = RunOptions{}.result;
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i].starts_with("--result=")) {
      path = args[i].substr(9);
    } else if (args[i] == "--result" && i + 1 < args.size()) {
      path = args[i + 1];
    }
  }
  return path;
}

}  // namespace

std::string_view Usage() {
  return "Usage:\n"
         "  runner [global flags] copy <dest>\n"
         "  runner [global flags] key-provider --key-file=<file>   (for tofu, TF_ENCRYPTION)\n"
         "  runner [global flags] run --op=<op> [flags]\n"
         "  runner [global flags] serve --tls-cert=F --tls-key=F --client-ca=F [flags]\n"
         "  runner [global flags] version\n"
         "  runner --version[=raw]\n"
         "\n"
         "Global flags: -v/--v=N, --vmodule=pattern=N,..., --logging-format=text|json,\n"
         "  --log-flush-frequency=DURATION, --log-text-split-stream, --log-json-split-stream,\n"
         "  --log-text-info-buffer-size, --log-json-info-buffer-size, --feature-gates\n"
         "See docs/runner.md for the run flags.\n";
}

namespace {

CommandLine ParseFlags(const std::vector<std::string>& args) {
  CommandLine line;
  FlagSet global("runner");
  AddLoggingFlags(global, line.logging);
  std::string version;
  global.OptionalValue("version", &version, "true");
  auto rest = global.Parse(args, true);
  if (!rest) {
    // A run whose global flags are wrong still owes a result, where --result says.
    if (std::find(args.begin(), args.end(), "run") != args.end()) {
      RunCommand run;
      run.options.result = ResultPathIn(args);
      line.command = std::move(run);
    }
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
    } else if (!run.options.berthd_relay.empty() && run.options.gateway.empty()) {
      line.error = Usage("run: --berthd-relay relays to berthd: it needs --gateway");
    } else if (!run.options.log_recipient.empty() && run.options.gateway.empty()) {
      line.error = Usage("run: --log-recipient encrypts the log it ships: it needs --gateway");
    } else if (run.options.state_encryption && run.options.gateway.empty()) {
      line.error = Usage(
          "run: --state-encryption takes the key from berthd: it needs --gateway (or give "
          "--state-key-file)");
    } else if (run.options.await_apply.count() > 0 &&
               (run.options.op != "plan" || run.options.gateway.empty())) {
      line.error = Usage(
          "run: --await-apply waits for the apply of a plan berthd keeps: it needs --op=plan and "
          "--gateway");
    } else if (!run.options.state_token_file.empty() && run.options.state_backend != "http") {
      line.error =
          Usage("run: --state-token-file is the HTTP backend's: it needs --state-backend=http");
    } else if (!run.options.lock && flags.Changed("lock-timeout")) {
      line.error = Usage("run: --lock-timeout waits for a lock that --lock=false does not take");
    } else if (run.options.prepared) {
      line.error = PreparedProblem(run.options);
    } else if (!run.options.changes_file.empty() && run.options.op != "plan" &&
               run.options.op != "apply" && run.options.op != "destroy") {
      line.error = Usage(
          "run: --changes-file lists a plan's changes: it needs --op=plan, apply "
          "or destroy");
    } else if (!run.options.changes_file.empty() && run.options.binary == "terraform") {
      line.error =
          Usage("run: --changes-file is read from tofu's plan file: not with --binary=terraform");
    }
    if (run.options.module.empty() && run.options.gateway.empty())
      run.options.module = "/berth/module";
    line.command = std::move(run);
    return line;
  }
  if (sub == "key-provider") {
    KeyProviderCommand provider;
    FlagSet flags("runner key-provider");
    AddLoggingFlags(flags, line.logging);
    flags.Value("key-file", NonEmptyString(&provider.key_file));
    auto positional = flags.Parse(sub_args);
    if (!positional) {
      line.error = positional.error();
    } else if (!positional->empty() || provider.key_file.empty()) {
      line.error = Usage("key-provider: --key-file is required, and nothing else");
    }
    line.command = std::move(provider);
    return line;
  }
  if (sub == "serve") {
    ServeCommand serve;
    FlagSet flags("runner serve");
    AddLoggingFlags(flags, line.logging);
    AddServeFlags(flags, serve.options);
    auto positional = flags.Parse(sub_args);
    if (!positional) {
      line.error = positional.error();
    } else if (!positional->empty()) {
      line.error = Usage("serve: takes no arguments, only flags");
    } else if (serve.options.tls_cert.empty() || serve.options.tls_key.empty() ||
               serve.options.client_ca.empty()) {
      line.error = Usage("serve: --tls-cert, --tls-key and --client-ca are required (mutual TLS)");
    }
    line.command = std::move(serve);
    return line;
  }
  line.error = Usage("unknown command \"" + sub + "\" (copy, key-provider, run, serve or version)");
  return line;
}

}  // namespace

CommandLine ParseCommandLine(const std::vector<std::string>& args) {
  CommandLine line = ParseFlags(args);
  if (!line.error) line.error = ValidateLogging(line.logging);
  return line;
}

LogSinkOptions SinkOptions(const LoggingOptions& logging) {
  bool json = logging.format == "json";
  LogSinkOptions options{
      .json = json,
      .split_stream = json ? logging.json_split_stream : logging.text_split_stream,
      .info_buffer_bytes = json ? logging.json_info_buffer_bytes : logging.text_info_buffer_bytes,
      .flush_frequency = logging.flush_frequency};
  options.verbosity.SetLevel(logging.verbosity);
  options.verbosity.SetModules(logging.vmodule);
  return options;
}

Result<FileMapping> ParseMappingTarget(std::string_view target) {
  const size_t colon = target.find(':');
  const std::string_view location = target.substr(0, colon);
  if (colon == std::string_view::npos || (location != "home" && location != "workspace"))
    return MakeError(ErrorKind::kInvalidArgument, "must start with home: or workspace:");
  const std::string path(target.substr(colon + 1));
  bool climbs = false;
  for (const auto& part : std::filesystem::path(path)) climbs = climbs || part == "..";
  if (path.empty() || path.starts_with('/') || climbs || path.ends_with('/'))
    return MakeError(ErrorKind::kInvalidArgument,
                     "PATH must name a file relative to its folder, without ..");
  return FileMapping{.location = std::string(location), .path = path};
}

}  // namespace berth::runner

// runner: the program inside every berth runner (docs/runner.md).
#include <signal.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/exit_codes.h"
#include "runner/berthd_relay.h"
#include "runner/build_info.h"
#include "runner/cli.h"
#include "runner/copy_self.h"
#include "runner/gateway_run.h"
#include "runner/run.h"
#include "runner/state_encryption.h"
#ifdef BERTH_WITH_SERVE
#include "runner/serve.h"
#endif

extern char** environ;

namespace {

using namespace berth::runner;

using berth::exit_code::kOk;
using berth::exit_code::kRunnerFailed;
using berth::exit_code::kRunnerResultUnwritten;
using berth::exit_code::kRunnerUsage;

int Version(const VersionCommand& v) {
  const auto& info = GetBuildInfo();
  if (v.raw) {
    std::printf("%s\n", BuildInfoJson().c_str());
  } else if (v.verbose) {
    std::printf("runner %s\ngit commit: %s\nbuild date: %s\ncompiler: %s\n", info.version.c_str(),
                info.git_commit.c_str(), info.build_date.c_str(), info.compiler.c_str());
  } else {
    std::printf("runner %s\n", info.version.c_str());
  }
  return kOk;
}

// SIGTERM and SIGINT are read from a signalfd so that the run can forward them to TF as an
// interrupt at a safe point instead of dying.
int StopSignals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  sigprocmask(SIG_BLOCK, &set, nullptr);
  return signalfd(-1, &set, SFD_CLOEXEC);
}

// One run from its inputs to its result, delivered and written; prepared is what went before
// it (the relay to berthd). A plan run kept for its apply (--await-apply) then waits for it:
// handed is set when berthd handed it to this runner.
int RunOnce(RunOptions options, berth::Result<void> prepared, RunContext& context, LogSink& log,
            std::optional<ApplyHandover>* handed) {
  std::optional<GatewayRun> gateway;
  if (!options.gateway.empty() && prepared) {
    gateway.emplace(options, context.environment);
    prepared = gateway->Prepare(options, log);
    context.keep_state = [&gateway](const std::filesystem::path& errored) {
      gateway->KeepState(errored);
    };
  }
  auto events = MakeRunEvents(options.event_object, options.job_name, context.environment,
                              [&log](const std::string& line) { log.Line("runner", line); });
  context.events = events.get();
  berth::RunResult result;
  if (prepared) {
    result = ExecuteRun(options, context);
  } else {
    result.op = options.op;
    result.error = berth::RunError{berth::RunErrorKind::kSourceUnavailable, "gateway",
                                   prepared.error().message, 0, ""};
    log.Line("gateway", prepared.error().message);
  }
  events.reset();  // flushes what is queued, within its own short deadline
  context.events = nullptr;
  if (log.V("runner", 1)) {
    rusage usage{};
    getrusage(RUSAGE_SELF, &usage);  // the runner alone: TF and its providers are children
    log.Line("runner", "peak memory " + std::to_string(usage.ru_maxrss) + " KiB");
  }
  if (result.error) {
    log.Error("runner", options.op + " failed (" +
                            std::string(berth::RunErrorKindName(result.error->kind)) +
                            "): " + result.error->message);
  }
  log.Flush();
  if (gateway) gateway->Deliver(options, result);
  context.keep_state = nullptr;  // it reaches this run's gateway, which ends here
  if (!WriteResult(options.result, result, options.result_max_bytes)) {
    std::fprintf(stderr, "runner: cannot write the result to %s\n", options.result.c_str());
    return kRunnerResultUnwritten;
  }
  if (handed != nullptr && gateway && options.await_apply.count() > 0 && !result.error)
    *handed = gateway->AwaitApply(options.await_apply, context.signal_fd, log);
  return berth::RunnerExitCode(result);
}

int Run(const RunCommand& run, const LoggingOptions& logging) {
  // The log is written with write(2), not stdio: what TF printed is out before the runner
  // could die, whatever stdout is.
  LogSink log(STDOUT_FILENO, STDERR_FILENO, berth::SystemClock::Instance(), SinkOptions(logging));
  log.StartFlusher();
  RunContext context;
  context.log = &log;
  for (char** e = environ; *e != nullptr; ++e) context.environment.emplace_back(*e);
  context.signal_fd = StopSignals();
  // Started first, so that it outlives the gateway runs, whose last log lines go through it.
  std::unique_ptr<berth::sys::StreamRelay> relay;
  berth::Result<void> prepared;
  if (!run.options.berthd_relay.empty()) {
    auto started = RelayToBerthd(run.options);
    if (started) {
      relay = std::move(*started);
    } else {
      prepared = started.error();
    }
  }
  std::optional<ApplyHandover> handed;
  int code = RunOnce(run.options, prepared, context, log, &handed);
  if (!handed) return code;
  // The apply run's token, for its gateway requests and tofu's state backend alike.
  auto token = KeepHandedToken(handed->token);
  if (!token) {
    std::fprintf(stderr, "runner: %s\n", token.error().message.c_str());
    return kRunnerFailed;
  }
  std::erase_if(context.environment,
                [](const std::string& e) { return e.starts_with("BERTH_TOKEN_FILE="); });
  context.environment.push_back("BERTH_TOKEN_FILE=" + token->path.string());
  return RunOnce(ContinuedApplyOptions(run.options, *handed, token->path.string()), prepared,
                 context, log, nullptr);
}

// Invalid flags for `run` still owe a result document, of kind InvalidFlags.
int InvalidRunFlags(const RunOptions& options, const berth::Error& error) {
  berth::RunResult result;
  result.op = options.op;
  result.error =
      berth::RunError{berth::RunErrorKind::kInvalidFlags, "flags", error.message, kRunnerUsage, ""};
  if (!WriteResult(options.result, result, options.result_max_bytes)) return kRunnerResultUnwritten;
  return kRunnerUsage;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  CommandLine line = ParseCommandLine(args);
  if (line.error) {
    std::fprintf(stderr, "runner: %s\n\n%s", line.error->message.c_str(),
                 std::string(Usage()).c_str());
    if (auto* run = std::get_if<RunCommand>(&line.command))
      return InvalidRunFlags(run->options, *line.error);
    return kRunnerUsage;
  }
  if (std::holds_alternative<UsageCommand>(line.command)) {
    std::fprintf(stderr, "%s", std::string(Usage()).c_str());
    return kRunnerUsage;
  }
  if (auto* copy = std::get_if<CopyCommand>(&line.command)) {
    auto copied = CopySelf(copy->arguments.front());
    if (!copied) {
      std::fprintf(stderr, "runner copy: %s\n", copied.error().ToString().c_str());
      return kRunnerFailed;
    }
    return kOk;
  }
  if (auto* version = std::get_if<VersionCommand>(&line.command)) return Version(*version);
  if (auto* provider = std::get_if<KeyProviderCommand>(&line.command))
    return ServeStateKey(provider->key_file, stdin, stdout);
  if (auto* serve = std::get_if<ServeCommand>(&line.command)) {
#ifdef BERTH_WITH_SERVE
    return Serve(serve->options);
#else
    (void)serve;
    std::fprintf(stderr, "runner serve: this runner was built without gRPC (libgrpc++-dev)\n");
    return kRunnerUsage;
#endif
  }
  return Run(std::get<RunCommand>(line.command), line.logging);
}

// vfork/exec with the few async-signal-safe steps a child needs before exec. vfork, not fork:
// a fork copies the parent's page tables (berthd's grow with its caches) and leaves its other
// threads copy-on-write faults, at every runner and TF step started; a vfork child borrows the
// parent's memory until its exec, so it only reads it and makes raw system calls.
#include "sys/subprocess.h"

#include <fcntl.h>
#include <linux/close_range.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>

#include "sys/fd.h"

namespace berth::sys {
namespace {

int DecodeStatus(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return 255;
}

// Hands errno to the parent through the exec-error pipe.
[[noreturn]] void ReportAndExit(int error_fd) {
  int err = errno;
  (void)!write(error_fd, &err, sizeof err);
  _exit(127);
}

// The handlers of ours go: one run in the child would run on the memory it shares with us.
// Ignored signals stay ignored, as exec keeps them.
void DefaultCaughtSignals() {
  for (int sig = 1; sig < NSIG; ++sig) {
    struct sigaction action {};
    if (sigaction(sig, nullptr, &action) != 0) continue;  // one the C library keeps
    if (action.sa_handler == SIG_IGN || action.sa_handler == SIG_DFL) continue;
    action = {};
    action.sa_handler = SIG_DFL;
    sigaction(sig, &action, nullptr);
  }
}

// Only async-signal-safe calls from here to exec, in a vfork child: nothing written to memory
// but the stack below the parent's, failures reported through error_fd. The credentials change
// by raw system calls: the C library's wrappers would change every thread of the parent's too.
[[noreturn]] void ExecChild(const SpawnOptions& options, char* const* argv, char* const* envp,
                            int output_fd, int stdout_fd, int error_fd, pid_t parent) {
  auto fail = [error_fd]() { ReportAndExit(error_fd); };
  if (options.die_with_parent) {
    if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0) fail();
    if (getppid() != parent) _exit(127);  // the parent is already gone
  }
  for (const std::string& procs : options.join_cgroups) {
    int fd = open(procs.c_str(), O_WRONLY | O_CLOEXEC);
    if (fd < 0 || write(fd, "0", 1) != 1) fail();
    close(fd);
  }
  // A session leader leads its own process group too.
  if (options.new_session) {
    if (setsid() < 0) fail();
  } else if (options.new_process_group && setpgid(0, 0) != 0) {
    fail();
  }
  if (output_fd >= 0) {
    if (dup2(output_fd, STDOUT_FILENO) < 0 || dup2(output_fd, STDERR_FILENO) < 0) fail();
  }
  if (stdout_fd >= 0 && dup2(stdout_fd, STDOUT_FILENO) < 0) fail();
  // Signals the parent blocked (to read them from a signalfd, or all of them around vfork) must
  // reach the program.
  DefaultCaughtSignals();
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);
  int devnull = open("/dev/null", O_RDONLY);
  if (devnull >= 0) dup2(devnull, STDIN_FILENO);
  if (!options.working_dir.empty() && chdir(options.working_dir.c_str()) != 0) fail();
  if (options.run_as_gid &&
      (syscall(SYS_setgroups, 0, nullptr) != 0 || syscall(SYS_setgid, *options.run_as_gid) != 0)) {
    fail();
  }
  if (options.run_as_uid && syscall(SYS_setuid, *options.run_as_uid) != 0) fail();
  for (const auto& [resource, value] : options.limits) {
    rlimit limit{value, value};
    if (setrlimit(resource, &limit) != 0) fail();
  }
  signal(SIGPIPE, SIG_DFL);
  for (int stop : {SIGTERM, SIGINT}) signal(stop, options.ignore_stop_signals ? SIG_IGN : SIG_DFL);
  if (options.ignore_stop_signals) {
    sigset_t stops;
    sigemptyset(&stops);
    sigaddset(&stops, SIGTERM);
    sigaddset(&stops, SIGINT);
    sigprocmask(SIG_BLOCK, &stops, nullptr);
  }
  // Nothing of the parent's but stdin, stdout and stderr reaches the program: libraries open
  // descriptors without O_CLOEXEC (Asio's listening socket among them), and a runner holding
  // berthd's socket would keep its port after berthd died.
  if (close_range(3, ~0U, CLOSE_RANGE_CLOEXEC) != 0) {
    rlimit open_files{};
    getrlimit(RLIMIT_NOFILE, &open_files);
    int last = static_cast<int>(std::min<rlim_t>(open_files.rlim_cur, 65536));
    for (int fd = 3; fd < last; ++fd) fcntl(fd, F_SETFD, FD_CLOEXEC);
  }
  for (int fd : options.inherited_fds) {
    if (fcntl(fd, F_SETFD, 0) != 0) fail();
  }
  execve(argv[0], argv, envp);
  ReportAndExit(error_fd);
}

// What the child needs, gathered before the vfork.
struct ChildSetup {
  const SpawnOptions* options;
  char* const* argv;
  char* const* envp;
  int output_fd;
  int stdout_fd;
  int error_fd;
  pid_t parent;
};

// A function of its own, so that no local of Spawn's lives across the vfork. Every signal is
// blocked around it: no handler of ours may run in the child before it sets its own.
[[gnu::noinline]] pid_t VforkAndExec(const ChildSetup& setup) {
  sigset_t all;
  sigset_t previous;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &previous);
  pid_t pid = vfork();  // NOLINT(bugprone-unsafe-functions): the child only sets up and execs
  if (pid == 0) {
    ExecChild(*setup.options, setup.argv, setup.envp, setup.output_fd, setup.stdout_fd,
              setup.error_fd, setup.parent);
  }
  int vfork_errno = errno;
  pthread_sigmask(SIG_SETMASK, &previous, nullptr);
  errno = vfork_errno;
  return pid;
}

std::vector<char*> CStrings(const std::vector<std::string>& strings) {
  std::vector<char*> out;
  out.reserve(strings.size() + 1);
  for (const auto& s : strings) out.push_back(const_cast<char*>(s.c_str()));
  out.push_back(nullptr);
  return out;
}

}  // namespace

Result<Subprocess> Subprocess::Spawn(const SpawnOptions& options) {
  if (options.argv.empty()) {
    return MakeError(ErrorKind::kInvalidArgument, "argv: must name a program");
  }
  const std::string& program = options.argv[0];
  Fd output;
  Fd pipe_read;
  if (options.pipe_output) {
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0) {
      return MakeError(ErrorKind::kInternal, std::string("pipe: ") + std::strerror(errno));
    }
    pipe_read = Fd(fds[0]);
    output = Fd(fds[1]);
  } else if (!options.output_path.empty()) {
    output = Fd(open(options.output_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600));
    if (!output) {
      return MakeError(ErrorKind::kInternal,
                       std::string("cannot open output: ") + std::strerror(errno),
                       options.output_path);
    }
  }
  Fd stdout_file;
  if (!options.stdout_path.empty()) {
    stdout_file =
        Fd(open(options.stdout_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600));
    if (!stdout_file) {
      return MakeError(ErrorKind::kInternal,
                       std::string("cannot open stdout file: ") + std::strerror(errno),
                       options.stdout_path);
    }
  }
  int error_pipe[2];
  if (pipe2(error_pipe, O_CLOEXEC) != 0) {
    return MakeError(ErrorKind::kInternal, std::string("pipe: ") + std::strerror(errno));
  }
  Fd error_read(error_pipe[0]);
  Fd error_write(error_pipe[1]);

  std::vector<char*> argv = CStrings(options.argv);
  static const std::vector<std::string> kNoEnvironment;
  std::vector<char*> envp = CStrings(options.env ? *options.env : kNoEnvironment);
  char* const* env = options.env ? envp.data() : environ;
  pid_t pid = VforkAndExec(
      {&options, argv.data(), env, output.Get(), stdout_file.Get(), error_write.Get(), getpid()});
  if (pid < 0) {
    return MakeError(ErrorKind::kInternal, std::string("vfork: ") + std::strerror(errno), program);
  }

  // Closes the race with the child's own call (a session leader's group is set already).
  if (options.new_process_group && !options.new_session) setpgid(pid, pid);
  error_write.Reset();
  output.Reset();
  stdout_file.Reset();
  int child_errno = 0;
  ssize_t n;
  do {
    n = read(error_read.Get(), &child_errno, sizeof child_errno);
  } while (n < 0 && errno == EINTR);
  if (n > 0) {
    int status = 0;
    waitpid(pid, &status, 0);
    return MakeError(ErrorKind::kFailedPrecondition,
                     std::string("cannot start program: ") + std::strerror(child_errno), program);
  }
  return Subprocess(pid, pipe_read.Release(), options.new_process_group || options.new_session);
}

Subprocess::Subprocess(Subprocess&& other) noexcept
    : pid_(std::exchange(other.pid_, -1)),
      output_fd_(std::exchange(other.output_fd_, -1)),
      own_group_(other.own_group_),
      status_(other.status_) {}

Subprocess& Subprocess::operator=(Subprocess&& other) noexcept {
  if (this != &other) {
    Release();
    pid_ = std::exchange(other.pid_, -1);
    output_fd_ = std::exchange(other.output_fd_, -1);
    own_group_ = other.own_group_;
    status_ = other.status_;
  }
  return *this;
}

Subprocess::~Subprocess() { Release(); }

void Subprocess::Release() {
  if (pid_ > 0 && !status_) {
    Signal(SIGKILL);
    Wait();
  }
  if (output_fd_ >= 0) close(output_fd_);
  pid_ = -1;
  output_fd_ = -1;
}

void Subprocess::Detach() {
  if (output_fd_ >= 0) close(output_fd_);
  pid_ = -1;
  output_fd_ = -1;
}

void Subprocess::Signal(int sig) const {
  if (pid_ <= 0 || status_) return;
  if (own_group_) {
    kill(-pid_, sig);
  } else {
    kill(pid_, sig);
  }
}

int Subprocess::Wait() {
  if (status_) return *status_;
  int status = 0;
  pid_t r;
  do {
    r = waitpid(pid_, &status, 0);
  } while (r < 0 && errno == EINTR);
  status_ = r == pid_ ? DecodeStatus(status) : 255;
  return *status_;
}

std::optional<int> Subprocess::TryWait() {
  if (status_) return status_;
  int status = 0;
  pid_t r = waitpid(pid_, &status, WNOHANG);
  if (r == pid_) status_ = DecodeStatus(status);
  return status_;
}

Result<Completed> RunToCompletion(SpawnOptions options) {
  options.pipe_output = true;
  options.output_path.clear();
  auto child = Subprocess::Spawn(options);
  if (!child) return child.error();
  Completed done;
  char buffer[8192];
  for (;;) {
    ssize_t n = read(child->OutputFd(), buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    done.output.append(buffer, static_cast<size_t>(n));
  }
  done.exit_code = child->Wait();
  return done;
}

}  // namespace berth::sys

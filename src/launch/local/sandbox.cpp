#include "launch/local/sandbox.h"

#include <errno.h>
#include <re2/re2.h>
#include <sched.h>
#include <seccomp.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <memory>
#include <set>

#include "sys/subprocess.h"

namespace berth::launch {
namespace {

namespace fs = std::filesystem;

constexpr const char* kBwrap = "/usr/bin/bwrap";
constexpr const char* kSetpriv = "/usr/bin/setpriv";  // util-linux: on every Debian
constexpr const char* kPrlimit = "/usr/bin/prlimit";  // util-linux too
// The system's read-only folders; a merged-/usr system has some as links, which bwrap follows.
constexpr const char* kSystemFolders[] = {"/usr", "/bin", "/sbin", "/lib", "/lib64"};
// Of /etc, only what tofu, its providers and the tools a module runs read: TLS roots, name
// resolution, users and groups, the dynamic loader's cache, Debian's alternatives, SSH's and
// Git's defaults for module sources. Never all of it: berthd's own secrets may live there.
constexpr const char* kEtcEntries[] = {"/etc/ssl",
                                       "/etc/ca-certificates",
                                       "/etc/ca-certificates.conf",
                                       "/etc/pki",
                                       "/etc/crypto-policies",
                                       "/etc/resolv.conf",
                                       "/etc/hosts",
                                       "/etc/nsswitch.conf",
                                       "/etc/host.conf",
                                       "/etc/gai.conf",
                                       "/etc/services",
                                       "/etc/protocols",
                                       "/etc/passwd",
                                       "/etc/group",
                                       "/etc/ld.so.cache",
                                       "/etc/ld.so.conf",
                                       "/etc/ld.so.conf.d",
                                       "/etc/alternatives",
                                       "/etc/localtime",
                                       "/etc/os-release",
                                       "/etc/ssh/ssh_config",
                                       "/etc/ssh/ssh_config.d",
                                       "/etc/ssh/ssh_known_hosts",
                                       "/etc/gitconfig"};

// Namespaces, the system's read-only folders, /proc and /dev, no capabilities.
std::vector<std::string> BaseArgs(bool privileged) {
  // Not --die-with-parent: that would tie the run to berthd, and a run outlives a berthd
  // restart. The launcher ends the sandbox's process group instead.
  std::vector<std::string> args = {kBwrap, "--unshare-pid", "--unshare-ipc", "--unshare-uts",
                                   "--unshare-cgroup-try"};
  if (!privileged) {
    // berthd's own user, mapped; the run cannot make a user namespace of its own.
    args.insert(args.end(), {"--unshare-user", "--disable-userns"});
  }
  for (const char* folder : kSystemFolders)
    args.insert(args.end(), {"--ro-bind-try", folder, folder});
  // Made 0755 first: a folder bwrap makes above a bind is 0700, out of the run user's reach.
  args.insert(args.end(),
              {"--perms", "0755", "--dir", "/etc", "--perms", "0755", "--dir", "/etc/ssh"});
  for (const char* entry : kEtcEntries) args.insert(args.end(), {"--ro-bind-try", entry, entry});
  args.insert(args.end(), {"--proc", "/proc", "--dev", "/dev", "--cap-drop", "ALL"});
  return args;
}

bool IsUnder(const fs::path& path, const fs::path& folder) {
  auto [end, _] = std::mismatch(folder.begin(), folder.end(), path.begin(), path.end());
  return end == folder.end();
}

bool InSystemFolder(const fs::path& path) {
  return std::any_of(std::begin(kSystemFolders), std::end(kSystemFolders),
                     [&](const char* folder) { return IsUnder(path, folder); });
}

// What every sandboxed run sees of the machine whatever its runner: the system folders and
// the entries of /etc above.
std::vector<fs::path> SystemMounts() {
  std::vector<fs::path> mounts(std::begin(kSystemFolders), std::end(kSystemFolders));
  mounts.insert(mounts.end(), std::begin(kEtcEntries), std::end(kEtcEntries));
  return mounts;
}

// The folders the sandbox must make above its mounts, readable by the run's user (bwrap makes
// them 0700): every ancestor of a mount that no other mount provides.
std::set<fs::path> FoldersAbove(const std::vector<fs::path>& mounts) {
  std::vector<fs::path> provided = SystemMounts();
  provided.push_back("/etc");  // made in BaseArgs
  provided.insert(provided.end(), mounts.begin(), mounts.end());
  std::set<fs::path> folders;
  for (const fs::path& mount : mounts) {
    for (fs::path above = mount.parent_path(); above != above.root_path();
         above = above.parent_path()) {
      bool inside_another = std::any_of(provided.begin(), provided.end(), [&](const fs::path& p) {
        return p != mount && IsUnder(above, p);
      });
      if (!inside_another) folders.insert(above);
    }
  }
  return folders;
}

}  // namespace

Result<Sandbox> Sandbox::Probe(const RunUserRange& run_users) {
  bool privileged = geteuid() == 0;
  if (access(kBwrap, X_OK) != 0)
    return MakeError(ErrorKind::kFailedPrecondition,
                     "local runs need bubblewrap at /usr/bin/bwrap (Debian: apt-get install "
                     "bubblewrap), or --insecure-local-runners");
  sys::SpawnOptions probe;
  probe.argv = BaseArgs(privileged);
  probe.argv.insert(probe.argv.end(), {"--", "/bin/true"});
  probe.env = std::vector<std::string>{};
  auto done = sys::RunToCompletion(probe);
  if (!done) return done.error();
  if (done->exit_code != 0) {
    return MakeError(ErrorKind::kFailedPrecondition,
                     "bubblewrap cannot make a sandbox here (" + done->output +
                         "): local runs need " +
                         (privileged ? std::string("mount and PID namespaces")
                                     : "unprivileged user namespaces (sysctl "
                                       "kernel.unprivileged_userns_clone=1 and "
                                       "user.max_user_namespaces > 0)") +
                         ", or --insecure-local-runners");
  }
  if (access(kPrlimit, X_OK) != 0)
    return MakeError(ErrorKind::kFailedPrecondition,
                     "local runs set their process limit with /usr/bin/prlimit (util-linux), "
                     "which is missing");
  if (!privileged) return Sandbox(nullptr);
  if (access(kSetpriv, X_OK) != 0)
    return MakeError(ErrorKind::kFailedPrecondition,
                     "a root berthd drops local runs to their own user with /usr/bin/setpriv "
                     "(util-linux), which is missing");
  auto claim = RunUserClaim::Take(run_users);
  if (!claim) return claim.error();
  return Sandbox(std::move(*claim));
}

const std::vector<uid_t>& Sandbox::RunUids() const {
  static const std::vector<uid_t> kNone;
  return run_users_ ? run_users_->Uids() : kNone;
}

std::string WithRunUser(const std::string& machines_file, uid_t uid, const fs::path& home,
                        bool group) {
  std::string file = machines_file;
  if (!file.empty() && file.back() != '\n') file += '\n';
  const std::string id = std::to_string(uid);
  file += group ? "berth-run:x:" + id + ":\n"
                : "berth-run:x:" + id + ":" + id + ":berth run:" + home.string() +
                      ":/usr/sbin/nologin\n";
  return file;
}

std::vector<std::string> Sandbox::Wrap(const SandboxMounts& mounts,
                                       const std::vector<std::string>& command, int seccomp_fd,
                                       uid_t run_uid, rlim_t max_processes) const {
  std::vector<std::string> args = BaseArgs(Privileged());
  args.insert(args.end(), {"--bind", mounts.tmp.string(), "/tmp"});
  // Outer folders first, so that a mount inside another lands on top of it.
  std::map<fs::path, bool> writable;
  for (const fs::path& p : mounts.read_only) {
    // A system folder is bound read-only with all beneath it already: each bind costs bwrap a
    // read of the mount table, on every run.
    fs::path path = p.lexically_normal();
    if (!InSystemFolder(path)) writable[path] = false;
  }
  for (const fs::path& p : mounts.read_write) writable[p.lexically_normal()] = true;
  std::vector<fs::path> all;
  all.reserve(writable.size());
  for (const auto& [p, _] : writable) all.push_back(p);
  for (const fs::path& folder : FoldersAbove(all))
    args.insert(args.end(), {"--perms", "0755", "--dir", folder});
  for (const auto& [p, rw] : writable)
    args.insert(args.end(), {rw ? "--bind" : "--ro-bind-try", p, p});
  if (mounts.own_network) args.emplace_back("--unshare-net");
  if (!mounts.hostname.empty()) args.insert(args.end(), {"--hostname", mounts.hostname});
  if (!mounts.hosts.empty()) args.insert(args.end(), {"--ro-bind", mounts.hosts, "/etc/hosts"});
  if (!mounts.passwd.empty()) args.insert(args.end(), {"--ro-bind", mounts.passwd, "/etc/passwd"});
  if (!mounts.group.empty()) args.insert(args.end(), {"--ro-bind", mounts.group, "/etc/group"});
  args.insert(args.end(), {"--chdir", mounts.working_dir.string()});
  args.insert(args.end(), {"--seccomp", std::to_string(seccomp_fd)});
  if (Privileged()) {
    // Root inside only to become the run's user at once; the capabilities go with the uid.
    args.insert(args.end(),
                {"--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID", "--", kSetpriv,
                 "--reuid=" + std::to_string(run_uid), "--regid=" + std::to_string(run_uid),
                 "--clear-groups", "--no-new-privs"});
  }
  const std::string processes = std::to_string(max_processes);
  args.insert(args.end(), {"--", kPrlimit, "--nproc=" + processes + ":" + processes, "--"});
  args.insert(args.end(), command.begin(), command.end());
  return args;
}

Result<sys::Fd> DangerousCallsFilter() {
  std::unique_ptr<void, void (*)(scmp_filter_ctx)> ctx(seccomp_init(SCMP_ACT_ALLOW),
                                                       seccomp_release);
  if (!ctx) return MakeError(ErrorKind::kInternal, "seccomp_init failed");
  const uint32_t refuse = SCMP_ACT_ERRNO(EPERM);
  static const char* const kRefused[] = {"ptrace",
                                         "process_vm_readv",
                                         "process_vm_writev",
                                         "kcmp",
                                         "mount",
                                         "umount2",
                                         "pivot_root",
                                         "move_mount",
                                         "open_tree",
                                         "fsopen",
                                         "fsmount",
                                         "fspick",
                                         "unshare",
                                         "setns",
                                         "kexec_load",
                                         "kexec_file_load",
                                         "init_module",
                                         "finit_module",
                                         "delete_module",
                                         "bpf",
                                         "keyctl",
                                         "add_key",
                                         "request_key",
                                         "perf_event_open",
                                         "userfaultfd",
                                         "open_by_handle_at",
                                         "name_to_handle_at",
                                         "swapon",
                                         "swapoff",
                                         "reboot",
                                         "acct",
                                         "settimeofday",
                                         "clock_settime",
                                         "clock_adjtime",
                                         "adjtimex",
                                         "syslog",
                                         "quotactl",
                                         "iopl",
                                         "ioperm",
                                         "fanotify_init",
                                         "io_uring_setup",
                                         "io_uring_enter",
                                         "io_uring_register",
                                         "lookup_dcookie"};
  for (const char* name : kRefused) {
    int nr = seccomp_syscall_resolve_name(name);
    if (nr == __NR_SCMP_ERROR) continue;  // not on this architecture
    if (seccomp_rule_add(ctx.get(), refuse, nr, 0) != 0)
      return MakeError(ErrorKind::kInternal, std::string("seccomp rule for ") + name);
  }
  // No keystrokes pushed into a terminal (TIOCSTI) and no console commands (TIOCLINUX), should
  // the run ever hold one. The kernel reads the request as 32 bits: so does the rule, or a
  // value with its high bits set would pass it (CVE-2019-10063).
  for (scmp_datum_t request : {scmp_datum_t{TIOCSTI}, scmp_datum_t{TIOCLINUX}}) {
    const scmp_arg_cmp is_request{1, SCMP_CMP_MASKED_EQ, 0xFFFFFFFFU, request};
    if (seccomp_rule_add_array(ctx.get(), refuse, SCMP_SYS(ioctl), 1, &is_request) != 0)
      return MakeError(ErrorKind::kInternal, "seccomp rule for ioctl");
  }
  // No new namespaces by clone either; clone3 hides its flags in memory, so it is refused as
  // unknown and callers (glibc) fall back to clone.
  for (int flag : {CLONE_NEWNS, CLONE_NEWUSER, CLONE_NEWPID, CLONE_NEWNET, CLONE_NEWIPC,
                   CLONE_NEWUTS, CLONE_NEWCGROUP}) {
    auto bit = static_cast<scmp_datum_t>(flag);
    const scmp_arg_cmp has_flag{0, SCMP_CMP_MASKED_EQ, bit, bit};  // (flags & bit) == bit
    if (seccomp_rule_add_array(ctx.get(), refuse, SCMP_SYS(clone), 1, &has_flag) != 0)
      return MakeError(ErrorKind::kInternal, "seccomp rule for clone");
  }
  int clone3 = seccomp_syscall_resolve_name("clone3");
  if (clone3 != __NR_SCMP_ERROR &&
      seccomp_rule_add(ctx.get(), SCMP_ACT_ERRNO(ENOSYS), clone3, 0) != 0)
    return MakeError(ErrorKind::kInternal, "seccomp rule for clone3");
  sys::Fd program(memfd_create("berth-seccomp", MFD_CLOEXEC));
  if (!program || seccomp_export_bpf(ctx.get(), program.Get()) != 0 ||
      lseek(program.Get(), 0, SEEK_SET) != 0)
    return MakeError(ErrorKind::kInternal,
                     std::string("cannot write the seccomp program: ") + std::strerror(errno));
  return program;
}

std::optional<fs::path> SeenByEveryRun(const fs::path& path,
                                       const std::vector<fs::path>& extra_mounts) {
  std::error_code ec;
  const fs::path secret = fs::weakly_canonical(fs::absolute(path, ec), ec);
  std::vector<fs::path> mounts = SystemMounts();
  mounts.insert(mounts.end(), extra_mounts.begin(), extra_mounts.end());
  for (const fs::path& mount : mounts) {
    // A mount through a link (a merged /usr's /bin, a resolv.conf managed elsewhere) shows
    // what it points at.
    std::error_code missing;
    const fs::path seen = fs::weakly_canonical(mount, missing);
    if (!missing && (IsUnder(secret, seen) || IsUnder(secret, mount))) return mount;
  }
  return std::nullopt;
}

std::vector<fs::path> PathsInCliConfig(const std::string& text) {
  static const re2::RE2 kPath(R"re(\bpath\s*=\s*"([^"]+)")re");
  std::vector<fs::path> paths;
  re2::StringPiece rest(text);
  std::string path;
  while (re2::RE2::FindAndConsume(&rest, kPath, &path)) paths.emplace_back(path);
  return paths;
}

}  // namespace berth::launch

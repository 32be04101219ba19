// How a test runs the real, pinned tofu offline: the binary, a CLI config that points at the
// provider mirror (and nowhere else), a plugin cache shared by the test binary, and a clean
// environment in which any attempt to reach the network fails at once.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "core/error.h"
#include "sys/files.h"

namespace berth::testenv {

class TofuTestEnv {
 public:
  static Result<TofuTestEnv*> Shared();

  const std::filesystem::path& Tofu() const { return tofu_; }
  const std::filesystem::path& CliConfig() const { return cli_config_; }
  const std::filesystem::path& PluginCache() const { return plugin_cache_.Path(); }

  // NAME=VALUE entries for a tofu child process whose HOME is home.
  std::vector<std::string> Environment(const std::filesystem::path& home) const;

 private:
  TofuTestEnv(std::filesystem::path tofu, std::filesystem::path cli_config,
              sys::TempDir plugin_cache)
      : tofu_(std::move(tofu)),
        cli_config_(std::move(cli_config)),
        plugin_cache_(std::move(plugin_cache)) {}

  std::filesystem::path tofu_;
  std::filesystem::path cli_config_;
  sys::TempDir plugin_cache_;
};

}  // namespace berth::testenv

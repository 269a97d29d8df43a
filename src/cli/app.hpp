// The CLI11 definitions of zerobox's command line: the run flags and `zerobox snapshot`.
// parse_args() and snapshot_main() parse with them, and zb_docs_gen (tools/docs_gen)
// walks the same objects at build time to write the man page and the shell completions,
// so --help, the man page and the completions cannot disagree.
#pragma once

#include <CLI/CLI.hpp>
#include <memory>
#include <string>
#include <vector>

namespace zb::cli {

// Where the run flags' values land when the App of make_run_app() parses argv. List
// flags keep the raw words; parse_args() splits them and checks them.
struct RunFlags {
  std::vector<std::string> allow_read, deny_read, allow_write, deny_write, allow_net, deny_net, resolve, upstream_ca,
      secrets, secret_files, secret_hosts, envs, allow_env, deny_env, snapshot_paths, snapshot_exclude;
  bool write_all = false, net_all = false, env_all = false, allow_all = false, no_sandbox = false, strict = false,
       debug = false, quiet = false, no_protect = false, snapshot = false, restore = false, review = false;
  std::string cwd, profile, status_fd;
  std::string tmpfs_size;
};

// The App of `zerobox [OPTIONS] [--] COMMAND [ARGS...]`, bound to `f` (which must outlive
// it). Options in the group "" are internal: a flag whose value is optional, "--X", has a
// hidden twin "--X-all-internal" that its bare form is rewritten to before parsing.
std::unique_ptr<CLI::App> make_run_app(RunFlags& f);

// Where the values of `zerobox snapshot SUBCOMMAND ...` land.
struct SnapshotFlags {
  bool json = false, force = false, stat = false, name_status = false;
  std::string id, color = "auto", older;
  std::vector<std::string> paths;
};

// The App of `zerobox snapshot`, with one subcommand per operation (list, show, diff,
// accept, discard, restore, clean), bound to `f` (which must outlive it).
std::unique_ptr<CLI::App> make_snapshot_app(SnapshotFlags& f);

}  // namespace zb::cli

// zerobox::Policy: the plain-data description of one sandboxed run. The CLI and the
// profile loader fill it in (or a program using the C++ API); zerobox::run() checks and
// canonicalises it first; the sandbox is built from nothing else. Copyable, comparable,
// printable by --debug.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace zerobox {

enum class NetMode {
  None,      // fresh network namespace with only loopback (the default)
  Host,      // --allow-net with no value: the host's network
  Filtered,  // --allow-net=DOMAINS / --deny-net / secrets: only through zerobox's proxy
};

enum class SnapshotMode { Off, Snapshot, Restore, Review };

struct Secret {
  std::string key;
  std::string value;               // never logged, never passed into the sandbox
  std::vector<std::string> hosts;  // --secret-host; empty means every allowed host
  std::string file;                // --secret-file: the value is read from here
  std::string placeholder;         // output, set by run(): what the command sees instead
};

struct Policy {
  // Filesystem. Paths are as given; run() makes them absolute and canonical first.
  bool read_restricted = false;  // --allow-read was given
  std::vector<std::string> allow_read;
  std::vector<std::string> deny_read;
  bool write_all = false;  // bare --allow-write
  std::vector<std::string> allow_write;
  // Output (run() sets it; a value given is overwritten): the --allow-write paths that
  // did not exist and lie inside another writable path. zerobox does not create them (the command may, as it would below any
  // writable path): they lift protection for themselves and everything below them.
  std::vector<std::string> allow_write_new;
  std::vector<std::string> deny_write;
  bool protect = true;  // false with --no-protect
  // --tmpfs-size: the most the scratch space (scratch /tmp and /var/tmp, /dev/shm) may
  // hold together, in bytes; 0 is the default, half the RAM.
  std::uint64_t tmpfs_size = 0;

  // Network.
  NetMode net = NetMode::None;
  std::vector<std::string> allow_net;
  std::vector<std::string> deny_net;
  std::vector<std::pair<std::string, std::string>> resolve;  // --resolve HOST:IP
  std::vector<std::string> upstream_ca;
  std::vector<Secret> secrets;
  // Output (run() sets it; a value given is overwritten): a bare --allow-net (or -A)
  // together with --deny-net or secrets (filtered mode where everything but the denied
  // names is allowed).
  bool allow_net_all = false;

  // Environment.
  std::vector<std::pair<std::string, std::string>> env_set;  // --env, in order
  bool env_all = false;                                      // bare --allow-env
  std::vector<std::string> allow_env;
  std::vector<std::string> deny_env;

  // Snapshots.
  SnapshotMode snapshot = SnapshotMode::Off;
  std::vector<std::string> snapshot_paths;
  std::vector<std::string> snapshot_exclude;
  // Output (run() sets it; a value given is overwritten): the tracked paths stand for
  // "everything" (a bare --allow-write), so the store may lie inside one of them (it is
  // masked there).
  bool snapshot_everything = false;

  // The command and how it runs.
  std::vector<std::string> argv;
  std::string cwd;  // -C; empty means the caller's working directory
  bool allow_all = false;
  bool no_sandbox = false;
  bool strict = false;
  int status_fd = -1;
  bool debug = false;
  bool quiet = false;
};

}  // namespace zerobox

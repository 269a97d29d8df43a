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

// One --secret or --secret-file: a value the command never sees. Its environment holds
// a placeholder instead, which zerobox's proxy replaces with the value in requests to the
// secret's hosts (docs/usage.md "Secrets").
struct Secret {
  std::string key;                 // the environment variable the command reads it from
  std::string value;               // never logged, never passed into the sandbox
  std::vector<std::string> hosts;  // --secret-host; empty means every allowed host
  std::string file;                // --secret-file: the value is read from here
};

// Inputs only: run() reads a Policy and never hands one back.
struct Policy {
  // Filesystem. Paths are as given; run() makes them absolute and canonical first.
  bool read_restricted = false;          // --allow-read was given: only what it names (and the system) is readable
  std::vector<std::string> allow_read;   // --allow-read paths
  std::vector<std::string> deny_read;    // --deny-read: unreadable, whatever else allows them
  bool write_all = false;                // bare --allow-write: everything readable is writable
  std::vector<std::string> allow_write;  // --allow-write paths; a missing one is made (or lifts protection below it)
  std::vector<std::string> deny_write;   // --deny-write: read-only, whatever else allows them
  bool protect = true;                   // false with --no-protect: no protected names or paths
  // --tmpfs-size: the most the scratch space (scratch /tmp and /var/tmp, /dev/shm) may
  // hold together, in bytes; 0 is the default, half the RAM.
  std::uint64_t tmpfs_size = 0;

  // Network.
  NetMode net = NetMode::None;                               // see NetMode; filtering lists make it Filtered
  std::vector<std::string> allow_net;                        // --allow-net=DOMAINS: the hosts the proxy lets through
  std::vector<std::string> deny_net;                         // --deny-net: hosts refused even when allowed
  std::vector<std::pair<std::string, std::string>> resolve;  // --resolve HOST:IP
  std::vector<std::string> upstream_ca;                      // --upstream-ca: PEM files trusted for upstream TLS
  std::vector<Secret> secrets;                               // --secret, --secret-file

  // Environment.
  std::vector<std::pair<std::string, std::string>> env_set;  // --env, in order
  bool env_all = false;                                      // bare --allow-env
  std::vector<std::string> allow_env;                        // --allow-env=NAMES: passed on beside the defaults
  std::vector<std::string> deny_env;                         // --deny-env: never passed on

  // Snapshots.
  SnapshotMode snapshot = SnapshotMode::Off;  // --snapshot, --restore or --review
  std::vector<std::string> snapshot_paths;    // --snapshot-path: the tracked roots; empty: chosen by run()
  std::vector<std::string> snapshot_exclude;  // --snapshot-exclude patterns

  // The command and how it runs.
  std::vector<std::string> argv;  // the command and its arguments; argv[0] is searched on PATH
  std::string cwd;                // -C; empty means the caller's working directory
  bool allow_all = false;         // -A: read and write everything, host network
  bool no_sandbox = false;        // --no-sandbox: the environment policy only
  bool strict = false;            // --strict-sandbox: 125 when an isolation layer is unavailable
};

}  // namespace zerobox

// The protected lists, the caller, PATH search, host unix sockets, the command's
// environment, --tmpfs-size and the --debug summary. finalize() is in finalize.cpp,
// compute_fs() in fs_rules.cpp.
#include "policy/policy.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdint>
#include <fstream>
#include <map>
#include <optional>

#include "policy/internal.hpp"
#include "util/ca_bundle.hpp"
#include "util/env.hpp"
#include "util/log.hpp"
#include "util/path.hpp"

namespace zb::policy {

using internal::sort_unique;
using zerobox::NetMode;
using zerobox::Policy;

const std::vector<std::string>& protected_write_names() {
  static const std::vector<std::string> names = {
      ".git/hooks", ".git/config", ".gitmodules",
      // Other ways to point git at a config or hooks it would run: a shared repository
      // (commondir), per-worktree config, and the git directories of submodules and
      // linked worktrees, which have their own config and hooks.
      ".git/commondir", ".git/config.worktree", ".git/modules", ".git/worktrees",
      // Shell start-up files run by the next interactive shell.
      ".bashrc", ".bash_profile", ".bash_login", ".bash_logout", ".profile", ".zshrc", ".zshenv", ".zprofile",
      ".zlogin", ".zlogout", ".cshrc", ".tcshrc", ".kshrc", ".config/fish", ".envrc",
      // Editor and agent configuration that can execute code.
      ".vscode", ".idea", ".mcp.json", ".claude", ".codex", ".agents", ".cursor", ".npmrc", ".gitconfig",
      // git's other user config (XDG), and what a desktop session starts at login.
      ".config/git", ".config/systemd", ".config/autostart"};
  return names;
}

const std::vector<std::string>& protected_read_paths() {
  // docs/security.md lists them with what each holds. Each one that exists costs a mount
  // at start-up; the others a stat() (docs/performance.md).
  static const std::vector<std::string> paths = {
      // Keys and credentials: ssh and gpg, cloud and container tools, package registries,
      // password stores and keyrings.
      "~/.ssh", "~/.gnupg", "~/.aws", "~/.azure", "~/.config/gcloud", "~/.gcloud", "~/.oci", "~/.kube", "~/.minikube",
      "~/.docker", "~/.config/containers/auth.json", "~/.vault-token", "~/.terraform.d", "~/.terraformrc",
      "~/.config/doctl", "~/.config/hcloud", "~/.fly", "~/.s3cfg", "~/.boto", "~/.databrickscfg", "~/.netrc",
      "~/.git-credentials", "~/.config/git/credentials", "~/.config/gh", "~/.config/hub", "~/.config/glab-cli",
      "~/.subversion/auth", "~/.pypirc", "~/.npmrc", "~/.yarnrc.yml", "~/.cargo/credentials.toml",
      "~/.cargo/credentials", "~/.gem/credentials", "~/.m2/settings-security.xml", "~/.cache/huggingface/token",
      "~/.huggingface/token", "~/.config/rclone", "~/.config/sops", "~/.config/borg", "~/.config/op", "~/.op",
      "~/.config/Bitwarden CLI", "~/.password-store", "~/.pki", "~/.local/share/keyrings", "~/.local/share/kwalletd",
      "~/.msmtprc", "~/.fetchmailrc",
      // Shell and REPL history: commands typed with passwords and tokens in them.
      "~/.bash_history", "~/.zsh_history", "~/.zhistory", "~/.histfile", "~/.sh_history",
      "~/.local/share/fish/fish_history", "~/.python_history", "~/.ipython/profile_default/history.sqlite",
      "~/.node_repl_history", "~/.irb_history", "~/.pry_history", "~/.psql_history", "~/.mysql_history",
      "~/.sqlite_history", "~/.rediscli_history", "~/.dbshell", "~/.mongosh", "~/.scala_history",
      "~/.julia/logs/repl_history.jl", "~/.lesshst",
      // Browser, mail and chat profiles: cookies, sessions and saved passwords.
      "~/.mozilla", "~/.thunderbird", "~/.librewolf", "~/.config/google-chrome", "~/.config/google-chrome-beta",
      "~/.config/google-chrome-unstable", "~/.config/chromium", "~/.config/BraveSoftware", "~/.config/microsoft-edge",
      "~/.config/vivaldi", "~/.config/opera", "~/snap/firefox/common/.mozilla", "~/snap/chromium/common/chromium",
      "~/.var/app/org.mozilla.firefox", "~/.var/app/com.google.Chrome", "~/.var/app/org.chromium.Chromium",
      "~/.var/app/com.brave.Browser", "~/.var/app/org.mozilla.Thunderbird", "~/.config/Slack", "~/.config/discord",
      "~/.config/Signal",
      // The system's.
      "/etc/shadow", "/etc/gshadow", "/etc/shadow-", "/etc/gshadow-", "/etc/ssh/*key*", "/etc/ssl/private"};
  return paths;
}

const std::vector<std::string>& system_read_paths() {
  static const std::vector<std::string> paths = {"/usr",   "/bin",    "/sbin", "/lib", "/lib32",
                                                 "/lib64", "/libx32", "/etc",  "/opt"};
  return paths;
}

Caller current_caller(const std::vector<std::string>& environ) {
  Caller c;
  for (const auto& kv : environ) {
    auto eq = kv.find('=');
    if (eq == std::string::npos) continue;
    c.env.emplace(kv.substr(0, eq), kv.substr(eq + 1));
  }
  char buf[4096];
  if (::getcwd(buf, sizeof buf) != nullptr) c.cwd = buf;
  if (c.cwd.empty()) c.cwd = "/";
  auto home = c.env.find("HOME");
  c.home = home != c.env.end() && !home->second.empty() ? home->second : "/";
  c.uid = ::getuid();
  c.gid = ::getgid();
  return c;
}

std::string resolve_command(const std::string& name, const std::string& path_env, const std::string& cwd) {
  auto usable = [](const std::string& p) {
    struct stat st{};
    return ::stat(p.c_str(), &st) == 0 && S_ISREG(st.st_mode);
  };
  if (name.find('/') != std::string::npos) {
    std::string abs = path::absolute(name, cwd, "/");
    return usable(abs) ? abs : std::string();
  }
  for (const auto& dir : env::path_dirs(path_env)) {
    std::string cand = path::absolute(path::join(dir.empty() ? cwd : dir, name), cwd, "/");
    if (usable(cand) && ::access(cand.c_str(), X_OK) == 0) return cand;
  }
  return {};
}

std::vector<std::string> bound_unix_sockets(const std::string& proc_net_unix) {
  // "Num RefCount Protocol Flags Type St Inode Path": the path, when there is one, is the
  // rest of the line after the seventh field. Abstract names start with '@', and paths
  // bound relative to some process's directory cannot be placed: only absolute ones count.
  std::vector<std::string> out;
  std::ifstream in(proc_net_unix);
  std::string line;
  std::getline(in, line);  // the header
  while (std::getline(in, line)) {
    std::size_t pos = 0;
    for (int field = 0; field < 7 && pos != std::string::npos; ++field) {
      pos = line.find_first_not_of(' ', pos);
      if (pos != std::string::npos) pos = line.find(' ', pos);
    }
    if (pos == std::string::npos || pos + 1 >= line.size() || line[pos + 1] != '/') continue;
    out.push_back(line.substr(pos + 1));
  }
  sort_unique(out);
  return out;
}

std::vector<std::string> build_env(const Policy& p, const Resolved& r, const Caller& c) {
  static const char* const k_default[] = {"PATH", "HOME", "USER", "SHELL", "TERM", "LANG"};
  std::map<std::string, std::string> env;
  if (p.env_all) {
    env = c.env;
  } else {
    for (const char* k : k_default) {
      auto it = c.env.find(k);
      if (it != c.env.end()) env.insert(*it);
    }
    for (const auto& k : p.allow_env) {
      auto it = c.env.find(k);
      if (it != c.env.end()) env.insert(*it);
    }
  }
  for (const auto& k : p.deny_env) env.erase(k);
  if (p.net == NetMode::Filtered && !p.no_sandbox) {
    // Every client that honours proxy variables goes through zerobox's proxy; the rest
    // reach nothing (the namespace has only lo). Node 20's fetch ignores them; Node 24
    // honours them with NODE_USE_ENV_PROXY=1.
    std::string url = "http://127.0.0.1:" + std::to_string(k_proxy_port);
    for (const char* k : {"HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"})
      env[k] = url;
    env["NO_PROXY"] = "";
    env["no_proxy"] = "";
    env["NODE_USE_ENV_PROXY"] = "1";
  }
  for (const auto& kv : p.env_set) env[kv.first] = kv.second;
  if (!p.secrets.empty() && !p.no_sandbox) {
    for (std::size_t i = 0; i < p.secrets.size(); ++i) {
      env[p.secrets[i].key] = i < r.placeholders.size() ? r.placeholders[i] : std::string();
    }
    // The trust bundle with the run's CA is shown at the system bundle's path (run/run.cpp); the
    // usual variables name it too, for clients that look nowhere else.
    auto bundles = ca_bundle::present_paths();
    if (!bundles.empty()) {
      for (const char* k : {"SSL_CERT_FILE", "NODE_EXTRA_CA_CERTS", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE",
                            "GIT_SSL_CAINFO", "PIP_CERT"})
        env[k] = bundles.front();
    }
  }
  std::vector<std::string> out;
  out.reserve(env.size());
  for (const auto& kv : env) out.push_back(kv.first + "=" + kv.second);
  return out;
}

std::optional<std::uint64_t> parse_size(std::string_view s) {
  std::uint64_t n = 0;
  size_t i = 0;
  for (; i < s.size() && s[i] >= '0' && s[i] <= '9'; ++i) {
    if (n > (UINT64_MAX - 9) / 10) return std::nullopt;
    n = n * 10 + static_cast<std::uint64_t>(s[i] - '0');
  }
  if (i == 0 || n == 0 || s.size() - i > 1) return std::nullopt;
  unsigned shift = 0;
  if (i < s.size()) {
    switch (s[i]) {
      case 'k':
      case 'K': shift = 10; break;
      case 'm':
      case 'M': shift = 20; break;
      case 'g':
      case 'G': shift = 30; break;
      case 't':
      case 'T': shift = 40; break;
      default: return std::nullopt;
    }
  }
  if (n > (UINT64_MAX >> shift)) return std::nullopt;
  return n << shift;
}

std::vector<std::string> describe(const Policy& p, const FsRules& fs) {
  std::vector<std::string> out;
  auto list = [](const std::vector<std::string>& v) {
    if (v.empty()) return std::string("(none)");
    std::string s;
    for (const auto& x : v) {
      if (!s.empty()) s += ", ";
      s += log::quote(x);
    }
    return s;
  };
  out.push_back("policy: command " + list(p.argv) + " in " + log::quote(p.cwd));
  out.push_back(std::string("policy: read ") +
                (fs.read_restricted ? "restricted to " + list(fs.readable) : "everything"));
  out.push_back(std::string("policy: write ") + (fs.write_all ? "everything" : list(fs.writable)));
  out.push_back("policy: read-only inside writable: " + list(fs.read_only));
  out.push_back("policy: unreadable: " + list(fs.masked));
  if (!fs.absent_protected.empty()) out.push_back("policy: protected but absent: " + list(fs.absent_protected));
  if (!fs.protected_links.empty()) out.push_back("policy: protected symlinks: " + list(fs.protected_links));
  out.push_back("policy: scratch space (/tmp, /var/tmp, /dev/shm) up to " +
                (p.tmpfs_size == 0 ? std::string("half the RAM") : std::to_string(p.tmpfs_size) + " bytes"));
  const char* net = p.net == NetMode::None   ? "none (loopback only)"
                    : p.net == NetMode::Host ? "host network"
                                             : "filtered";
  out.push_back(std::string("policy: network ") + net);
  for (const auto& sec : p.secrets) {  // names and hosts; never a value
    out.push_back("policy: secret " + sec.key + (sec.file.empty() ? "" : " (from " + log::quote(sec.file) + ")") +
                  " for " + (sec.hosts.empty() ? std::string("every host --allow-net allows") : list(sec.hosts)));
  }
  out.push_back(std::string("policy: environment ") + (p.env_all ? "all inherited" : "PATH HOME USER SHELL TERM LANG") +
                (p.allow_env.empty() ? "" : " + " + list(p.allow_env)) +
                (p.deny_env.empty() ? "" : " - " + list(p.deny_env)));
  return out;
}

}  // namespace zb::policy

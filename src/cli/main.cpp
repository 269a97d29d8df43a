// zerobox's entry point: parse, run, and the one place exceptions are caught.
#include <unistd.h>

#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "cli/cli.hpp"
#include "run/run.hpp"
#include "util/error.hpp"
#include "util/log.hpp"
#include "util/scrub.hpp"
#include "zerobox/zerobox.hpp"

extern char** environ;

int main(int argc, char** argv) {
  zb::exec::hold_std_fds();  // before anything opens a file
  zb::scrub::remember(argc, argv, environ);
  std::vector<std::string> args(argv + 1, argv + argc);
  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e) env.emplace_back(*e);
  try {
    // A command named "snapshot" runs as `zerobox -- snapshot`.
    if (!args.empty() && args[0] == "snapshot") {
      return zb::cli::snapshot_main(std::vector<std::string>(args.begin() + 1, args.end()), env);
    }
    // The sandbox's namespaces are created on another thread while the rest is parsed.
    std::unique_ptr<zb::exec::Prestart> prestarted;
    if (auto new_net = zb::cli::guess_new_net(args)) prestarted = zb::exec::Prestart::launch(*new_net);
    auto parsed = zb::cli::parse_args(args, env);
    if (parsed.action != zb::cli::Action::Run) {
      std::fputs(parsed.text.c_str(), stdout);
      return 0;
    }
    zerobox::RunOptions options = parsed.options;
    options.wait_for_teardown = false;
    return zb::run::run_prestarted(std::move(parsed.policy), env, options, std::move(prestarted));
  } catch (const zb::UsageError& e) {
    zb::log::error(e.message);
    std::fputs("Try 'zerobox --help' for more information.\n", stderr);
    return zb::k_exit_usage;
  } catch (const zb::SetupError& e) {
    zb::log::error(e.message);
    return zb::k_exit_setup;
  } catch (const std::exception& e) {
    zb::log::error(std::string("internal error: ") + e.what());
    return zb::k_exit_setup;
  }
}

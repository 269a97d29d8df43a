// zb_docs_gen OUTDIR TEMPLATE: writes zerobox's man page (OUTDIR/zerobox.1, from TEMPLATE,
// docs/man/zerobox.1.in) and its bash, zsh and fish completions (zerobox.bash, _zerobox,
// zerobox.fish) at build time, from the CLI11 Apps that zerobox itself parses with
// (src/cli/app.hpp), so a flag cannot be added, renamed or re-described in one and not in
// the others.
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "cli/app.hpp"
#include "model.hpp"

namespace {

bool write_file(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
  out.close();
  if (!out) {
    std::fprintf(stderr, "zb_docs_gen: cannot write %s: %s\n", path.c_str(), std::strerror(errno));
    return false;
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace zb::docs_gen;
  if (argc != 3) {
    std::fprintf(stderr, "usage: zb_docs_gen OUTDIR TEMPLATE\n");
    return 2;
  }
  std::string dir = argv[1];
  std::ifstream in(argv[2], std::ios::binary);
  std::ostringstream man_template;
  man_template << in.rdbuf();
  if (!in || man_template.str().empty()) {
    std::fprintf(stderr, "zb_docs_gen: cannot read %s: %s\n", argv[2], std::strerror(errno));
    return 1;
  }
  zb::cli::RunFlags run_flags;
  auto run_app = zb::cli::make_run_app(run_flags);
  zb::cli::SnapshotFlags snapshot_flags;
  auto snapshot_app = zb::cli::make_snapshot_app(snapshot_flags);

  Command run = read_command(*run_app, "zerobox");
  std::vector<Command> snapshot;
  for (const CLI::App* sub : std::as_const(*snapshot_app).get_subcommands([](const CLI::App*) { return true; })) {
    snapshot.push_back(read_command(*sub, sub->get_name()));
  }
  bool ok = write_file(dir + "/zerobox.1", write_man(man_template.str(), run, snapshot, *snapshot_app)) &&
            write_file(dir + "/zerobox.bash", write_bash(run, snapshot)) &&
            write_file(dir + "/_zerobox", write_zsh(run, snapshot, *snapshot_app)) &&
            write_file(dir + "/zerobox.fish", write_fish(run, snapshot, *snapshot_app));
  return ok ? 0 : 1;
}

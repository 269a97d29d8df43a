// zb_docs_gen OUTDIR MAN_TEMPLATE MD_TEMPLATE FLAGS: writes zerobox's man page
// (OUTDIR/zerobox.1, from MAN_TEMPLATE, docs/man/zerobox.1.in), its command-line reference
// (OUTDIR/cli-reference.md, from MD_TEMPLATE, docs/cli-reference.md.in) and its bash, zsh
// and fish completions (zerobox.bash, _zerobox, zerobox.fish) at build time, from the CLI11
// Apps that zerobox itself parses with (src/cli/app.hpp) and the long descriptions of
// FLAGS (docs/flags.toml), so a flag cannot be added, renamed or re-described in one and
// not in the others. docs/cli-reference.md is the checked-in copy of the reference; the
// docs.cli_reference test fails when it differs from what this makes.
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <exception>
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

bool read_file(const char* path, std::string& text) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream all;
  all << in.rdbuf();
  text = all.str();
  if (!in || text.empty()) {
    std::fprintf(stderr, "zb_docs_gen: cannot read %s: %s\n", path, std::strerror(errno));
    return false;
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace zb::docs_gen;
  if (argc != 5) {
    std::fprintf(stderr, "usage: zb_docs_gen OUTDIR MAN_TEMPLATE MD_TEMPLATE FLAGS\n");
    return 2;
  }
  std::string dir = argv[1];
  std::string man_template, md_template;
  if (!read_file(argv[2], man_template) || !read_file(argv[3], md_template)) return 1;
  zb::cli::RunFlags run_flags;
  auto run_app = zb::cli::make_run_app(run_flags);
  zb::cli::SnapshotFlags snapshot_flags;
  auto snapshot_app = zb::cli::make_snapshot_app(snapshot_flags);

  Command run = read_command(*run_app, "zerobox");
  std::vector<Command> snapshot;
  for (const CLI::App* sub : std::as_const(*snapshot_app).get_subcommands([](const CLI::App*) { return true; })) {
    snapshot.push_back(read_command(*sub, sub->get_name()));
  }
  Reference ref;
  try {
    ref = read_reference(argv[4], run, snapshot);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "zb_docs_gen: %s\n", e.what());
    return 1;
  }
  std::string markdown;
  try {
    markdown = write_markdown(md_template, run, snapshot, ref);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "zb_docs_gen: %s\n", e.what());
    return 1;
  }
  bool ok = write_file(dir + "/zerobox.1", write_man(man_template, run, snapshot, *snapshot_app, ref)) &&
            write_file(dir + "/cli-reference.md", markdown) &&
            write_file(dir + "/zerobox.bash", write_bash(run, snapshot)) &&
            write_file(dir + "/_zerobox", write_zsh(run, snapshot, *snapshot_app)) &&
            write_file(dir + "/zerobox.fish", write_fish(run, snapshot, *snapshot_app));
  return ok ? 0 : 1;
}

// main() of unit_priv_tests: the unit tests that run real sandboxes and mount real
// overlays (test_sandbox_prestart.cpp, test_changeset_overlay.cpp). They need what an
// unprivileged sandbox needs: a user namespace in which an overlay can be mounted.
// Where there is none the run exits 77, which CTest reports as skipped
// (SKIP_RETURN_CODE in CMakeLists.txt). doctest's own skip() would not do: it takes
// the cases out of --list-test-cases, and so out of CTest, where they would vanish
// instead of showing as skipped.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "overlay_testutil.hpp"
#include "testutil.hpp"

namespace {

// The child's wait status from mounting an overlay in a user namespace and making a file
// through it.
int probe_overlay() {
  zb::test::TempDir t;
  for (const char* d : {"L", "U", "W", "M"}) ::mkdir((t / d).c_str(), 0755);
  int status = zb::test::through_overlay(t / "L", t / "U", t / "W", t / "M", [](const std::string& merged) {
    int fd = ::open((merged + "/probe").c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0 || ::close(fd) != 0) ::_exit(1);
  });
  ::chmod((t / "W/work").c_str(), 0700);  // overlay leaves it 000
  return status;
}

// A listener rather than code in main(): doctest calls test_run_start only when it is
// about to run test cases, not when it lists them (CTest's discovery after the build,
// which must see them wherever they are built) or prints --help.
class NeedsOverlayInUserns : public doctest::IReporter {
 public:
  explicit NeedsOverlayInUserns(const doctest::ContextOptions&) {}

  void test_run_start() override {
    int status = probe_overlay();
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return;
    if (WIFEXITED(status) && WEXITSTATUS(status) == 77) {
      std::fprintf(stderr, "unit_priv_tests: skipped: no overlay can be mounted in a user namespace here (above)\n");
      std::fflush(nullptr);
      std::_Exit(77);
    }
    // The mount worked and the file could not be made: a failure, not a skip.
    std::fprintf(stderr, "unit_priv_tests: the probe's overlay mount misbehaved (wait status %#x)\n", status);
    std::fflush(nullptr);
    std::_Exit(1);
  }

  void report_query(const doctest::QueryData&) override {}
  void test_run_end(const doctest::TestRunStats&) override {}
  void test_case_start(const doctest::TestCaseData&) override {}
  void test_case_reenter(const doctest::TestCaseData&) override {}
  void test_case_end(const doctest::CurrentTestCaseStats&) override {}
  void test_case_exception(const doctest::TestCaseException&) override {}
  void subcase_start(const doctest::SubcaseSignature&) override {}
  void subcase_end() override {}
  void log_assert(const doctest::AssertData&) override {}
  void log_message(const doctest::MessageData&) override {}
  void test_case_skipped(const doctest::TestCaseData&) override {}
};

REGISTER_LISTENER("needs_overlay_in_userns", 1, NeedsOverlayInUserns);

}  // namespace

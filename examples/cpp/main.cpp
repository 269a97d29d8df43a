// Runs a command in a zerobox sandbox from C++, with a policy built in code: no network,
// and writes only into a fresh work directory. Prints the command's exit status and
// what it left in the work directory.
//
//   zerobox_example                  runs a small shell script that tries both
//   zerobox_example COMMAND [ARGS]   runs COMMAND instead (in the work directory)
#include <stdlib.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include <zerobox/zerobox.hpp>

extern char** environ;

int main(int argc, char** argv) {
  char work_template[] = "/tmp/zerobox-example-XXXXXX";
  const char* work = ::mkdtemp(work_template);
  if (work == nullptr) {
    std::perror("mkdtemp");
    return 1;
  }

  zerobox::Policy policy;
  policy.allow_write = {work};          // the only writable path
  policy.net = zerobox::NetMode::None;  // the default, spelled out: only loopback
  policy.cwd = work;
  if (argc > 1) {
    policy.argv.assign(argv + 1, argv + argc);
  } else {
    policy.argv = {
        "/bin/sh", "-c",
        "echo 'hello from the sandbox' > result.txt\n"
        "if { echo x > \"$HOME/zerobox-example-escape\"; } 2>/dev/null; then echo 'home: writable'; exit 1; fi\n"
        "echo 'home: read-only'\n"
        "if grep -v -e '|' -e ' lo:' /proc/net/dev | grep -q :; then echo 'network: present'; exit 1; fi\n"
        "echo 'network: loopback only'\n"};
  }

  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e) env.emplace_back(*e);

  std::cout << "zerobox " << zerobox::version() << ", work directory " << work << std::endl;
  int status = zerobox::run(policy, env);
  std::cout << "exit status: " << status << "\n";

  std::ifstream result(std::string(work) + "/result.txt");
  std::string line;
  if (std::getline(result, line)) std::cout << "result.txt: " << line << "\n";
  std::filesystem::remove_all(work);
  return status;
}

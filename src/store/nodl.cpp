// Linked only into the static zerobox binary, with -Wl,--wrap=dlopen,... (CMakeLists.txt).
//
// SQLite's unix VFS references dlopen() for load_extension(), which zerobox never calls.
// In a static binary glibc's dlopen() would need the build machine's shared libc at run
// time, and ld warns about it on every link. The wrappers below replace the references
// from libsqlite3.a, so extension loading fails cleanly instead.

// The names are the linker's: --wrap=SYM sends SYM to __wrap_SYM.
// NOLINTBEGIN(bugprone-reserved-identifier)
extern "C" {

void* __wrap_dlopen(const char* /*file*/, int /*mode*/) { return nullptr; }

void* __wrap_dlsym(void* /*handle*/, const char* /*name*/) { return nullptr; }

int __wrap_dlclose(void* /*handle*/) { return 0; }

char* __wrap_dlerror() {
  static char msg[] = "dynamic loading is not available in the static zerobox";
  return msg;
}

}  // extern "C"
// NOLINTEND(bugprone-reserved-identifier)

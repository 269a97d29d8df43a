# Warning and sanitizer flags live in INTERFACE targets so every target opts in the same way.
add_library(zerobox_warnings INTERFACE)
target_compile_options(zerobox_warnings INTERFACE
  -Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor -Wold-style-cast -Wcast-align
  -Wunused -Woverloaded-virtual -Wconversion -Wsign-conversion -Wnull-dereference
  -Wdouble-promotion -Wformat=2 -Wimplicit-fallthrough
  # g++ 12 warns on designated initializers that leave members to their defaults.
  -Wno-missing-field-initializers)
if(ZEROBOX_WERROR)
  target_compile_options(zerobox_warnings INTERFACE -Werror)
endif()

add_library(zerobox_sanitizers INTERFACE)
if(ZEROBOX_SANITIZE)
  target_compile_options(zerobox_sanitizers INTERFACE -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all)
  target_link_options(zerobox_sanitizers INTERFACE -fsanitize=address,undefined)
endif()

# What `cmake --install` puts where, and the .deb packages CPack makes of it
# (docs/packaging.md):
#   runtime  bin/zerobox, the man page and the bash/zsh/fish completions (generated from
#            the CLI definition at build time), the user documentation   -> zerobox.deb
#   dev      include/zerobox/*.hpp, lib/libzerobox.a and a CMake package that gives
#            find_package(zerobox) the imported target zerobox::zerobox -> zerobox-dev.deb
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

# ---- Man page and shell completions, generated from the CLI11 Apps (src/cli/app.hpp) ----
add_executable(zb_docs_gen tools/docs_gen/main.cpp tools/docs_gen/model.cpp tools/docs_gen/man.cpp
               tools/docs_gen/bash.cpp tools/docs_gen/zsh.cpp tools/docs_gen/fish.cpp
               tools/docs_gen/reference.cpp)
target_link_libraries(zb_docs_gen PRIVATE zerobox_core)
target_include_directories(zb_docs_gen SYSTEM PRIVATE ${TOMLPP_INCLUDE})
set(ZEROBOX_DOCS_DIR ${CMAKE_BINARY_DIR}/generated/docs)
set(zerobox_docs_outputs ${ZEROBOX_DOCS_DIR}/zerobox.1 ${ZEROBOX_DOCS_DIR}/zerobox.1.gz ${ZEROBOX_DOCS_DIR}/zerobox.bash
                         ${ZEROBOX_DOCS_DIR}/_zerobox ${ZEROBOX_DOCS_DIR}/zerobox.fish
                         ${ZEROBOX_DOCS_DIR}/cli-reference.md)
set(zerobox_docs_sources ${PROJECT_SOURCE_DIR}/docs/man/zerobox.1.in ${PROJECT_SOURCE_DIR}/docs/cli-reference.md.in
                         ${PROJECT_SOURCE_DIR}/docs/flags.toml)
add_custom_command(
  OUTPUT ${zerobox_docs_outputs}
  COMMAND ${CMAKE_COMMAND} -E make_directory ${ZEROBOX_DOCS_DIR}
  COMMAND zb_docs_gen ${ZEROBOX_DOCS_DIR} ${zerobox_docs_sources}
  # -n: no name or time stamp in the header, so the .deb is reproducible.
  COMMAND gzip -9nkf ${ZEROBOX_DOCS_DIR}/zerobox.1
  DEPENDS zb_docs_gen ${zerobox_docs_sources}
  COMMENT "Generating the man page, the CLI reference and shell completions from the CLI definition")
add_custom_target(zerobox_docs ALL DEPENDS ${zerobox_docs_outputs})
# docs/cli-reference.md is checked in, for readers of the repository; the docs.cli_reference
# test fails when it is not what the build makes, and this target updates it.
add_custom_target(update-docs
  COMMAND ${CMAKE_COMMAND} -E copy ${ZEROBOX_DOCS_DIR}/cli-reference.md ${PROJECT_SOURCE_DIR}/docs/cli-reference.md
  DEPENDS ${zerobox_docs_outputs}
  COMMENT "Copying the generated CLI reference to docs/cli-reference.md")

# zsh has no completion directory every system searches: for the prefix /usr (the .deb)
# Debian's share/zsh/vendor-completions, else share/zsh/site-functions, which zsh
# searches under /usr/local. Decided at install time, as CPack installs to /usr.
set(ZEROBOX_ZSH_COMPLETION_DIR "" CACHE STRING
    "Where to install the zsh completion (_zerobox), relative to the prefix (empty: see cmake/Packaging.cmake)")

install(FILES ${ZEROBOX_DOCS_DIR}/zerobox.1.gz DESTINATION ${CMAKE_INSTALL_MANDIR}/man1 COMPONENT runtime)
install(FILES ${ZEROBOX_DOCS_DIR}/zerobox.bash DESTINATION ${CMAKE_INSTALL_DATADIR}/bash-completion/completions
        RENAME zerobox COMPONENT runtime)
if(ZEROBOX_ZSH_COMPLETION_DIR)
  install(FILES ${ZEROBOX_DOCS_DIR}/_zerobox DESTINATION ${ZEROBOX_ZSH_COMPLETION_DIR} COMPONENT runtime)
else()
  install(CODE "if(CMAKE_INSTALL_PREFIX STREQUAL \"/usr\")
  set(zerobox_zsh_dir ${CMAKE_INSTALL_DATADIR}/zsh/vendor-completions)
else()
  set(zerobox_zsh_dir ${CMAKE_INSTALL_DATADIR}/zsh/site-functions)
endif()
file(INSTALL DESTINATION \"\${CMAKE_INSTALL_PREFIX}/\${zerobox_zsh_dir}\" TYPE FILE FILES \"${ZEROBOX_DOCS_DIR}/_zerobox\")"
          COMPONENT runtime)
endif()
install(FILES ${ZEROBOX_DOCS_DIR}/zerobox.fish DESTINATION ${CMAKE_INSTALL_DATADIR}/fish/vendor_completions.d
        COMPONENT runtime)
install(FILES README.md docs/usage.md docs/cli-reference.md docs/recipes.md docs/security.md docs/packaging.md
              docs/glossary.md
        DESTINATION ${CMAKE_INSTALL_DOCDIR} COMPONENT runtime)

# ---- The C++ API: libzerobox.a, the public headers and the CMake package ----
# libzerobox.a is made of the layers' object files, as zerobox_core is (nothing is
# compiled twice), with usage requirements of its own: only the public include/zerobox/ is exported, never src/.
add_library(zerobox_lib STATIC ${zb_layer_objects})
set_target_properties(zerobox_lib PROPERTIES OUTPUT_NAME zerobox EXPORT_NAME zerobox LINKER_LANGUAGE CXX)
target_include_directories(zerobox_lib INTERFACE $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)
# The headers need C++17 at most; the archive itself was compiled as C++23 with this
# project's compiler, so a consumer links it with a libstdc++ at least as new.
target_compile_features(zerobox_lib INTERFACE cxx_std_17)

install(TARGETS zerobox_lib EXPORT zeroboxTargets ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT dev)
# `cmake --install --strip` and CPack strip executables only; the archive's debug
# information is four fifths of its size.
install(CODE "if(CMAKE_INSTALL_DO_STRIP)
  execute_process(COMMAND \"${CMAKE_STRIP}\" --strip-debug
                  \"\$ENV{DESTDIR}\${CMAKE_INSTALL_PREFIX}/${CMAKE_INSTALL_LIBDIR}/$<TARGET_FILE_NAME:zerobox_lib>\")
endif()" COMPONENT dev)
install(DIRECTORY include/zerobox DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} COMPONENT dev FILES_MATCHING PATTERN "*.hpp")
set(ZEROBOX_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/zerobox)
install(EXPORT zeroboxTargets NAMESPACE zerobox:: DESTINATION ${ZEROBOX_CMAKE_DIR} COMPONENT dev)
# 0.x: a new minor version may change the API.
write_basic_package_version_file(${CMAKE_BINARY_DIR}/zeroboxConfigVersion.cmake COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_BINARY_DIR}/zeroboxConfig.cmake ${CMAKE_BINARY_DIR}/zeroboxConfigVersion.cmake
        DESTINATION ${ZEROBOX_CMAKE_DIR} COMPONENT dev)

# A static archive records none of its dependencies, so what zerobox_core links is
# translated into what a program linking the installed libzerobox.a needs, and the
# config file finds each of them the way this project does. This runs at the end of the
# top-level CMakeLists.txt, so a dependency added anywhere above is seen; one it cannot
# translate is a warning (and pkg.cpp_example then fails to link).
#   build flags, header-only libraries (compiled in)  -> nothing
#   SQLite (the static archive the binary uses)       -> find_dependency(SQLite3), SQLite::SQLite3
#   Threads, OpenSSL, ZLIB                            -> find_dependency(...), the same target
#   PkgConfig::X (pkg_check_modules)                  -> pkg_check_modules(X ... IMPORTED_TARGET module)
#   dl, m, rt, pthread                                -> themselves
function(zerobox_export_dependencies)
  get_target_property(libs zerobox_core LINK_LIBRARIES)
  set(find "")
  set(link "")
  set(deb "")
  foreach(lib IN LISTS libs)
    if(lib MATCHES "^(zerobox_warnings|zerobox_sanitizers|CLI11::CLI11|nlohmann_json::nlohmann_json)$")
    elseif(lib STREQUAL "${SQLITE3_STATIC}" OR lib STREQUAL "SQLite::SQLite3")
      list(APPEND find "find_dependency(SQLite3)")
      list(APPEND link SQLite::SQLite3)
      list(APPEND deb libsqlite3-dev)
    elseif(lib STREQUAL "Threads::Threads")
      list(APPEND find "find_dependency(Threads)")
      list(APPEND link Threads::Threads)
    elseif(lib MATCHES "^OpenSSL::")
      list(APPEND find "find_dependency(OpenSSL)")
      list(APPEND link ${lib})
      list(APPEND deb libssl-dev)
    elseif(lib STREQUAL "ZLIB::ZLIB")
      list(APPEND find "find_dependency(ZLIB)")
      list(APPEND link ZLIB::ZLIB)
      list(APPEND deb zlib1g-dev)
    elseif(lib MATCHES "^PkgConfig::(.+)$")
      set(prefix ${CMAKE_MATCH_1})
      set(module ${${prefix}_MODULE_NAME})
      list(APPEND find "find_dependency(PkgConfig)"
           "if(NOT TARGET PkgConfig::${prefix})\n  pkg_check_modules(${prefix} REQUIRED QUIET IMPORTED_TARGET ${module})\nendif()")
      list(APPEND link ${lib})
      if(module MATCHES "^lib")
        list(APPEND deb ${module}-dev)
      else()
        list(APPEND deb lib${module}-dev)
      endif()
    elseif(lib MATCHES "^(dl|m|rt|pthread)$")
      list(APPEND link ${lib})
    else()
      message(WARNING "zerobox_core links '${lib}', which cmake/Packaging.cmake cannot export for the "
                      "installed libzerobox.a: say there how a program using find_package(zerobox) gets it")
    endif()
  endforeach()
  list(REMOVE_DUPLICATES find)
  list(REMOVE_DUPLICATES link)
  list(REMOVE_DUPLICATES deb)
  target_link_libraries(zerobox_lib INTERFACE ${link})
  list(JOIN find "\n" ZEROBOX_FIND_DEPENDENCIES)
  configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/zeroboxConfig.cmake.in ${CMAKE_BINARY_DIR}/zeroboxConfig.cmake
                                INSTALL_DESTINATION ${ZEROBOX_CMAKE_DIR})

  # ---- CPack: zerobox_VERSION_ARCH.deb and zerobox-dev_VERSION_ARCH.deb ----
  set(CPACK_GENERATOR DEB)
  set(CPACK_PACKAGE_NAME zerobox)
  set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
  set(CPACK_PACKAGE_CONTACT "${ZEROBOX_PACKAGE_MAINTAINER}")
  set(CPACK_DEBIAN_PACKAGE_MAINTAINER "${ZEROBOX_PACKAGE_MAINTAINER}")
  # No CPACK_PACKAGE_DESCRIPTION_SUMMARY: CPackDeb would put it above each component's
  # own first line (its synopsis) in both packages.
  set(CPACK_DEB_COMPONENT_INSTALL ON)
  set(CPACK_COMPONENTS_ALL runtime dev)
  set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
  set(CPACK_STRIP_FILES ON)
  set(CPACK_DEBIAN_RUNTIME_PACKAGE_NAME zerobox)
  set(CPACK_DEBIAN_RUNTIME_PACKAGE_SECTION utils)
  # The binary is static (ldd: "not a dynamic executable"), so dpkg-shlibdeps finds no
  # library and Depends stays empty; a dynamic build (ZEROBOX_SANITIZE) gets its real list.
  set(CPACK_DEBIAN_RUNTIME_PACKAGE_SHLIBDEPS ON)
  set(CPACK_DEBIAN_RUNTIME_DESCRIPTION
      "run an untrusted command in a lightweight Linux sandbox
zerobox runs a command deny-by-default: it can read the filesystem but writes
nowhere, reaches no network and sees a minimal environment unless flags allow
more. Writes can be recorded in an overlay, reviewed as a diff, accepted and
undone. One static binary, no daemon, no setuid helper: user, mount, pid and
network namespaces, overlayfs, Landlock and a seccomp filter.")
  set(CPACK_DEBIAN_DEV_PACKAGE_NAME zerobox-dev)
  set(CPACK_DEBIAN_DEV_PACKAGE_SECTION libdevel)
  list(JOIN deb ", " CPACK_DEBIAN_DEV_PACKAGE_DEPENDS)
  set(CPACK_DEBIAN_DEV_DESCRIPTION
      "C++ API of zerobox (static library, headers, CMake package)
The library behind the zerobox command: build a zerobox::Policy in code and run a
command in a sandbox with zerobox::run(). find_package(zerobox CONFIG) gives the
imported target zerobox::zerobox.")
  include(CPack)
endfunction()
# The Maintainer field: whoever builds the packages, as Debian's tools find them
# (DEBFULLNAME and DEBEMAIL), else the checkout's git identity (user.name, user.email).
# -DZEROBOX_PACKAGE_MAINTAINER="Name <mail>" sets it outright.
set(zb_maintainer "")
if(DEFINED ENV{DEBEMAIL} AND NOT "$ENV{DEBEMAIL}" STREQUAL "")
  set(zb_maintainer "$ENV{DEBFULLNAME} <$ENV{DEBEMAIL}>")
else()
  find_package(Git QUIET)
  if(GIT_FOUND)
    execute_process(COMMAND ${GIT_EXECUTABLE} config user.name WORKING_DIRECTORY ${PROJECT_SOURCE_DIR}
                    OUTPUT_VARIABLE zb_git_name OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
    execute_process(COMMAND ${GIT_EXECUTABLE} config user.email WORKING_DIRECTORY ${PROJECT_SOURCE_DIR}
                    OUTPUT_VARIABLE zb_git_email OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
    if(zb_git_name AND zb_git_email)
      set(zb_maintainer "${zb_git_name} <${zb_git_email}>")
    endif()
  endif()
endif()
string(STRIP "${zb_maintainer}" zb_maintainer)
if(NOT zb_maintainer)
  set(zb_maintainer "zerobox package builder <root@localhost>")
endif()
set(ZEROBOX_PACKAGE_MAINTAINER "${zb_maintainer}" CACHE STRING
    "Maintainer field of the .deb packages (default: DEBFULLNAME <DEBEMAIL>, else git config user.name/user.email)")
cmake_language(DEFER DIRECTORY ${PROJECT_SOURCE_DIR} CALL zerobox_export_dependencies)

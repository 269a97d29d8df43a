# Tests of cmake/Packaging.cmake: the installed C++ API, the .deb, and the man page and
# shell completions generated from the CLI definition. Each skips (77) where a tool it
# needs is missing, and says which.
set(zerobox_pkg_tests ${PROJECT_SOURCE_DIR}/tests/packaging)

# `cmake --install` into a temporary prefix, then examples/cpp built against it with
# find_package(zerobox) and run.
add_test(NAME pkg.cpp_example
         COMMAND ${zerobox_pkg_tests}/cpp_example.sh ${CMAKE_COMMAND} ${CMAKE_BINARY_DIR}
                 ${PROJECT_SOURCE_DIR}/examples/cpp $<TARGET_FILE:zerobox>)
set_tests_properties(pkg.cpp_example PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 600 LABELS packaging)

# cpack, then dpkg -i / dpkg -r on this machine: root only, and alone, since it installs
# /usr/bin/zerobox for a moment.
add_test(NAME pkg.deb
         COMMAND ${zerobox_pkg_tests}/deb.sh ${CMAKE_BINARY_DIR} ${PROJECT_VERSION} $<TARGET_FILE:zerobox>)
set_tests_properties(pkg.deb PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 600 RUN_SERIAL ON LABELS packaging)

foreach(what man bash zsh fish)
  add_test(NAME pkg.docs.${what}
           COMMAND ${zerobox_pkg_tests}/docs.sh ${what} $<TARGET_FILE:zerobox> ${ZEROBOX_DOCS_DIR})
  set_tests_properties(pkg.docs.${what} PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 120 LABELS packaging)
endforeach()
add_test(NAME pkg.docs.reference
         COMMAND ${zerobox_pkg_tests}/docs.sh reference $<TARGET_FILE:zerobox> ${ZEROBOX_DOCS_DIR} ${PROJECT_SOURCE_DIR})
set_tests_properties(pkg.docs.reference PROPERTIES TIMEOUT 120 LABELS packaging)

# The packages that ship the binary with an SDK (scripts/sdk-packages.sh), installed from
# their files into an empty npm prefix and an empty venv, and run from there.
# pkg.npm uses the node sdks/typescript/ctest.cmake found (ZEROBOX_NODE, cached).
set(zb_pkg_npm_env /usr/bin/env)
if(ZEROBOX_NODE)
  get_filename_component(zb_pkg_node_bin ${ZEROBOX_NODE} DIRECTORY)
  list(APPEND zb_pkg_npm_env "PATH=${zb_pkg_node_bin}:$ENV{PATH}")
endif()
add_test(NAME pkg.npm COMMAND ${zb_pkg_npm_env} ${zerobox_pkg_tests}/npm.sh $<TARGET_FILE:zerobox>)
set_tests_properties(pkg.npm PROPERTIES FIXTURES_REQUIRED sdk_typescript SKIP_RETURN_CODE 77 TIMEOUT 300
                                        LABELS packaging)
add_test(NAME pkg.wheel COMMAND ${zerobox_pkg_tests}/wheel.sh $<TARGET_FILE:zerobox>)
set_tests_properties(pkg.wheel PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 300 LABELS packaging)

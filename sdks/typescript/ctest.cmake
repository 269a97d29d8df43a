# The TypeScript SDK's tests (node:test) and its example, against this build's binary.
# sdk.typescript.setup installs the pinned devDependencies (npm ci, skipped while
# node_modules matches the lock) and builds; the other two need it.
#
# node >= 20 and npm: /opt/zerobox-node/bin first (scripts/install-deps.sh test puts the
# npm registry's node 20 there: Debian 12's is 18), then PATH; the directory found goes
# first on the tests' PATH. Without them each test exits 77: skipped, never passed
# (scripts/test.sh fails on any skipped test).
set(zb_ts_ctest ${PROJECT_SOURCE_DIR}/sdks/typescript/scripts/ctest.sh)
function(zb_node_is_new_enough result node)
  get_filename_component(dir ${node} DIRECTORY)
  execute_process(COMMAND ${node} --version OUTPUT_VARIABLE out ERROR_QUIET RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0 OR NOT out MATCHES "^v([0-9]+)\\." OR CMAKE_MATCH_1 LESS 20 OR NOT EXISTS ${dir}/npm)
    set(${result} FALSE PARENT_SCOPE)
  endif()
endfunction()
find_program(ZEROBOX_NODE node HINTS /opt/zerobox-node/bin VALIDATOR zb_node_is_new_enough)
set(zb_ts_env /usr/bin/env ZEROBOX_BIN=$<TARGET_FILE:zerobox>)
if(ZEROBOX_NODE)
  get_filename_component(zb_node_bin ${ZEROBOX_NODE} DIRECTORY)
  list(APPEND zb_ts_env "PATH=${zb_node_bin}:$ENV{PATH}")
endif()

add_test(NAME sdk.typescript.setup COMMAND ${zb_ts_env} /bin/sh ${zb_ts_ctest} setup)
set_tests_properties(sdk.typescript.setup PROPERTIES
  FIXTURES_SETUP sdk_typescript SKIP_RETURN_CODE 77 TIMEOUT 600 LABELS sdk)

add_test(NAME sdk.typescript COMMAND ${zb_ts_env} /bin/sh ${zb_ts_ctest} test)
set_tests_properties(sdk.typescript PROPERTIES
  FIXTURES_REQUIRED sdk_typescript SKIP_RETURN_CODE 77 TIMEOUT 300 LABELS sdk)

add_test(NAME sdk.typescript.lint COMMAND ${zb_ts_env} /bin/sh ${zb_ts_ctest} lint)
set_tests_properties(sdk.typescript.lint PROPERTIES
  FIXTURES_REQUIRED sdk_typescript SKIP_RETURN_CODE 77 TIMEOUT 300 LABELS "sdk;lint")

add_test(NAME sdk.typescript.example COMMAND ${zb_ts_env} /bin/sh ${zb_ts_ctest} example)
set_tests_properties(sdk.typescript.example PROPERTIES
  FIXTURES_REQUIRED sdk_typescript SKIP_RETURN_CODE 77 TIMEOUT 600 LABELS sdk)
# Scaled to the machine when CTest runs (tests/integration/scaling).
set_property(GLOBAL APPEND PROPERTY ZEROBOX_TEST_TIMEOUTS
             sdk.typescript.setup=600 sdk.typescript=300 sdk.typescript.lint=300 sdk.typescript.example=600)

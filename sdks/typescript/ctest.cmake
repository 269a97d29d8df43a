# The TypeScript SDK's tests (node:test) and its example, against this build's binary.
# sdk.typescript.setup installs the pinned devDependencies (npm ci, skipped while
# node_modules matches the lock) and builds; the other two need it. Without node >= 20
# or npm each of them exits 77: skipped, never passed.
set(zb_ts_ctest ${PROJECT_SOURCE_DIR}/sdks/typescript/scripts/ctest.sh)

add_test(NAME sdk.typescript.setup COMMAND /bin/sh ${zb_ts_ctest} setup)
set_tests_properties(sdk.typescript.setup PROPERTIES
  FIXTURES_SETUP sdk_typescript SKIP_RETURN_CODE 77 TIMEOUT 600 LABELS sdk)

add_test(NAME sdk.typescript
         COMMAND /usr/bin/env ZEROBOX_BIN=$<TARGET_FILE:zerobox> /bin/sh ${zb_ts_ctest} test)
set_tests_properties(sdk.typescript PROPERTIES
  FIXTURES_REQUIRED sdk_typescript SKIP_RETURN_CODE 77 TIMEOUT 300 LABELS sdk)

add_test(NAME sdk.typescript.example
         COMMAND /usr/bin/env ZEROBOX_BIN=$<TARGET_FILE:zerobox> /bin/sh ${zb_ts_ctest} example)
set_tests_properties(sdk.typescript.example PROPERTIES
  FIXTURES_REQUIRED sdk_typescript SKIP_RETURN_CODE 77 TIMEOUT 600 LABELS sdk)

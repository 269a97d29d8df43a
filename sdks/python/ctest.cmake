# Both exit 77, "skipped", without /usr/bin/python3.
set(_zb_need_python "[ -x /usr/bin/python3 ] || { echo 'skipped: /usr/bin/python3 is missing' >&2; exit 77; }")

# The Python SDK's own tests (standard library unittest), against this build's binary.
# scripts/ctest.py exits 77 when a test was skipped and none failed, or when the
# Python is older than the SDK needs.
add_test(NAME sdk.python
         COMMAND /usr/bin/env ZEROBOX_BIN=$<TARGET_FILE:zerobox>
                 /bin/sh -c "${_zb_need_python}; exec /usr/bin/python3 scripts/ctest.py"
         WORKING_DIRECTORY ${PROJECT_SOURCE_DIR}/sdks/python)
set_tests_properties(sdk.python PROPERTIES TIMEOUT 300 LABELS sdk SKIP_RETURN_CODE 77)

# The examples in examples/python, run as their docstrings show.
# (secret_api_call.py exits 77, "skipped", only when openssl or curl is missing.)
add_test(NAME sdk.python.examples
         COMMAND /usr/bin/env ZEROBOX_BIN=$<TARGET_FILE:zerobox>
                 /bin/sh -c "${_zb_need_python}; /usr/bin/python3 agent_tool_call.py && /usr/bin/python3 secret_api_call.py"
         WORKING_DIRECTORY ${PROJECT_SOURCE_DIR}/examples/python)
set_tests_properties(sdk.python.examples PROPERTIES TIMEOUT 120 LABELS sdk SKIP_RETURN_CODE 77)
# Scaled to the machine when CTest runs (tests/integration/scaling).
set_property(GLOBAL APPEND PROPERTY ZEROBOX_TEST_TIMEOUTS sdk.python=300 sdk.python.examples=120)

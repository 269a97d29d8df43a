# The Python SDK's own tests (standard library unittest), against this build's binary.
add_test(NAME sdk.python
         COMMAND /usr/bin/env ZEROBOX_BIN=$<TARGET_FILE:zerobox> /usr/bin/python3 -m unittest discover -s tests -t . -v
         WORKING_DIRECTORY ${PROJECT_SOURCE_DIR}/sdks/python)
set_tests_properties(sdk.python PROPERTIES TIMEOUT 300 LABELS sdk SKIP_RETURN_CODE 77)

# The examples in examples/python, run as their docstrings show.
# (secret_api_call.py exits 77, "skipped", only when openssl or curl is missing.)
add_test(NAME sdk.python.examples
         COMMAND /usr/bin/env ZEROBOX_BIN=$<TARGET_FILE:zerobox>
                 /bin/sh -c "/usr/bin/python3 agent_tool_call.py && /usr/bin/python3 secret_api_call.py"
         WORKING_DIRECTORY ${PROJECT_SOURCE_DIR}/examples/python)
set_tests_properties(sdk.python.examples PROPERTIES TIMEOUT 120 LABELS sdk SKIP_RETURN_CODE 77)
# Scaled to the machine when CTest runs (tests/integration/scaling).
set_property(GLOBAL APPEND PROPERTY ZEROBOX_TEST_TIMEOUTS sdk.python=300 sdk.python.examples=120)

# The Python SDK's own tests (standard library unittest), against this build's binary.
add_test(NAME sdk.python
         COMMAND /usr/bin/env ZEROBOX_BIN=$<TARGET_FILE:zerobox> /usr/bin/python3 -m unittest discover -s tests -t . -v
         WORKING_DIRECTORY ${PROJECT_SOURCE_DIR}/sdks/python)
set_tests_properties(sdk.python PROPERTIES TIMEOUT 300 LABELS sdk)

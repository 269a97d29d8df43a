# The Rust SDK's tests (`cargo test --offline`: unit tests, the integration tests
# against this build's binary, doc tests) and its example, run as the example's doc
# comment shows. Cargo writes into the build tree, never into sdks/rust.
#
# The crate needs rustc 1.70 (Cargo.toml's rust-version): a cargo whose rustc is older
# (Debian 12's cargo package: 1.63) is passed over. Found in ~/.cargo/bin (rustup), then
# on PATH (Debian's cargo-web: scripts/install-deps.sh test). Without one these tests
# report "skipped" (77), never "passed"; scripts/test.sh fails on any skipped test.
function(zb_rustc_is_new_enough result cargo)
  get_filename_component(dir ${cargo} DIRECTORY)
  execute_process(COMMAND ${dir}/rustc --version OUTPUT_VARIABLE out ERROR_QUIET RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0 OR NOT out MATCHES "^rustc ([0-9]+\\.[0-9]+)" OR CMAKE_MATCH_1 VERSION_LESS 1.70)
    set(${result} FALSE PARENT_SCOPE)
  endif()
endfunction()
find_program(ZEROBOX_CARGO cargo HINTS $ENV{HOME}/.cargo/bin /root/.cargo/bin VALIDATOR zb_rustc_is_new_enough)
set(_zb_rust_dir ${CMAKE_CURRENT_LIST_DIR})
set(_zb_rust_tests sdk.rust sdk.rust.example)

if(ZEROBOX_CARGO)
  # rustup's cargo proxy needs its own directory on PATH to find rustc.
  get_filename_component(_zb_cargo_bin ${ZEROBOX_CARGO} DIRECTORY)
  set(_zb_cargo /usr/bin/env ZEROBOX_BIN=$<TARGET_FILE:zerobox>
      CARGO_TARGET_DIR=${CMAKE_BINARY_DIR}/sdk-rust-target "PATH=${_zb_cargo_bin}:$ENV{PATH}"
      ${ZEROBOX_CARGO})
  add_test(NAME sdk.rust COMMAND ${_zb_cargo} test --offline WORKING_DIRECTORY ${_zb_rust_dir})
  add_test(NAME sdk.rust.example COMMAND ${_zb_cargo} run --offline --example agent_tool_call
           WORKING_DIRECTORY ${_zb_rust_dir})
else()
  foreach(_zb_test ${_zb_rust_tests})
    add_test(NAME ${_zb_test}
             COMMAND /bin/sh -c "echo '${_zb_test}: no cargo with rustc 1.70 or newer in ~/.cargo/bin, /root/.cargo/bin or on PATH (scripts/install-deps.sh test installs one): skipped'; exit 77")
  endforeach()
endif()

# One cargo target directory for all: cargo would serialise them on its lock anyway,
# and the wait would count against their timeouts.
set_tests_properties(${_zb_rust_tests} PROPERTIES
                     SKIP_RETURN_CODE 77 LABELS sdk RESOURCE_LOCK sdk-rust-target TIMEOUT 300)
set_tests_properties(sdk.rust PROPERTIES TIMEOUT 900)
# Scaled to the machine when CTest runs (tests/integration/scaling).
set_property(GLOBAL APPEND PROPERTY ZEROBOX_TEST_TIMEOUTS sdk.rust=900 sdk.rust.example=300)

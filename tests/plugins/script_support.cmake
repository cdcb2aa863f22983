# tests/plugins/script_support.cmake - shared by the cmake -P tests (install_test, example_test):
# a fresh WORK_DIR, `clean_env` (cmake -E env arguments under which nothing from the caller's
# environment adds backends or configuration) and run() (runs a command, fails the test with its
# output unless it exits 0; leaves its stdout in `out`).
file(REMOVE_RECURSE "${WORK_DIR}")
set(empty "${WORK_DIR}/empty")
file(MAKE_DIRECTORY "${empty}")
set(clean_env --unset=KILN_BACKENDS --unset=KILN_BACKEND_PATH --unset=KILN_CONFIG --unset=KILN_DEVICE
    XDG_CONFIG_HOME=${empty} XDG_DATA_HOME=${empty} XDG_CONFIG_DIRS=${empty} XDG_DATA_DIRS=${empty})

function(run)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "failed (${rc}): ${ARGN}\n--- stdout\n${out}\n--- stderr\n${err}")
  endif()
  set(out "${out}" PARENT_SCOPE)
endfunction()

# tests/plugins/example_test.cmake - the SDK example is what third parties copy, so it must pass
# our own kit, built the way a plugin's CI builds it: against this build tree's CMake package
# (<build>/lib/cmake/kiln, equivalent to the installed one), then `kiln test` on its manifest.
# Run by ctest with cmake -P. Inputs: BUILD_DIR SOURCE_DIR WORK_DIR GENERATOR KILN.
include(${CMAKE_CURRENT_LIST_DIR}/script_support.cmake)

# Only the build tree's package is visible: no install prefix, no package registry.
run("${CMAKE_COMMAND}" -S "${SOURCE_DIR}/sdk/examples/null_backend" -B "${WORK_DIR}/build" -G "${GENERATOR}"
    -DCMAKE_BUILD_TYPE=Release "-DCMAKE_PREFIX_PATH=${BUILD_DIR}" -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF
    -DCMAKE_FIND_USE_SYSTEM_PACKAGE_REGISTRY=OFF)
run("${CMAKE_COMMAND}" --build "${WORK_DIR}/build")
run("${CMAKE_COMMAND}" -E env ${clean_env} "${KILN}" test "${WORK_DIR}/build/share/kiln/backends.d/null.toml")
if(NOT out MATCHES "null: [0-9]+ passed, 0 failed")
  message(FATAL_ERROR "kiln test on the example did not pass:\n${out}")
endif()
message(STATUS "the example passes the kit:\n${out}")

# tests/plugins/install_test.cmake - the SDK works from an install (run by ctest with cmake -P):
# install this build into a fresh prefix, build sdk/examples/null_backend against that prefix with
# find_package(kiln), and check that the installed `kiln` lists it, first through KILN_BACKENDS and
# then, after installing the example, through plain discovery next to the installed cpu backend.
# Inputs: BUILD_DIR SOURCE_DIR WORK_DIR GENERATOR.
include(${CMAKE_CURRENT_LIST_DIR}/script_support.cmake)
set(prefix "${WORK_DIR}/prefix")

run("${CMAKE_COMMAND}" --install "${BUILD_DIR}" --prefix "${prefix}")
foreach(f bin/kiln lib/cmake/kiln/kilnConfig.cmake lib/cmake/kiln/kiln_add_backend_plugin.cmake
          include/kiln/sdk.hpp include/kiln/plugin.h include/kiln/device.hpp share/kiln/backends.d/cpu.toml
          share/kiln/config.example.toml lib/kiln/backends/libkiln_cpu.so)
  if(NOT EXISTS "${prefix}/${f}")
    message(FATAL_ERROR "the install lacks ${f}")
  endif()
endforeach()

run("${CMAKE_COMMAND}" -S "${SOURCE_DIR}/sdk/examples/null_backend" -B "${WORK_DIR}/build" -G "${GENERATOR}"
    -DCMAKE_BUILD_TYPE=Release "-DCMAKE_PREFIX_PATH=${prefix}" "-DCMAKE_INSTALL_PREFIX=${prefix}")
run("${CMAKE_COMMAND}" --build "${WORK_DIR}/build")

run("${CMAKE_COMMAND}" -E env ${clean_env} "KILN_BACKENDS=${WORK_DIR}/build/share/kiln/backends.d/null.toml"
    "${prefix}/bin/kiln" list)
string(REPLACE "." "\\." abi_regex "${ABI}")  # this build's plugin ABI (MAJOR.MINOR)
if(NOT out MATCHES "null +ok +0\\.1\\.0 +abi ${abi_regex}" OR NOT out MATCHES "null:0 +null device \\(hello from the manifest\\)")
  message(FATAL_ERROR "kiln list (KILN_BACKENDS) did not show the null backend as ok:\n${out}")
endif()

run("${CMAKE_COMMAND}" --install "${WORK_DIR}/build")
run("${CMAKE_COMMAND}" -E env ${clean_env} "${prefix}/bin/kiln" list -v)
foreach(expected "cpu +ok" "null +ok" "opencl +ok" "hip +unavailable +no HIP devices" "cuda +unavailable +no CUDA driver" "${prefix}/share/kiln/backends.d +\\(install prefix\\)")
  if(NOT out MATCHES "${expected}")
    message(FATAL_ERROR "installed kiln list -v does not match '${expected}':\n${out}")
  endif()
endforeach()

# kiln::onnx as a component of the installed package, when this build has it: a consumer program
# finds it with find_package(kiln COMPONENTS onnx) and runs a node-test model (x + y).
if(ONNX_MODEL AND EXISTS "${ONNX_MODEL}")
  run("${CMAKE_COMMAND}" -S "${SOURCE_DIR}/tests/plugins/onnx_consumer" -B "${WORK_DIR}/onnx_build" -G "${GENERATOR}"
      -DCMAKE_BUILD_TYPE=Release "-DCMAKE_PREFIX_PATH=${prefix}")
  run("${CMAKE_COMMAND}" --build "${WORK_DIR}/onnx_build")
  run("${CMAKE_COMMAND}" -E env ${clean_env} "${WORK_DIR}/onnx_build/onnx_consumer" "${ONNX_MODEL}")
  if(NOT out MATCHES "outputs 1 sum 120")
    message(FATAL_ERROR "the installed kiln::onnx consumer printed:\n${out}")
  endif()
endif()
# kiln::dist likewise, when this build has it (MPI found): run without mpirun, a world of one rank.
if(DIST)
  run("${CMAKE_COMMAND}" -S "${SOURCE_DIR}/tests/plugins/dist_consumer" -B "${WORK_DIR}/dist_build" -G "${GENERATOR}"
      -DCMAKE_BUILD_TYPE=Release "-DCMAKE_PREFIX_PATH=${prefix}")
  run("${CMAKE_COMMAND}" --build "${WORK_DIR}/dist_build")
  run("${CMAKE_COMMAND}" -E env ${clean_env} "${WORK_DIR}/dist_build/dist_consumer")
  if(NOT out MATCHES "world 1 sum 4")
    message(FATAL_ERROR "the installed kiln::dist consumer printed:\n${out}")
  endif()
endif()
message(STATUS "install test passed:\n${out}")

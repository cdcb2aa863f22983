# tests/layering/check_layering.cmake - the include rules of docs/architecture.md ("Layers"), checked.
#
# Run as `cmake -DROOT=<source dir> -P check_layering.cmake` (ctest test_layering). Each module of
# core/src may include only the modules below it; the SDK (headers, renderer library, conformance
# kit, examples) and the public headers (core/include) include nothing of core/src; the core
# includes the SDK's C headers only, never its C++ layer; a plugin
# includes the SDK, its own files and plugins/common, never the core or another plugin's files.
# A violation names the file and the rule. The lists are the dependency graph itself:
# change them only together with the architecture document.
cmake_minimum_required(VERSION 3.20)
if(NOT ROOT)
  message(FATAL_ERROR "usage: cmake -DROOT=<kiln source dir> -P check_layering.cmake")
endif()

# module -> the core/src modules its files may include (itself included)
set(allowed_support support)
set(allowed_ir support ir)
set(allowed_rewrite support ir rewrite)
set(allowed_symbolic support ir rewrite symbolic)
set(allowed_schedule support ir rewrite symbolic schedule)
set(allowed_codegen support ir rewrite symbolic codegen)
set(allowed_plugin support plugin)
set(allowed_runtime support ir rewrite symbolic schedule codegen plugin runtime)
set(allowed_tensor support ir rewrite symbolic schedule codegen plugin runtime tensor)
# dist is libkiln_dist (MPI), a library above libkiln: it may use the core; the core never uses it
set(allowed_dist support ir rewrite symbolic schedule codegen plugin runtime tensor dist)
set(modules support ir rewrite symbolic schedule codegen plugin runtime tensor dist)
# Single headers a module may include beyond its list, each with the reason.
#  - plugin fills codegen's Target from the plugin's kiln_target when a device opens; the header
#    depends on nothing but the ABI's C header.
set(extra_plugin "codegen/target.hpp")

set(violations "")
# module: a core module name, "" for the SDK, "<plugins>" for plugins/*, "<public>" for core/include.
function(check_file file module)
  file(STRINGS ${file} includes REGEX "^[ \t]*#[ \t]*include[ \t]*\"")
  file(RELATIVE_PATH rel ${ROOT} ${file})
  foreach(line IN LISTS includes)
    string(REGEX REPLACE "^[ \t]*#[ \t]*include[ \t]*\"([^\"]*)\".*" "\\1" header "${line}")
    if(module STREQUAL "<plugins>")
      if(header MATCHES "^\\.\\./" AND NOT header MATCHES "^\\.\\./common/")
        list(APPEND violations "${rel}: includes ${header}: a plugin shares code only through plugins/common")
      endif()
    endif()
    if(header MATCHES "^kiln/sdk")
      if(NOT module STREQUAL "" AND NOT module STREQUAL "<plugins>")
        list(APPEND violations "${rel}: includes ${header}: the core includes only the SDK's C headers (kiln/plugin.h, kiln/lir.h)")
      endif()
      continue()
    endif()
    if(NOT header MATCHES "^([a-z_]+)/")
      continue()
    endif()
    set(target_module ${CMAKE_MATCH_1})
    if(NOT target_module IN_LIST modules)
      continue()  # kiln/ (public API, SDK C headers) and anything that is not a core module
    endif()
    if(module STREQUAL "<public>")
      list(APPEND violations "${rel}: includes ${header}: a public header is installed, so it names nothing of core/src")
    elseif(module STREQUAL "" OR module STREQUAL "<plugins>")
      list(APPEND violations "${rel}: includes ${header}: the SDK and the plugins depend on nothing in the core")
    elseif(NOT target_module IN_LIST allowed_${module} AND NOT header IN_LIST extra_${module})
      string(JOIN ", " allowed ${allowed_${module}} ${extra_${module}})
      list(APPEND violations "${rel}: includes ${header}: ${module}/ may include only ${allowed}")
    endif()
  endforeach()
  set(violations "${violations}" PARENT_SCOPE)
endfunction()

# Checks every file the globs (ARGN) find as `module`; `where` names the tree when they find none.
function(check_tree module where)
  file(GLOB_RECURSE files ${ARGN})
  if(NOT files)
    message(FATAL_ERROR "no sources under ${where}: wrong ROOT, or it moved (update this file)")
  endif()
  foreach(f IN LISTS files)
    check_file(${f} "${module}")
    math(EXPR checked "${checked} + 1")
  endforeach()
  set(violations "${violations}" PARENT_SCOPE)
  set(checked ${checked} PARENT_SCOPE)
endfunction()

set(checked 0)
foreach(module IN LISTS modules)
  check_tree(${module} "${ROOT}/core/src/${module}" ${ROOT}/core/src/${module}/*.cpp ${ROOT}/core/src/${module}/*.hpp)
endforeach()
# The public headers (core/include/kiln) are installed: they name nothing of core/src either.
check_tree("<public>" "${ROOT}/core/include" ${ROOT}/core/include/*.hpp ${ROOT}/core/include/*.h)
check_tree("" "${ROOT}/sdk/include" ${ROOT}/sdk/include/*.hpp ${ROOT}/sdk/include/*.h ${ROOT}/sdk/src/*.cpp)
# The rest of sdk/ (the conformance kit, the example backend) is installed or copied by backend
# authors too, so the same rule holds there: the kit reaches the core through its public headers
# (kiln/backend.hpp for the registry, devices and code generator), never core/src.
check_tree("" "${ROOT}/sdk/conformance and sdk/examples" ${ROOT}/sdk/conformance/*.cpp ${ROOT}/sdk/conformance/*.hpp
           ${ROOT}/sdk/conformance/*.h ${ROOT}/sdk/examples/*.cpp ${ROOT}/sdk/examples/*.hpp ${ROOT}/sdk/examples/*.h)
# An include path is the other way in: the kit's build must not put core/src on its search path.
file(READ ${ROOT}/sdk/conformance/CMakeLists.txt kit_cmake)
if(kit_cmake MATCHES "core/src")
  list(APPEND violations "sdk/conformance/CMakeLists.txt: names core/src: the conformance kit builds against the core's public headers alone")
endif()
check_tree("<plugins>" "${ROOT}/plugins" ${ROOT}/plugins/*.cpp ${ROOT}/plugins/*.hpp)

if(violations)
  list(LENGTH violations n)
  string(REPLACE ";" "\n  " text "${violations}")
  message(FATAL_ERROR "${n} layering violation(s):\n  ${text}")
endif()
message(STATUS "layering: ${checked} files follow the include rules")

# ctest -P script (test example_softmax_names_a_bad_cpu_option): runs ${PROGRAM} with a user config
# whose cpu option is invalid, the opencl backend beside it; the program may run on opencl:0, but its
# stderr must name the cpu backend's configuration error and the device it runs on instead (issue 43:
# a bad option moved every program to PoCL without a word).
execute_process(COMMAND ${PROGRAM} OUTPUT_VARIABLE out ERROR_VARIABLE err RESULT_VARIABLE rc)
message("---- stdout\n${out}---- stderr\n${err}")
foreach(want "kiln: backend cpu has a configuration error" "option 'isa'" "The default device is opencl:0 without it")
  string(FIND "${err}" "${want}" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "stderr does not say: ${want}")
  endif()
endforeach()

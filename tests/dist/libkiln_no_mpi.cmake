# tests/dist/libkiln_no_mpi.cmake - libkiln needs no MPI (kiln::dist is the only library that links
# it): LIB's dynamic section names no libmpi. cmake -DLIB=<libkiln.so> -P libkiln_no_mpi.cmake
execute_process(COMMAND readelf -d ${LIB} OUTPUT_VARIABLE out RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "readelf -d ${LIB} failed (${rc})")
endif()
if(out MATCHES "libmpi|libopen-")
  message(FATAL_ERROR "${LIB} links MPI; only libkiln_dist may:\n${out}")
endif()
message(STATUS "${LIB} needs no MPI")

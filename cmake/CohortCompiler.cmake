# Compiler launcher, warnings and sanitizers.

find_program(COHORT_CCACHE ccache)
if(COHORT_CCACHE AND NOT CMAKE_CXX_COMPILER_LAUNCHER)
  # CCACHE_SLOPPINESS (pch_defines,time_macros,include_file_mtime,include_file_ctime) is set by
  # scripts/build so that precompiled headers stay cacheable.
  set(CMAKE_CXX_COMPILER_LAUNCHER ${COHORT_CCACHE})
  set(CMAKE_C_COMPILER_LAUNCHER ${COHORT_CCACHE})
endif()

add_library(cohort_warnings INTERFACE)
target_compile_options(cohort_warnings INTERFACE -Wall -Wextra -Wpedantic -Wno-unused-parameter)

if(COHORT_SANITIZER)
  if(NOT COHORT_SANITIZER MATCHES "^(address|undefined|thread|address,undefined)$")
    message(FATAL_ERROR "COHORT_SANITIZER must be address, undefined, address,undefined or thread, not '${COHORT_SANITIZER}'")
  endif()
  add_compile_options(-fsanitize=${COHORT_SANITIZER} -fno-omit-frame-pointer)
  add_link_options(-fsanitize=${COHORT_SANITIZER})
endif()

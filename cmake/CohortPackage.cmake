# Install rules and the CMake package, so that `find_package(Cohort)` works from an install prefix.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(COHORT_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/Cohort)
# cohort-torch finds libcohort; `cohort` links none of Cohort's libraries (src/CMakeLists.txt).
set_target_properties(cohort_torch_cli PROPERTIES INSTALL_RPATH "$ORIGIN/../${CMAKE_INSTALL_LIBDIR}")

# A partial build (scripts/main-job builds cohort_cli and what it needs) lacks some of what is
# installed: said first, in one line naming what to build, instead of CMake's own error about
# the first missing file.
install(CODE "
  set(_missing)
  foreach(_file $<TARGET_FILE:cohort> $<TARGET_FILE:cohort_cli> $<TARGET_FILE:cohort_torch_cli>
                $<TARGET_FILE:cohort_exporter> ${PROJECT_BINARY_DIR}/cli-docs/cohort-complete
                ${PROJECT_BINARY_DIR}/cli-docs/man/man1)
    if(NOT EXISTS \${_file})
      list(APPEND _missing \${_file})
    endif()
  endforeach()
  if(_missing)
    string(REPLACE \";\" \", \" _missing \"\${_missing}\")
    message(FATAL_ERROR \"cohort: install needs the whole build, missing: \${_missing}: run \"
                        \"cmake --build ${PROJECT_BINARY_DIR} (or scripts/build) first\")
  endif()
")
install(TARGETS cohort cohort_cli cohort_torch_cli cohort_exporter EXPORT CohortTargets
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR}
        INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(DIRECTORY include/cohort DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} FILES_MATCHING PATTERN "*.hpp")
install(FILES ${PROJECT_BINARY_DIR}/include/cohort/config.hpp
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/cohort)
install(EXPORT CohortTargets NAMESPACE cohort:: DESTINATION ${COHORT_CMAKE_DIR})

configure_package_config_file(cmake/CohortConfig.cmake.in ${PROJECT_BINARY_DIR}/CohortConfig.cmake
                              INSTALL_DESTINATION ${COHORT_CMAKE_DIR})
write_basic_package_version_file(${PROJECT_BINARY_DIR}/CohortConfigVersion.cmake
                                 COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/CohortConfig.cmake ${PROJECT_BINARY_DIR}/CohortConfigVersion.cmake
        DESTINATION ${COHORT_CMAKE_DIR})

# Modulefiles (Lmod and Tcl) and the docs. The modulefiles are generated at install time so that
# `cmake --install --prefix P` puts P in them.
install(DIRECTORY docs/ DESTINATION ${CMAKE_INSTALL_DOCDIR} PATTERN man EXCLUDE)
install(FILES docs/man/cohort.1 DESTINATION ${CMAKE_INSTALL_MANDIR}/man1)
# Generated from the commands' --help (scripts/cli-docs): cohort-COMMAND(1) and the completer,
# which share/bash-completion's file and the modulefiles register.
install(DIRECTORY ${PROJECT_BINARY_DIR}/cli-docs/man/man1 DESTINATION ${CMAKE_INSTALL_MANDIR})
install(PROGRAMS ${PROJECT_BINARY_DIR}/cli-docs/cohort-complete
        DESTINATION ${CMAKE_INSTALL_DATADIR}/cohort)
install(FILES completion/cohort.bash DESTINATION ${CMAKE_INSTALL_DATADIR}/bash-completion/completions
        RENAME cohort)
install(DIRECTORY sbatch/ DESTINATION ${CMAKE_INSTALL_DATADIR}/cohort/sbatch USE_SOURCE_PERMISSIONS)
install(DIRECTORY examples/ DESTINATION ${CMAKE_INSTALL_DATADIR}/cohort/examples USE_SOURCE_PERMISSIONS)
install(CODE "
  set(PROJECT_VERSION ${PROJECT_VERSION})
  set(CMAKE_INSTALL_BINDIR ${CMAKE_INSTALL_BINDIR})
  set(CMAKE_INSTALL_LIBDIR ${CMAKE_INSTALL_LIBDIR})
  set(CMAKE_INSTALL_MANDIR ${CMAKE_INSTALL_MANDIR})
  set(CMAKE_INSTALL_DATADIR ${CMAKE_INSTALL_DATADIR})
  set(COHORT_COMPLETER ${CMAKE_INSTALL_DATADIR}/cohort/cohort-complete)
  set(COHORT_DOC_DIR \${CMAKE_INSTALL_PREFIX}/${CMAKE_INSTALL_DOCDIR})
  set(_dir \$ENV{DESTDIR}\${CMAKE_INSTALL_PREFIX}/${CMAKE_INSTALL_DATADIR}/modulefiles/cohort)
  configure_file(${PROJECT_SOURCE_DIR}/modules/cohort.lua.in \${_dir}/${PROJECT_VERSION}.lua @ONLY)
  configure_file(${PROJECT_SOURCE_DIR}/modules/cohort.tcl.in \${_dir}/${PROJECT_VERSION} @ONLY)
  message(STATUS \"Installing: \${_dir}/${PROJECT_VERSION}{,.lua}\")
")

# The same modulefiles for the build tree, written at configure time: `module use
# BUILD/modulefiles && module load cohort` puts this build's cohort first on PATH, its man pages
# (BUILD/cli-docs/man) on MANPATH and its completer in bash, without installing
# (docs/building.md, "Using a build without installing").
function(cohort_build_tree_modulefiles)
  set(CMAKE_INSTALL_PREFIX ${PROJECT_BINARY_DIR})
  set(CMAKE_INSTALL_BINDIR .)
  set(CMAKE_INSTALL_LIBDIR src)
  set(CMAKE_INSTALL_MANDIR cli-docs/man)
  set(COHORT_COMPLETER cli-docs/cohort-complete)
  set(COHORT_DOC_DIR ${PROJECT_SOURCE_DIR}/docs)
  set(_dir ${PROJECT_BINARY_DIR}/modulefiles/cohort)
  configure_file(${PROJECT_SOURCE_DIR}/modules/cohort.lua.in ${_dir}/${PROJECT_VERSION}.lua @ONLY)
  configure_file(${PROJECT_SOURCE_DIR}/modules/cohort.tcl.in ${_dir}/${PROJECT_VERSION} @ONLY)
endfunction()
cohort_build_tree_modulefiles()

# What a user installs beyond the programs and libraries of CMakeLists.txt: the manual pages, the
# emulated GPU cluster that runs the demo job without a GPU, and the Debian package (cpack -G DEB).
# Included from the top-level CMakeLists.txt after every folder, so that every target exists.

# ---- manual pages ----------------------------------------------------------------------------
# Each program's --help is written as a manual page (NAME, SYNOPSIS, DESCRIPTION, OPTIONS, ...);
# scripts/help2man.py turns it into roff at build time: build/man/man1/PROGRAM.1, installed to
# share/man/man1. A sanitizer or fuzzing build skips them (its programs are not what is installed).
find_program(PROPHET_MAN_PYTHON3 python3)
set(_man_default ON)
if(PROPHET_SANITIZE OR PROPHET_FUZZ OR NOT PROPHET_MAN_PYTHON3)
  set(_man_default OFF)
endif()
option(PROPHET_MAN "Generate the manual pages from the programs' --help (python3)" ${_man_default})
if(PROPHET_MAN AND NOT PROPHET_MAN_PYTHON3)
  message(WARNING "PROPHET_MAN=ON but python3 was not found: no manual pages")
  set(PROPHET_MAN OFF)
endif()
set(PROPHET_MAN_DIR ${CMAKE_BINARY_DIR}/man/man1)
set(_man_pages)
if(PROPHET_MAN)
  set(_h2m ${CMAKE_SOURCE_DIR}/scripts/help2man.py)
  foreach(t prophet-sim prophet-report prophet-doctor prophet-bwmon prophet-emu)
    if(TARGET ${t})
      add_custom_command(OUTPUT ${PROPHET_MAN_DIR}/${t}.1
        COMMAND ${CMAKE_COMMAND} -E make_directory ${PROPHET_MAN_DIR}
        COMMAND ${PROPHET_MAN_PYTHON3} ${_h2m} --version ${PROJECT_VERSION}
                --output ${PROPHET_MAN_DIR}/${t}.1 -- $<TARGET_FILE:${t}>
        DEPENDS ${t} ${_h2m}
        COMMENT "Manual page ${t}.1"
        VERBATIM)
      list(APPEND _man_pages ${PROPHET_MAN_DIR}/${t}.1)
    endif()
  endforeach()
  # prophet-run is a shell script: bin/prophet-run of the build tree (scripts/CMakeLists.txt)
  add_custom_command(OUTPUT ${PROPHET_MAN_DIR}/prophet-run.1
    COMMAND ${CMAKE_COMMAND} -E make_directory ${PROPHET_MAN_DIR}
    COMMAND ${PROPHET_MAN_PYTHON3} ${_h2m} --version ${PROJECT_VERSION}
            --output ${PROPHET_MAN_DIR}/prophet-run.1 -- ${CMAKE_BINARY_DIR}/bin/prophet-run
    DEPENDS ${CMAKE_SOURCE_DIR}/scripts/prophet-run ${_h2m}
    COMMENT "Manual page prophet-run.1"
    VERBATIM)
  list(APPEND _man_pages ${PROPHET_MAN_DIR}/prophet-run.1)
  add_custom_target(prophet-man ALL DEPENDS ${_man_pages})
  if(TARGET prophet-dist)
    add_dependencies(prophet-dist prophet-man)
  endif()
  install(FILES ${_man_pages} DESTINATION ${CMAKE_INSTALL_MANDIR}/man1)
  # built, installed for every installed program, readable with man -l (test/adopt/man_pages.sh)
  add_test(NAME adopt.man_pages COMMAND ${CMAKE_SOURCE_DIR}/test/adopt/man_pages.sh
                                        ${CMAKE_BINARY_DIR} ${PROJECT_VERSION})
  set_tests_properties(adopt.man_pages PROPERTIES TIMEOUT 60 LABELS adopt SKIP_RETURN_CODE 77)
elseif(COMMAND prophet_not_registered)
  prophet_not_registered("adopt.man_pages" "manual pages not built (PROPHET_MAN=OFF; python3 needed)")
endif()

# ---- the emulated GPU cluster ----------------------------------------------------------------
# prophet-emu and its test doubles of libcuda.so.1, libcudart.so and libnccl.so.2, so that the
# demo job runs where there is no GPU (prophet-run prophet-emu --ranks 4 --profile ...). The
# doubles go to a private folder, LIBDIR/prophet/emu, never on the loader's path: only
# prophet-emu finds them, through its RUNPATH.
if(TARGET prophet-emu AND TARGET emu_cuda AND TARGET emu_cudart AND TARGET emu_nccl)
  set(_emu_libdir ${CMAKE_INSTALL_LIBDIR}/prophet/emu)
  file(RELATIVE_PATH _emu_rel /p/${CMAKE_INSTALL_BINDIR} /p/${_emu_libdir})
  set_target_properties(prophet-emu PROPERTIES INSTALL_RPATH "$ORIGIN/${_emu_rel}")
  install(TARGETS prophet-emu RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
  install(TARGETS emu_cuda emu_cudart emu_nccl LIBRARY DESTINATION ${_emu_libdir} NAMELINK_SKIP)
endif()

# ---- the Debian package ----------------------------------------------------------------------
# cpack -G DEB (in the build tree) writes prophet-nccl_VERSION_ARCH.deb: everything
# `cmake --install` installs, under /usr. Its dependencies are named here (what ldd shows of the
# installed files, less libc's own); scripts/deb-check.sh installs it and checks that nothing is
# missing.
set(CPACK_PACKAGE_NAME prophet-nccl)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_VENDOR "Prophet for NCCL")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "${PROJECT_DESCRIPTION}")
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(PROPHET_PACKAGE_MAINTAINER "Prophet for NCCL maintainers <maintainers@prophet-nccl.invalid>"
    CACHE STRING "The Maintainer field of the Debian package")
set(CPACK_DEBIAN_PACKAGE_MAINTAINER "${PROPHET_PACKAGE_MAINTAINER}")
set(CPACK_DEBIAN_PACKAGE_SECTION science)
set(_deb_depends "libc6 (>= 2.34), libjansson4 (>= 2.14)")
if(TARGET prophet_bw_plugin OR TARGET prophet-bwmon)
  string(APPEND _deb_depends ", libbpf1 (>= 1:1.1)")
endif()
set(CPACK_DEBIAN_PACKAGE_DEPENDS "${_deb_depends}")
# below the summary line (CPACK_PACKAGE_DESCRIPTION_SUMMARY); cpack writes " ." for a blank line
set(CPACK_DEBIAN_PACKAGE_DESCRIPTION "An LD_PRELOAD library (libprophet.so) for unmodified data-parallel training jobs: it intercepts
their NCCL all-reduces, learns when each gradient becomes ready and how fast the network is, and
releases the all-reduces as regrouped blocks, highest priority first.

With prophet-run, prophet-doctor, prophet-report, prophet-sim, prophet-bwmon, their manual pages,
the gradient profiles of common models, and prophet-emu, an emulated GPU cluster on which the
demo job runs without a GPU.")
include(CPack)

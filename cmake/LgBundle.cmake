# LG_BUNDLE_RUNTIME: `cmake --install` makes a prefix that runs on a machine without the build's
# libraries (the Python wheel, bindings/python/pyproject.toml, is such a prefix):
#
#   bin/leakgate        its RPATH is $ORIGIN/../lib, as DT_RPATH so that it also serves the
#                       libraries' own dependencies (OpenBLAS -> libgfortran): DT_RUNPATH would not
#   lib/libopenblas.so.0, libgfortran.so.5, libquadmath.so.0, libjansson.so.4, ...
#                       every shared library it needs beyond glibc and the C++ runtime (which every
#                       Debian 12 system has), copied under the name the binary asks for
#
# The agent and libleakgate need nothing beyond glibc and the C++ runtime when jemalloc is linked
# statically (LG_STATIC_JEMALLOC, which this option asks for): the agent is preloaded into the
# user's program, where a private copy of a library could clash with the program's own.
if(NOT LG_STATIC_JEMALLOC)
  message(FATAL_ERROR "LG_BUNDLE_RUNTIME needs LG_STATIC_JEMALLOC=ON (the preloaded agent must not "
                      "depend on a copy of libjemalloc)")
endif()
set_target_properties(leakgate PROPERTIES INSTALL_RPATH "$ORIGIN/../${CMAKE_INSTALL_LIBDIR}")
target_link_options(leakgate PRIVATE -Wl,--disable-new-dtags)

install(CODE "set(LG_BUNDLE_LIBDIR \"${CMAKE_INSTALL_LIBDIR}\")")
install(CODE [[
  file(GET_RUNTIME_DEPENDENCIES
       EXECUTABLES "$<TARGET_FILE:leakgate>"
       RESOLVED_DEPENDENCIES_VAR lg_deps
       UNRESOLVED_DEPENDENCIES_VAR lg_missing
       PRE_EXCLUDE_REGEXES "^ld-linux" "^linux-vdso" "^lib(c|m|dl|rt|pthread|util|resolv)\\.so"
                           "^libstdc\\+\\+\\.so" "^libgcc_s\\.so")
  if(lg_missing)
    message(FATAL_ERROR "LG_BUNDLE_RUNTIME: leakgate needs libraries that were not found: ${lg_missing}")
  endif()
  foreach(lg_dep IN LISTS lg_deps)
    get_filename_component(lg_name "${lg_dep}" NAME)
    file(REAL_PATH "${lg_dep}" lg_real)
    file(INSTALL DESTINATION "${CMAKE_INSTALL_PREFIX}/${LG_BUNDLE_LIBDIR}" TYPE FILE
         RENAME "${lg_name}" FILES "${lg_real}")
  endforeach()
]])

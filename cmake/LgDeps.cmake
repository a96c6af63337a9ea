# Third-party libraries, all from Debian's packages (see README "Dependencies").

# jemalloc: the allocator under the tracker (dedicated arena, mallctl statistics).
# Under AddressSanitizer the sanitizer owns malloc, so the tracker falls back to
# posix_memalign and reports jemalloc channels as unavailable.
add_library(lg_jemalloc INTERFACE)
if(NOT LG_SANITIZE_ADDRESS AND NOT LG_SANITIZE_THREAD AND NOT LG_FUZZ)
  if(LG_STATIC_JEMALLOC)
    find_library(LG_JEMALLOC_LIB NAMES libjemalloc_pic.a libjemalloc.a REQUIRED)
    target_link_libraries(lg_jemalloc INTERFACE ${LG_JEMALLOC_LIB} Threads::Threads ${CMAKE_DL_LIBS} m)
  else()
    pkg_check_modules(JEMALLOC REQUIRED IMPORTED_TARGET jemalloc)
    target_link_libraries(lg_jemalloc INTERFACE PkgConfig::JEMALLOC)
  endif()
  target_compile_definitions(lg_jemalloc INTERFACE LG_HAVE_JEMALLOC=1)
endif()

# OpenBLAS: CPU matrix products (cblas_sgemm).
find_path(LG_CBLAS_INCLUDE cblas.h PATH_SUFFIXES openblas-pthread openblas REQUIRED)
find_library(LG_OPENBLAS_LIB NAMES openblas REQUIRED)
add_library(lg_blas INTERFACE)
target_include_directories(lg_blas INTERFACE ${LG_CBLAS_INCLUDE})
target_link_libraries(lg_blas INTERFACE ${LG_OPENBLAS_LIB})

# Jansson: JSON (safetensors headers, configs, results, reports).
pkg_check_modules(JANSSON REQUIRED IMPORTED_TARGET jansson)
add_library(lg_json INTERFACE)
target_link_libraries(lg_json INTERFACE PkgConfig::JANSSON)

# Criterion: the test framework (only when tests are built).
if(LG_TESTS)
  pkg_check_modules(CRITERION REQUIRED IMPORTED_TARGET criterion)
endif()

# lg_add_test(NAME name SOURCES ... LABELS ... [LIBS ...] [TIMEOUT s] [SPLIT test ...])
# Builds one Criterion test program and registers it with CTest under a label
# (unit, integration, reference, gpu, bench), like llama.cpp's llama_build_and_test.
# A program whose tests were skipped exits 77 (tests/lg_test.c), which CTest shows as a SKIP,
# never a pass; a test that may skip on some machines is SPLIT into its own entry
# (NAME_TEST, run with --filter) so the others still show as passed.
function(lg_add_test)
  cmake_parse_arguments(T "" "NAME;TIMEOUT" "SOURCES;LABELS;LIBS;SPLIT" ${ARGN})
  add_executable(${T_NAME} ${T_SOURCES})
  target_link_libraries(${T_NAME} PRIVATE PkgConfig::CRITERION ${T_LIBS})
  target_include_directories(${T_NAME} PRIVATE ${PROJECT_SOURCE_DIR}/tests)
  set_target_properties(${T_NAME} PROPERTIES ENABLE_EXPORTS ON) # -rdynamic: readable stacks
  if(NOT T_TIMEOUT)
    set(T_TIMEOUT 300)
  endif()
  # --jobs 1: tests measure memory
  if(T_SPLIT)
    list(TRANSFORM T_SPLIT PREPEND "*/" OUTPUT_VARIABLE globs)
    list(JOIN globs "|" alt)
    add_test(NAME ${T_NAME} COMMAND ${T_NAME} --jobs 1 "--filter=!(${alt})")
    foreach(t ${T_SPLIT})
      add_test(NAME ${T_NAME}_${t} COMMAND ${T_NAME} --jobs 1 "--filter=*/${t}")
      set_tests_properties(${T_NAME}_${t} PROPERTIES LABELS "${T_LABELS}" TIMEOUT ${T_TIMEOUT}
                           SKIP_RETURN_CODE 77)
    endforeach()
  else()
    add_test(NAME ${T_NAME} COMMAND ${T_NAME} --jobs 1)
  endif()
  set_tests_properties(${T_NAME} PROPERTIES LABELS "${T_LABELS}" TIMEOUT ${T_TIMEOUT}
                       SKIP_RETURN_CODE 77)
endfunction()

# lg_add_test(NAME name SOURCES ... LABELS ... [LIBS ...] [TIMEOUT s])
# Builds one Criterion test program and registers it with CTest under a label
# (unit, integration, reference, gpu, bench), like llama.cpp's llama_build_and_test.
function(lg_add_test)
  cmake_parse_arguments(T "" "NAME;TIMEOUT" "SOURCES;LABELS;LIBS" ${ARGN})
  add_executable(${T_NAME} ${T_SOURCES})
  target_link_libraries(${T_NAME} PRIVATE PkgConfig::CRITERION ${T_LIBS})
  target_include_directories(${T_NAME} PRIVATE ${PROJECT_SOURCE_DIR}/tests)
  set_target_properties(${T_NAME} PROPERTIES ENABLE_EXPORTS ON) # -rdynamic: readable stacks
  # --jobs 1: tests measure memory
  add_test(NAME ${T_NAME} COMMAND ${T_NAME} --jobs 1)
  if(NOT T_TIMEOUT)
    set(T_TIMEOUT 300)
  endif()
  set_tests_properties(${T_NAME} PROPERTIES LABELS "${T_LABELS}" TIMEOUT ${T_TIMEOUT})
endfunction()

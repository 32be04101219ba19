# berth_test(NAME LABEL SOURCES... [LIBS ...]): one GoogleTest binary registered with ctest under
# a label (unit, integration or e2e) so that `ctest -L unit` picks the fast ones.
include(CMakeParseArguments)
function(berth_test name label)
  cmake_parse_arguments(T "" "" "SOURCES;LIBS" ${ARGN})
  add_executable(${name} ${T_SOURCES})
  target_link_libraries(${name} PRIVATE ${T_LIBS} GTest::gtest GTest::gmock)
  add_test(NAME ${name} COMMAND ${name})
  set_tests_properties(${name} PROPERTIES LABELS ${label} ENVIRONMENT
                        "LSAN_OPTIONS=suppressions=${PROJECT_SOURCE_DIR}/tests/lsan.supp")
endfunction()

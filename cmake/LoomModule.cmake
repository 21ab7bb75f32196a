# loom_module(NAME [PUBLIC_DEPS ...] [PRIVATE_DEPS ...])
# One static library per domain folder: public headers in include/loom/<name>/, sources in
# src/ (globbed, so adding a file needs no edit here). Target loom_<name>, alias loom::<name>.
function(loom_module name)
  cmake_parse_arguments(ARG "" "" "PUBLIC_DEPS;PRIVATE_DEPS" ${ARGN})
  file(GLOB_RECURSE _srcs CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/src/*.cpp)
  if(NOT _srcs)
    # A module still being written: headers only.
    add_library(loom_${name} INTERFACE)
    add_library(loom::${name} ALIAS loom_${name})
    target_include_directories(loom_${name} INTERFACE ${CMAKE_CURRENT_SOURCE_DIR}/include)
    target_link_libraries(loom_${name} INTERFACE ${ARG_PUBLIC_DEPS})
    return()
  endif()
  add_library(loom_${name} STATIC ${_srcs})
  add_library(loom::${name} ALIAS loom_${name})
  target_include_directories(loom_${name}
    PUBLIC ${CMAKE_CURRENT_SOURCE_DIR}/include
    PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/src)
  target_link_libraries(loom_${name} PUBLIC ${ARG_PUBLIC_DEPS} PRIVATE ${ARG_PRIVATE_DEPS})
endfunction()

# loom_test(NAME SOURCES... LIBS ...): one GoogleTest binary, registered with ctest.
function(loom_test name)
  cmake_parse_arguments(ARG "" "" "SOURCES;LIBS;LABELS" ${ARGN})
  add_executable(${name} ${ARG_SOURCES})
  target_link_libraries(${name} PRIVATE ${ARG_LIBS} GTest::gtest GTest::gtest_main)
  # The test files themselves at -Og: most of their compile time is optimising GoogleTest's,
  # nlohmann's and Beast's templates, which a test does not need fast (-27 to -38 % CPU per
  # file). The code under test, the loom_* libraries and tests/support, keeps the build type's
  # -O2; the benchmarks (bench/) are not loom_test targets and keep it too.
  if(CMAKE_BUILD_TYPE MATCHES "^(RelWithDebInfo|Release)$")
    target_compile_options(${name} PRIVATE -Og)
  endif()
  # CMake 3.25's gtest_discover_tests cannot pass a list in PROPERTIES (its second label was
  # read as a property name: the server tests were labelled "integration" only). The labels go
  # as one word, "integration-server"; `ctest -L` takes a regular expression, so -L server
  # still selects them.
  string(REPLACE ";" "-" _labels "${ARG_LABELS}")
  gtest_discover_tests(${name} DISCOVERY_TIMEOUT 60 PROPERTIES LABELS "${_labels}")
endfunction()

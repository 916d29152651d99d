# Included by the top-level CMakeLists.txt when LAGPILOT_BUILD_FUZZERS is ON (see docs/fuzzing.md).
#
# Every target of the build is compiled with libFuzzer's coverage instrumentation plus
# AddressSanitizer and UndefinedBehaviorSanitizer (UBSan aborts: -fno-sanitize-recover=all), so
# the libraries the fuzzers link are instrumented too. `make test` builds the unit suites in
# the same tree and runs them there under ASan+UBSan (the coverage hooks are no-ops outside a
# fuzzer), so every library is compiled once for both. Build the targets you need (the
# Makefile's test-asan and test-fuzz), not `all`.
if(NOT CMAKE_CXX_COMPILER_ID MATCHES "Clang")
  message(FATAL_ERROR "LAGPILOT_BUILD_FUZZERS needs clang (libFuzzer): configure with "
                      "CC=clang CXX=clang++, not ${CMAKE_CXX_COMPILER_ID}")
endif()
if(LAGPILOT_SANITIZE)
  message(FATAL_ERROR "LAGPILOT_BUILD_FUZZERS already sets the sanitizers; leave LAGPILOT_SANITIZE empty")
endif()
# After the build type's flags on the command line, so these win: -O1 and line tables only
# (symbolized stack traces, a shorter build), assertions on (-UNDEBUG) so invariants are checked.
add_compile_options(-fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=all
                    -fno-omit-frame-pointer -O1 -gline-tables-only -UNDEBUG)
add_link_options(-fsanitize=address,undefined)
add_subdirectory(${CMAKE_CURRENT_LIST_DIR} ${PROJECT_BINARY_DIR}/fuzz)

# Helpers shared by every module: warnings, sanitizers, tests.

function(reelfs_set_warnings target)
  # -Wshadow=local is GCC's; clang has no such level (its -Wshadow also flags members). Kept in
  # place for GCC so its command lines, and ccache's hits, do not change.
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wpedantic
                                           $<$<CXX_COMPILER_ID:GNU>:-Wshadow=local>
                                           -Wno-missing-field-initializers)
  if(REELFS_THREAD_SAFETY)
    target_compile_options(${target} PRIVATE -Wthread-safety)
  endif()
  if(REELFS_WERROR)
    target_compile_options(${target} PRIVATE -Werror)
  endif()
  # GCC 12 at -O2 reports impossible memcpy overlaps inside std::string assignment
  # (GCC bug 105329, fixed in 13): a false positive in libstdc++, not in our code.
  if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU" AND CMAKE_CXX_COMPILER_VERSION VERSION_LESS 13)
    target_compile_options(${target} PRIVATE -Wno-restrict)
  endif()
endfunction()

if(REELFS_THREAD_SAFETY AND NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
  message(FATAL_ERROR "REELFS_THREAD_SAFETY needs clang (-DCMAKE_CXX_COMPILER=clang++-14)")
endif()

# REELFS_SANITIZED: true in either sanitizer build, for tests that only run without one.
string(TOLOWER "${REELFS_SANITIZE}" reelfs_sanitize_)
set(REELFS_SANITIZED ON)
# Sanitizer builds keep line tables only (-g1 in gcc, -gline-tables-only in clang): reports still
# name file:line, and the build tree shrinks from ~5 to ~1.5 GiB (CI runs three trees on one disk).
set(reelfs_line_tables_ $<IF:$<CXX_COMPILER_ID:Clang>,-gline-tables-only,-g1>)
if(reelfs_sanitize_ STREQUAL "thread")
  # TSan cannot be combined with ASan; tsan.supp (scripts/tsan.sh) holds the third-party reports.
  add_compile_options(-fsanitize=thread -fno-omit-frame-pointer ${reelfs_line_tables_})
  add_link_options(-fsanitize=thread)
elseif(reelfs_sanitize_ MATCHES "^(on|address|yes|true|1)$")
  add_compile_options(-fsanitize=address,undefined -fno-omit-frame-pointer
                      -fno-sanitize-recover=undefined ${reelfs_line_tables_})
  add_link_options(-fsanitize=address,undefined)
elseif(reelfs_sanitize_ MATCHES "^(off|no|false|0|)$")
  set(REELFS_SANITIZED OFF)
else()
  message(FATAL_ERROR "REELFS_SANITIZE=${REELFS_SANITIZE}: want OFF, ON, address or thread")
endif()

# REELFS_FUZZ: every library gets libFuzzer's coverage instrumentation and ASan + UBSan; the fuzz
# targets (tests/fuzz) add -fsanitize=fuzzer at link time.
if(REELFS_FUZZ)
  if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
    message(FATAL_ERROR "REELFS_FUZZ needs clang (libFuzzer): CC=clang CXX=clang++")
  endif()
  if(REELFS_SANITIZE)
    message(FATAL_ERROR "REELFS_FUZZ already sanitizes; leave REELFS_SANITIZE off")
  endif()
  add_compile_options(-fsanitize=fuzzer-no-link,address,undefined -fno-omit-frame-pointer
                      -fno-sanitize-recover=undefined)
  add_link_options(-fsanitize=address,undefined)
endif()

# reelfs_add_module(NAME SOURCES ... [PUBLIC_LIBS ...] [PRIVATE_LIBS ...])
function(reelfs_add_module name)
  cmake_parse_arguments(ARG "" "" "SOURCES;PUBLIC_LIBS;PRIVATE_LIBS" ${ARGN})
  add_library(${name} STATIC ${ARG_SOURCES})
  target_include_directories(${name} PUBLIC ${PROJECT_SOURCE_DIR})
  target_link_libraries(${name} PUBLIC ${ARG_PUBLIC_LIBS} PRIVATE ${ARG_PRIVATE_LIBS})
  reelfs_set_warnings(${name})
endfunction()

# reelfs_add_test(NAME LABEL unit|integration|interop|e2e|hw SOURCES ... LIBS ...
#                 [NO_DOCTEST_MAIN] [TIMEOUT s] [ENV k=v...])
# A test whose precondition is missing prints why and exits 77 (SKIP_RETURN_CODE).
function(reelfs_add_test name)
  cmake_parse_arguments(ARG "NO_DOCTEST_MAIN" "LABEL;TIMEOUT" "SOURCES;LIBS;ENV" ${ARGN})
  add_executable(${name} ${ARG_SOURCES})
  target_link_libraries(${name} PRIVATE ${ARG_LIBS})
  if(NOT ARG_NO_DOCTEST_MAIN)
    target_link_libraries(${name} PRIVATE reelfs_doctest_main)
  endif()
  reelfs_set_warnings(${name})
  add_test(NAME ${name} COMMAND ${name})
  if(NOT ARG_TIMEOUT)
    set(ARG_TIMEOUT 300)
  endif()
  set_tests_properties(${name} PROPERTIES LABELS ${ARG_LABEL} SKIP_RETURN_CODE 77
                                          TIMEOUT ${ARG_TIMEOUT})
  # No test ever asks EC2 instance metadata at 169.254.169.254 (not loopback); the one that
  # tests that provider points it at a loopback double.
  set_tests_properties(${name} PROPERTIES ENVIRONMENT
                       "AWS_EC2_METADATA_DISABLED=true;${ARG_ENV}")
endfunction()

# reelfs_add_script_test(NAME LABEL ... COMMAND ... [TIMEOUT s])
function(reelfs_add_script_test name)
  cmake_parse_arguments(ARG "" "LABEL;TIMEOUT" "COMMAND;ENV" ${ARGN})
  add_test(NAME ${name} COMMAND ${ARG_COMMAND})
  if(NOT ARG_TIMEOUT)
    set(ARG_TIMEOUT 600)
  endif()
  set_tests_properties(${name} PROPERTIES LABELS ${ARG_LABEL} SKIP_RETURN_CODE 77
                                          TIMEOUT ${ARG_TIMEOUT})
  # No test ever asks EC2 instance metadata at 169.254.169.254 (not loopback); the one that
  # tests that provider points it at a loopback double.
  set_tests_properties(${name} PROPERTIES ENVIRONMENT
                       "AWS_EC2_METADATA_DISABLED=true;${ARG_ENV}")
endfunction()

# reelfs_check_headers(TARGET DIRS ... LIBS ...): every header under DIRS must compile on its own
# (docs/conventions.md). One generated translation unit per header, built as part of `all`.
function(reelfs_check_headers target)
  cmake_parse_arguments(ARG "" "" "DIRS;LIBS" ${ARGN})
  set(sources)
  foreach(dir ${ARG_DIRS})
    # A glob is fine here: this is a check over whatever headers exist, not a source list.
    file(GLOB_RECURSE headers RELATIVE ${PROJECT_SOURCE_DIR} CONFIGURE_DEPENDS
         ${PROJECT_SOURCE_DIR}/${dir}/*.h)
    foreach(header ${headers})
      string(MAKE_C_IDENTIFIER ${header} id)
      set(tu ${CMAKE_CURRENT_BINARY_DIR}/check_headers/${id}.cc)
      file(CONFIGURE OUTPUT ${tu} CONTENT "#include \"${header}\"  // must compile alone\n")
      list(APPEND sources ${tu})
    endforeach()
  endforeach()
  add_library(${target} OBJECT ${sources})
  target_include_directories(${target} PRIVATE ${PROJECT_SOURCE_DIR})
  target_link_libraries(${target} PRIVATE ${ARG_LIBS})
  reelfs_set_warnings(${target})
endfunction()

# Script mode (cmake -P), run at every build by common/CMakeLists.txt's reelfs_version_info target:
# writes OUT (the definition of reelfs::VersionString) from the project version and, in a git
# checkout, `git describe --always --dirty`. configure_file rewrites OUT only when the text
# changed, so a build with nothing new recompiles nothing.
# Inputs: -DSRC_DIR=... -DOUT=... -DVERSION=...
set(REELFS_GIT "")
find_program(GIT_EXE git)
if(GIT_EXE AND EXISTS "${SRC_DIR}/.git")
  execute_process(COMMAND "${GIT_EXE}" -C "${SRC_DIR}" describe --always --dirty --abbrev=12
                  OUTPUT_VARIABLE REELFS_GIT OUTPUT_STRIP_TRAILING_WHITESPACE
                  RESULT_VARIABLE git_rc ERROR_QUIET)
  if(NOT git_rc EQUAL 0)
    set(REELFS_GIT "")
  endif()
endif()
if(REELFS_GIT)
  set(REELFS_VERSION_STRING "${VERSION} (git ${REELFS_GIT})")
else()
  set(REELFS_VERSION_STRING "${VERSION}")
endif()
configure_file("${CMAKE_CURRENT_LIST_DIR}/version_info.cc.in" "${OUT}" @ONLY)

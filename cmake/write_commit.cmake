# Writes OUT (a .cpp defining tqref::kGitCommit) from `git rev-parse --short=12 HEAD` of SOURCE_DIR,
# with "-dirty" when tracked files differ from HEAD; run at every build (target tqref_git_commit)
# so that `tqref version` and golden-file provenance name the commit actually built, not the one
# CMake configured. The file is rewritten only when the text changes (no needless rebuilds).
execute_process(COMMAND git rev-parse --short=12 HEAD WORKING_DIRECTORY ${SOURCE_DIR}
                OUTPUT_VARIABLE commit OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET
                RESULT_VARIABLE rc)
if(NOT rc EQUAL 0 OR NOT commit)
  set(commit "unknown")
else()
  execute_process(COMMAND git diff --quiet HEAD -- WORKING_DIRECTORY ${SOURCE_DIR}
                  RESULT_VARIABLE dirty ERROR_QUIET)
  if(NOT dirty EQUAL 0)
    string(APPEND commit "-dirty")
  endif()
endif()
set(text "// Generated at build time by cmake/write_commit.cmake.\n#include \"tqref/build_info.h\"\nnamespace tqref {\nconst char* const kGitCommit = \"${commit}\";\n}  // namespace tqref\n")
set(old "")
if(EXISTS ${OUT})
  file(READ ${OUT} old)
endif()
if(NOT old STREQUAL text)
  file(WRITE ${OUT} "${text}")
endif()

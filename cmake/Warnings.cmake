# Compiler flags shared by every berth target: warnings, sanitizers, ccache, clang-tidy.
find_program(CCACHE_PROGRAM ccache)
if(CCACHE_PROGRAM)
  # Paths inside the source tree are hashed relative to the build folder, and the build folder
  # itself not at all: a clone elsewhere (CI's) reuses what this machine compiled. A value that
  # names the tree (a -D of its path) still tells two clones apart.
  set(CMAKE_CXX_COMPILER_LAUNCHER ${CMAKE_COMMAND} -E env CCACHE_BASEDIR=${PROJECT_SOURCE_DIR}
                                  CCACHE_NOHASHDIR=1 ${CCACHE_PROGRAM})
endif()

add_compile_options(-Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor -Wold-style-cast
                    -Wcast-align -Wunused -Woverloaded-virtual -Wconversion -Wsign-conversion
                    -Wno-missing-field-initializers)
if(CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
  add_compile_options(-Wthread-safety)
else()
  # GCC 12 warns falsely on "literal" + std::string&& at -O2 and above (GCC bug 105329).
  add_compile_options(-Wno-restrict)
endif()
if(BERTH_WERROR)
  add_compile_options(-Werror)
endif()

if(BERTH_SANITIZE)
  add_compile_options(-fsanitize=address,undefined -fno-omit-frame-pointer
                      -fno-sanitize-recover=undefined)
  add_link_options(-fsanitize=address,undefined)
endif()
if(BERTH_TSAN)
  add_compile_options(-fsanitize=thread -fno-omit-frame-pointer)
  add_link_options(-fsanitize=thread)
endif()

if(BERTH_CLANG_TIDY)
  # clang-tidy 22 (Debian 12's security updates carry it), not 14: it leaves system headers out
  # of its matching, and takes 40% of 14's time here (6.0 against 14.7 s of CPU for
  # deployment_routes.cpp, same checks). .clang-tidy is curated for it.
  find_program(CLANG_TIDY_PROGRAM clang-tidy-22 REQUIRED)
  # Under g++ the flags say -std=c++23, which clang 14 calls c++2b. -w: the compiler's own
  # warnings are the compiler's business (clang 22 has new ones for code clang 14 builds).
  # The wrapper reuses a clean result for a file whose preprocessed text, options and config
  # are unchanged (scripts/clang-tidy-cached).
  set(CMAKE_CXX_CLANG_TIDY ${CMAKE_SOURCE_DIR}/scripts/clang-tidy-cached ${CLANG_TIDY_PROGRAM}
                           --extra-arg=-std=c++2b --extra-arg=-w --quiet)
endif()

# Every third-party library berth links, all from Debian 12 packages (scripts/bootstrap).
find_package(Threads REQUIRED)
find_package(OpenSSL 3 REQUIRED)
find_package(CURL REQUIRED)
find_package(fmt REQUIRED)
find_package(nlohmann_json 3.11 REQUIRED)
# Boost.System's result<T, E> stands in for std::expected: libstdc++ 12's <expected> does not
# compile under clang 14, which clang-tidy and the fuzz preset need.
find_package(Boost 1.81 REQUIRED CONFIG)
find_package(PostgreSQL REQUIRED)
find_package(ZLIB REQUIRED)
find_package(prometheus-cpp CONFIG REQUIRED)  # core only: berthd serves /metrics itself

# The runner links statically (apps/runner); everything else dynamically. Libraries link
# these two through a generator expression that asks the executable being linked whether it
# set the BERTH_STATIC property.
find_library(BERTH_LIBCRYPTO_STATIC libcrypto.a REQUIRED)
find_library(BERTH_LIBZ_STATIC libz.a REQUIRED)
find_library(BERTH_LIBSSL_STATIC libssl.a REQUIRED)
add_library(berth_dep_crypto INTERFACE)
target_link_libraries(berth_dep_crypto INTERFACE
  "$<IF:$<BOOL:$<TARGET_PROPERTY:BERTH_STATIC>>,${BERTH_LIBCRYPTO_STATIC},OpenSSL::Crypto>")
add_library(berth_dep_zlib INTERFACE)
target_link_libraries(berth_dep_zlib INTERFACE
  "$<IF:$<BOOL:$<TARGET_PROPERTY:BERTH_STATIC>>,${BERTH_LIBZ_STATIC},ZLIB::ZLIB>")
add_library(berth_dep_ssl INTERFACE)
target_link_libraries(berth_dep_ssl INTERFACE
  "$<IF:$<BOOL:$<TARGET_PROPERTY:BERTH_STATIC>>,${BERTH_LIBSSL_STATIC},OpenSSL::SSL>"
  berth_dep_crypto)

# libseccomp builds the local runners' seccomp program (berthd only, so dynamically).
find_library(BERTH_LIBSECCOMP seccomp REQUIRED)

# RE2: every pattern berth matches against input is linear in the input (libstdc++'s std::regex
# recurses per character, so one long field would overflow berthd's stack).
find_library(BERTH_LIBRE2_STATIC libre2.a REQUIRED)
find_library(BERTH_LIBRE2 re2 REQUIRED)
add_library(berth_dep_re2 INTERFACE)
target_link_libraries(berth_dep_re2 INTERFACE
  "$<IF:$<BOOL:$<TARGET_PROPERTY:BERTH_STATIC>>,${BERTH_LIBRE2_STATIC},${BERTH_LIBRE2}>"
  Threads::Threads)

find_package(PkgConfig REQUIRED)
# libgit2: berth-controller fetches spec.git sources itself (the runner never reaches Git).
pkg_check_modules(BERTH_LIBGIT2 REQUIRED IMPORTED_TARGET libgit2)

# gRPC: only the channel between berth-controller and `runner serve` (src/rpc). Required: a
# machine without it fails here rather than quietly building (and testing) less. With
# -DBERTH_WITHOUT_GRPC=ON the rest builds and `runner serve` says it was left out. The static
# runner links the archives pkg-config lists for a static link.
option(BERTH_WITHOUT_GRPC "build without runner serve and berth-controller" OFF)
pkg_check_modules(BERTH_GRPC IMPORTED_TARGET grpc++ protobuf)
find_program(BERTH_GRPC_CPP_PLUGIN grpc_cpp_plugin)
find_program(BERTH_PROTOC protoc)
if(BERTH_GRPC_FOUND AND BERTH_GRPC_CPP_PLUGIN AND BERTH_PROTOC)
  set(BERTH_WITH_GRPC ON)
  add_library(berth_dep_grpc INTERFACE)
  target_include_directories(berth_dep_grpc INTERFACE ${BERTH_GRPC_INCLUDE_DIRS})
  foreach(item IN LISTS BERTH_GRPC_STATIC_LDFLAGS)
    target_link_libraries(berth_dep_grpc INTERFACE
      "$<$<BOOL:$<TARGET_PROPERTY:BERTH_STATIC>>:${item}>")
  endforeach()
  target_link_libraries(berth_dep_grpc INTERFACE
    "$<$<NOT:$<BOOL:$<TARGET_PROPERTY:BERTH_STATIC>>>:PkgConfig::BERTH_GRPC>")
elseif(BERTH_WITHOUT_GRPC)
  set(BERTH_WITH_GRPC OFF)
  message(STATUS "BERTH_WITHOUT_GRPC: runner serve and berth-controller are left out")
else()
  message(FATAL_ERROR "gRPC not found (libgrpc++-dev, libprotobuf-dev, protobuf-compiler, "
                      "protobuf-compiler-grpc): run scripts/bootstrap, or configure with "
                      "-DBERTH_WITHOUT_GRPC=ON to build without runner serve and "
                      "berth-controller")
endif()

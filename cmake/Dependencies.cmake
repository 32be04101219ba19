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

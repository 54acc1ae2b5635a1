# Sets GRAPHRT_WITH_HTTP and, when ON, the target graphrt_httplib (included by CMakeLists.txt; a
# project of its own can include it to check the .deps/ route, with PKG_CONFIG_LIBDIR=/nonexistent).
#
# The HTTP server (graphrt serve, bench serving) needs Debian's libcpp-httplib-dev (a compiled
# library, with OpenSSL/zlib/brotli headers), found through pkg-config; else (the GPU machine has
# no apt) the header in GRAPHRT_DEPS_DIR and libcpp-httplib.so.0.11 with the brotli libraries in
# the lib/ folder beside it (scripts/fetch_gpu_deps.sh), found at run time through an RPATH.
# Without either everything else builds and `serve` says why.
find_package(PkgConfig QUIET)
set(GRAPHRT_WITH_HTTP OFF)
if(PKG_CONFIG_FOUND)
  pkg_check_modules(HTTPLIB QUIET IMPORTED_TARGET cpp-httplib)
  if(HTTPLIB_FOUND)
    set(GRAPHRT_WITH_HTTP ON)
    add_library(graphrt_httplib ALIAS PkgConfig::HTTPLIB)
  endif()
endif()
get_filename_component(GRAPHRT_DEPS_LIB_DIR "${GRAPHRT_DEPS_DIR}/../lib" ABSOLUTE)
if(NOT GRAPHRT_WITH_HTTP AND EXISTS "${GRAPHRT_DEPS_DIR}/httplib.h"
   AND EXISTS "${GRAPHRT_DEPS_LIB_DIR}/libcpp-httplib.so.0.11")
  set(GRAPHRT_WITH_HTTP ON)
  add_library(graphrt_httplib SHARED IMPORTED)
  set_target_properties(graphrt_httplib PROPERTIES
    IMPORTED_LOCATION "${GRAPHRT_DEPS_LIB_DIR}/libcpp-httplib.so.0.11"
    IMPORTED_SONAME "libcpp-httplib.so.0.11"
    INTERFACE_INCLUDE_DIRECTORIES "${GRAPHRT_DEPS_DIR}"
    # The flags Debian built the library with: they change httplib's classes.
    INTERFACE_COMPILE_DEFINITIONS "CPPHTTPLIB_OPENSSL_SUPPORT;CPPHTTPLIB_ZLIB_SUPPORT;CPPHTTPLIB_BROTLI_SUPPORT"
    # DT_RPATH, not RUNPATH: the library's own dependencies (brotli) are found there too.
    # LINKER: so CMake spells it for whichever tool links (g++ or nvcc).
    INTERFACE_LINK_OPTIONS "LINKER:-rpath,${GRAPHRT_DEPS_LIB_DIR};LINKER:--disable-new-dtags")
  message(STATUS "graphrt: cpp-httplib from ${GRAPHRT_DEPS_LIB_DIR}")
endif()

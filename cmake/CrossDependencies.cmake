# Dependencies of a cross build that Debian ships only for the host architecture:
# - header-only libraries (fmt in header-only mode, nlohmann-json, CLI11, toml++ in header-only
#   mode): their headers are architecture-independent, so a staging directory exposes just those
#   headers to the target compiler (never the host's /usr/include as a whole, which would shadow the sysroot's libc);
# - GoogleTest, built from Debian's architecture-independent source in /usr/src/googletest;
# - Google Benchmark comes from scripts/build-riscv-deps.sh (found through CMAKE_FIND_ROOT_PATH).
set(K3_STAGED_HEADERS "${CMAKE_BINARY_DIR}/staged-headers")
file(MAKE_DIRECTORY "${K3_STAGED_HEADERS}")
foreach(dir fmt nlohmann CLI toml++)
  if(NOT EXISTS "/usr/include/${dir}")
    message(FATAL_ERROR "/usr/include/${dir} missing: run scripts/setup.sh")
  endif()
  file(CREATE_LINK "/usr/include/${dir}" "${K3_STAGED_HEADERS}/${dir}" SYMBOLIC)
endforeach()

add_library(k3_staged_headers INTERFACE)
target_include_directories(k3_staged_headers SYSTEM INTERFACE "${K3_STAGED_HEADERS}")
add_library(fmt::fmt INTERFACE IMPORTED)
target_link_libraries(fmt::fmt INTERFACE k3_staged_headers)
target_compile_definitions(fmt::fmt INTERFACE FMT_HEADER_ONLY=1)
add_library(nlohmann_json::nlohmann_json ALIAS k3_staged_headers)
add_library(CLI11::CLI11 ALIAS k3_staged_headers)
add_library(tomlplusplus::tomlplusplus INTERFACE IMPORTED)
target_link_libraries(tomlplusplus::tomlplusplus INTERFACE k3_staged_headers)
target_compile_definitions(tomlplusplus::tomlplusplus INTERFACE TOML_HEADER_ONLY=1)
set(fmt_FOUND TRUE)
set(tomlplusplus_FOUND TRUE)
set(nlohmann_json_FOUND TRUE)
set(CLI11_FOUND TRUE)

if(K3_BUILD_TESTS)
  set(INSTALL_GTEST OFF CACHE BOOL "" FORCE)
  set(BUILD_GMOCK OFF CACHE BOOL "" FORCE)
  add_subdirectory(/usr/src/googletest "${CMAKE_BINARY_DIR}/googletest" EXCLUDE_FROM_ALL)
  set(GTest_FOUND TRUE)
endif()

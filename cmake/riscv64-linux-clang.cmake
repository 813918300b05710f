# riscv64 Linux cross toolchain: clang-16 with the sysroot and libstdc++ of Debian's
# g++-riscv64-linux-gnu, static links (a board needs nothing installed; dynamic links also fail
# with this sysroot), GNU ld (lld cannot relax Debian's riscv64 crt objects).
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR riscv64)
set(CMAKE_C_COMPILER clang-16)
set(CMAKE_CXX_COMPILER clang++-16)
set(CMAKE_C_COMPILER_TARGET riscv64-linux-gnu)
set(CMAKE_CXX_COMPILER_TARGET riscv64-linux-gnu)
set(CMAKE_SYSROOT /usr/riscv64-linux-gnu)

# The one place the ISA string lives. The K3's own compilers accept richer strings
# (e.g. rv64gcv_zfh_zvfh_zba_zbb); distro clang-16 builds rv64gcv.
set(K3_RISCV_MARCH "rv64gcv" CACHE STRING "-march for riscv64 builds")
set(CMAKE_C_FLAGS_INIT "-march=${K3_RISCV_MARCH}")
set(CMAKE_CXX_FLAGS_INIT "-march=${K3_RISCV_MARCH}")
set(CMAKE_EXE_LINKER_FLAGS_INIT "-static")

# Libraries and headers only from the sysroot and the cross dependency prefix; programs from the host.
set(K3_RISCV_DEPS_PREFIX "${CMAKE_CURRENT_LIST_DIR}/../build/third_party/riscv64" CACHE PATH
    "Install prefix of the riscv64 builds of Google Benchmark (scripts/build-riscv-deps.sh)")
set(CMAKE_FIND_ROOT_PATH ${K3_RISCV_DEPS_PREFIX})
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)

# ctest runs riscv64 binaries through qemu-user; K3_QEMU_VLEN picks the vector length.
set(K3_QEMU_VLEN 1024 CACHE STRING "VLEN of the emulated CPU")
set(CMAKE_CROSSCOMPILING_EMULATOR qemu-riscv64 -cpu rv64,v=true,vlen=${K3_QEMU_VLEN},elen=64,vext_spec=v1.0)

# riscv64 Linux, dynamically linked: the runner deployed to K3 boards. A board's runner must
# dlopen the vendor TCM library (libspine_tcm.so, built against the board's glibc), which a static
# glibc binary cannot be relied on to do. Compiles exactly as riscv64-linux-clang.cmake (clang-16,
# the same -march), but links through Debian's riscv64-linux-gnu-g++ driver: the sysroot's libc.so
# linker script names absolute paths that clang's --sysroot prefixing breaks, while the gcc driver
# has the cross paths built in. Runs under qemu-user with -L /usr/riscv64-linux-gnu (the loader
# and shared libraries of the cross sysroot); on a board it needs glibc >= 2.36 and libstdc++6.
include(${CMAKE_CURRENT_LIST_DIR}/riscv64-linux-clang.cmake)
set(K3_RISCV_DYNAMIC ON)
set(CMAKE_EXE_LINKER_FLAGS_INIT "")
set(K3_RISCV_LINKER riscv64-linux-gnu-g++ CACHE STRING "Link driver of the dynamic riscv64 build")
# No <FLAGS>: they carry clang's --target/--sysroot, which the gcc driver must not see.
set(CMAKE_CXX_LINK_EXECUTABLE
    "${K3_RISCV_LINKER} <LINK_FLAGS> <OBJECTS> -o <TARGET> <LINK_LIBRARIES>")
set(CMAKE_CXX_CREATE_SHARED_MODULE
    "${K3_RISCV_LINKER} -shared <LINK_FLAGS> -o <TARGET> <OBJECTS> <LINK_LIBRARIES>")
set(CMAKE_CXX_CREATE_SHARED_LIBRARY
    "${K3_RISCV_LINKER} -shared <LINK_FLAGS> <SONAME_FLAG><TARGET_SONAME> -o <TARGET> <OBJECTS> <LINK_LIBRARIES>")
set(CMAKE_C_LINK_EXECUTABLE "${K3_RISCV_LINKER} <LINK_FLAGS> <OBJECTS> -o <TARGET> <LINK_LIBRARIES>")
set(K3_RISCV_SYSROOT_LIBS /usr/riscv64-linux-gnu)
set(CMAKE_CROSSCOMPILING_EMULATOR qemu-riscv64 -L ${K3_RISCV_SYSROOT_LIBS}
    -cpu rv64,v=true,vlen=${K3_QEMU_VLEN},elen=64,vext_spec=v1.0)

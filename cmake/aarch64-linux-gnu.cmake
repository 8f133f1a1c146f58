# Cross builds for aarch64 Linux (Graviton, Ampere, Grace) on Debian amd64, with Debian's
# cross compiler (gcc-aarch64-linux-gnu) and its arm64 libraries: the multiarch ones in
# /usr/lib/aarch64-linux-gnu, and those scripts/install-arm64-deps.sh unpacks into
# FSDP_ARM64_ROOT (oneDNN's headers, Open MPI) because they cannot be installed beside
# their amd64 twins. The programs run through qemu-aarch64-static, which looks in
# FSDP_ARM64_ROOT first (-L) for every file they open. scripts/test-arm64.sh builds and
# tests with it:
#   cmake -S . -B build-arm64 -DCMAKE_TOOLCHAIN_FILE=cmake/aarch64-linux-gnu.cmake
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_LIBRARY_ARCHITECTURE aarch64-linux-gnu)
# Only the target's libraries and headers; the build's programs (mpiexec, python3) are the host's.
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)

if(DEFINED ENV{FSDP_ARM64_ROOT})
  set(FSDP_ARM64_ROOT $ENV{FSDP_ARM64_ROOT})
else()
  set(FSDP_ARM64_ROOT /opt/fsdp-arm64)
endif()
set(arm64_lib ${FSDP_ARM64_ROOT}/usr/lib/aarch64-linux-gnu)
if(NOT EXISTS ${arm64_lib}/libmpi.so.40)
  message(FATAL_ERROR "${arm64_lib}/libmpi.so.40 is missing: run scripts/install-arm64-deps.sh")
endif()
# The linker follows the unpacked libraries' own dependencies there.
set(CMAKE_EXE_LINKER_FLAGS_INIT
    "-Wl,-rpath-link,${arm64_lib} -Wl,-rpath-link,${FSDP_ARM64_ROOT}/lib/aarch64-linux-gnu")

# oneDNN: the arm64 headers (their dnnl_config.h is not amd64's), the multiarch library.
set(DNNL_INCLUDE ${FSDP_ARM64_ROOT}/usr/include CACHE PATH "oneDNN's headers (arm64)")
set(DNNL_LIB /usr/lib/aarch64-linux-gnu/libdnnl.so.2 CACHE FILEPATH "oneDNN (arm64)")
# Open MPI: no arm64 mpicc runs here, and the host's pkg-config and mpicc describe the amd64
# library, so FindMPI is given the arm64 library and headers: with MPI_C_LIB_NAMES and
# MPI_C_INCLUDE_PATH set it looks for neither. mpiexec is the host's, the same Open MPI
# 4.1.4, which starts the arm64 ranks through the emulator.
set(MPI_C_LIB_NAMES mpi CACHE STRING "")
set(MPI_mpi_LIBRARY ${arm64_lib}/libmpi.so.40 CACHE FILEPATH "Open MPI (arm64)")
set(MPI_C_HEADER_DIR ${arm64_lib}/openmpi/include CACHE PATH "Open MPI's headers (arm64)")
set(MPI_C_INCLUDE_PATH ${MPI_C_HEADER_DIR} CACHE STRING "")

# The cuda backends would need an aarch64 (sbsa) CUDA toolkit: off, though this host's nvcc is found.
set(FSDP_CUDA OFF CACHE BOOL "Build the cuda device and kernels (needs nvcc)")

set(CMAKE_CROSSCOMPILING_EMULATOR /usr/bin/qemu-aarch64-static -L ${FSDP_ARM64_ROOT})

# REELFS_CUDA: whether the cuda/ module's CUDA runtime part (target reelfs_cuda, the tool
# reelfs-gpu-probe) is built. AUTO: where find_package(CUDAToolkit) finds a toolkit; ON: the same,
# but a missing toolkit stops the configure; OFF: never. CUDA is not a Debian package, so the
# default build works without it; cuda/'s CUDA-free logic (reelfs_cuda_core) is built either way.
#
# Sets REELFS_HAVE_CUDA (ON or OFF) and prints one summary line.
set(REELFS_CUDA AUTO CACHE STRING "cuda/ runtime part (CUDA toolkit): AUTO, ON or OFF")
set_property(CACHE REELFS_CUDA PROPERTY STRINGS AUTO ON OFF)
string(TOUPPER "${REELFS_CUDA}" reelfs_cuda_)
if(NOT reelfs_cuda_ MATCHES "^(AUTO|ON|OFF)$")
  message(FATAL_ERROR "REELFS_CUDA=${REELFS_CUDA}: want AUTO, ON or OFF")
endif()

set(REELFS_HAVE_CUDA OFF)
if(reelfs_cuda_ STREQUAL "OFF")
  message(STATUS "cuda: NOT built: REELFS_CUDA=OFF; reelfs-gpu-probe and its test are left out")
  return()
endif()

# The toolkit's usual home when nvcc is not on PATH (NVIDIA's installers put it there). Only a
# hint: an explicit CUDAToolkit_ROOT, CUDA_PATH or nvcc on PATH wins.
if(NOT DEFINED CUDAToolkit_ROOT AND NOT DEFINED ENV{CUDA_PATH} AND EXISTS /usr/local/cuda)
  find_program(REELFS_NVCC_ON_PATH nvcc NO_CACHE)
  if(NOT REELFS_NVCC_ON_PATH)
    set(CUDAToolkit_ROOT /usr/local/cuda)
  endif()
endif()
find_package(CUDAToolkit QUIET)

# cudart_static only: the driver (libcuda) is reached through cudaGetDriverEntryPointByVersion,
# so the binaries start on machines without a driver and say so (docs/gpu.md).
if(CUDAToolkit_FOUND AND TARGET CUDA::cudart_static)
  set(REELFS_HAVE_CUDA ON)
  message(STATUS "cuda: building with CUDA toolkit ${CUDAToolkit_VERSION} "
                 "(${CUDAToolkit_INCLUDE_DIRS}; cudart_static, no -lcuda)")
elseif(reelfs_cuda_ STREQUAL "ON")
  message(FATAL_ERROR "REELFS_CUDA=ON but no CUDA toolkit with cudart_static was found: set "
                      "CUDAToolkit_ROOT (e.g. /usr/local/cuda) or use REELFS_CUDA=AUTO")
else()
  message(STATUS "cuda: NOT built: no CUDA toolkit found (set CUDAToolkit_ROOT to use one); "
                 "reelfs-gpu-probe and its test are left out")
endif()

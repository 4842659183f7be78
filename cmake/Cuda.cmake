# The optional CUDA backend (kernels/cuda, exec/cuda). Sets TWINSIM_HAVE_CUDA when
# TWINSIM_CUDA is ON and a working nvcc is found; everything else builds without it.
#
# Usual toolkit images install nvcc in /usr/local/cuda/bin without putting it on PATH, so
# that folder is searched too (CUDACXX or -DCMAKE_CUDA_COMPILER still take precedence).
# Architectures default to sm_80 (A100) and sm_90 (H100/H200); override with
# -DCMAKE_CUDA_ARCHITECTURES=... (e.g. "90" alone halves the compile time).
set(TWINSIM_HAVE_CUDA OFF)
if(NOT TWINSIM_CUDA)
  return()
endif()

if(NOT DEFINED CMAKE_CUDA_COMPILER AND NOT DEFINED ENV{CUDACXX})
  find_program(TWINSIM_NVCC nvcc HINTS /usr/local/cuda/bin)
  if(TWINSIM_NVCC)
    set(ENV{CUDACXX} "${TWINSIM_NVCC}")  # read by check_language and enable_language
  endif()
endif()

include(CheckLanguage)
check_language(CUDA)
if(NOT CMAKE_CUDA_COMPILER)
  message(STATUS "twinsim: no CUDA compiler found, building without the CUDA backend")
  return()
endif()

if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
  set(CMAKE_CUDA_ARCHITECTURES "80;90" CACHE STRING "GPU architectures to build for")
endif()
enable_language(CUDA)
# C++17 for device code: CMake 3.25 has no CUDA20 flags for nvcc, and the kernels need nothing newer.
set(CMAKE_CUDA_STANDARD 17)
set(CMAKE_CUDA_STANDARD_REQUIRED ON)
find_package(CUDAToolkit REQUIRED)

# NCCL ships outside the toolkit proper (its own package, or copied into the toolkit's lib).
find_path(TWINSIM_NCCL_INCLUDE nccl.h HINTS ${CUDAToolkit_INCLUDE_DIRS} /usr/local/cuda/include)
find_library(TWINSIM_NCCL_LIBRARY nccl HINTS ${CUDAToolkit_LIBRARY_DIR} /usr/local/cuda/lib64)
if(NOT TWINSIM_NCCL_INCLUDE OR NOT TWINSIM_NCCL_LIBRARY)
  message(FATAL_ERROR "twinsim: nvcc found but NCCL is missing (nccl.h: ${TWINSIM_NCCL_INCLUDE}, "
                      "libnccl: ${TWINSIM_NCCL_LIBRARY}); install NCCL or pass -DTWINSIM_CUDA=OFF")
endif()
add_library(twinsim_nccl INTERFACE)
target_include_directories(twinsim_nccl INTERFACE ${TWINSIM_NCCL_INCLUDE})
target_link_libraries(twinsim_nccl INTERFACE ${TWINSIM_NCCL_LIBRARY} CUDA::cudart)

set(TWINSIM_HAVE_CUDA ON)
message(STATUS "twinsim: CUDA backend on (nvcc ${CMAKE_CUDA_COMPILER_VERSION}, "
               "architectures ${CMAKE_CUDA_ARCHITECTURES}, NCCL ${TWINSIM_NCCL_LIBRARY})")

# Included before project(): the nvcc CMake would take (CMAKE_CUDA_COMPILER, else $CUDACXX, else nvcc
# on PATH or in $CUDA_PATH/bin) must be there and new enough, else one message says what to install.
# 12.1: C++20 device code, and PTX ISA 8.1 for tma-reduce's red.global.{min,max}.v2.bf16 (the
# minimum scripts/setup.sh checks on a whole machine).
set(TKPROBE_MIN_NVCC 12.1)
if(CMAKE_CUDA_COMPILER)
  set(tkprobe_nvcc "${CMAKE_CUDA_COMPILER}")
elseif(DEFINED ENV{CUDACXX})
  set(tkprobe_nvcc "$ENV{CUDACXX}")
else()
  find_program(tkprobe_nvcc nvcc HINTS "$ENV{CUDA_PATH}/bin" NO_CACHE)
endif()
set(tkprobe_get_nvcc "install the CUDA Toolkit ${TKPROBE_MIN_NVCC} or newer and put its nvcc on PATH, or name \
it with CUDACXX=/path/to/nvcc or -DCMAKE_CUDA_COMPILER=/path/to/nvcc")
if(NOT tkprobe_nvcc)
  message(FATAL_ERROR "nvcc not found: ${tkprobe_get_nvcc}")
endif()
execute_process(COMMAND "${tkprobe_nvcc}" --version OUTPUT_VARIABLE tkprobe_nvcc_says ERROR_QUIET)
string(REGEX MATCH "release ([0-9]+\\.[0-9]+)" tkprobe_nvcc_release "${tkprobe_nvcc_says}")
if(NOT tkprobe_nvcc_release)
  message(FATAL_ERROR "${tkprobe_nvcc} --version names no CUDA release: ${tkprobe_get_nvcc}")
endif()
if(CMAKE_MATCH_1 VERSION_LESS TKPROBE_MIN_NVCC)
  message(FATAL_ERROR "nvcc ${CMAKE_MATCH_1} (${tkprobe_nvcc}) is older than ${TKPROBE_MIN_NVCC}: ${tkprobe_get_nvcc}")
endif()
set(CMAKE_CUDA_COMPILER "${tkprobe_nvcc}" CACHE FILEPATH "CUDA compiler")

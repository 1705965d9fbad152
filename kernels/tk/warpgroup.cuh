#pragma once
// The tile DSL at warpgroup scope: wgmma on shared tiles (A from shared memory or registers),
// TMA tile loads and stores, the producer/consumer ring and register reallocation. Host code
// makes the tensor maps with tk/types/gl.cuh.
#include "tk/ops/warpgroup/memory.cuh"
#include "tk/ops/warpgroup/mma.cuh"
#include "tk/ops/warpgroup/tma.cuh"
#include "tk/ops/warp/fp8.cuh"
#include "tk/sync/pipeline.cuh"
#include "tk/sync/turns.cuh"
#include "tk/warp.cuh"

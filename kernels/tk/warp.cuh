#pragma once
// The tile DSL at warp scope: register tiles and vectors and the operations on them.
#include "tk/ops/warp/elementwise.cuh"
#include "tk/ops/warp/fused.cuh"
#include "tk/ops/warp/masks.cuh"
#include "tk/ops/warp/memory.cuh"
#include "tk/ops/warp/mma.cuh"
#include "tk/ops/warp/reductions.cuh"
#include "tk/types/rt.cuh"
#include "tk/types/rv.cuh"
#include "tk/types/st.cuh"

#pragma once
// The tile DSL at the scope of a group of warps: shared tiles loaded from global memory with
// cp.async (no TMA needed: sm_80 and newer), with the warp-scope operations on them.
#include "tk/ops/group/memory.cuh"
#include "tk/warp.cuh"

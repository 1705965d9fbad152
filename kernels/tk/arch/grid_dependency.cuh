#pragma once
// Programmatic dependent launch (PTX ISA, "griddepcontrol"; sm_90 and newer): a kernel launched
// after another with cudaLaunchAttributeProgrammaticStreamSerialization may start before that one
// has ended, so its launch and block scheduling hide under the first one's tail. It must wait for
// the first grid (wait_for_prior_grid: done, its writes visible) before it reads what that wrote;
// the first lets it start early (allow_dependent_grid), else it starts as the first's blocks exit.
// Before sm_90 both are no-ops and the launch keeps stream order.
namespace tk::arch {

__device__ __forceinline__ void allow_dependent_grid() {
#if __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}

__device__ __forceinline__ void wait_for_prior_grid() {
#if __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}

}  // namespace tk::arch

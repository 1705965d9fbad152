// The same wgmma, its accumulator left alone until the wait: ptxas keeps it asynchronous.
__global__ void clean(float* out, unsigned long long a, unsigned long long b) {
  float d0 = 0, d1 = 0, d2 = 0, d3 = 0;
  asm volatile("wgmma.fence.sync.aligned;");
  asm volatile("wgmma.mma_async.sync.aligned.m64n8k16.f32.bf16.bf16 {%0, %1, %2, %3}, %4, %5, 1, 1, 1, 0, 0;"
               : "+f"(d0), "+f"(d1), "+f"(d2), "+f"(d3) : "l"(a), "l"(b));
  asm volatile("wgmma.commit_group.sync.aligned;");
  asm volatile("wgmma.wait_group.sync.aligned 0;");
  out[threadIdx.x] = d0 + d1 + d2 + d3;
}

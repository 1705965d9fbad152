#include "probes/l2/l2_kernels.hpp"
#include "src/errors.hpp"
#include "src/kernel_clock.cuh"

namespace tkprobe::l2 {
namespace {

// Cached in L2 only (.cg: L1 is bypassed), volatile so that ptxas keeps every load.
__device__ __forceinline__ std::uint32_t load_l2(const std::uint32_t* p) {
  std::uint32_t v;
  asm volatile("ld.global.cg.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  return v;
}

__device__ __forceinline__ uint4 load_l2_16(const std::uint32_t* p) {
  uint4 v;
  asm volatile("ld.global.cg.v4.u32 {%0, %1, %2, %3}, [%4];" : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(p)
               : "memory");
  return v;
}

// `loads` dependent loads of one line: each value (0) is the next load's offset.
template <int Loads>
__device__ __forceinline__ std::uint32_t chase_line(const std::uint32_t* line, std::uint32_t v) {
#pragma unroll
  for (int i = 0; i < Loads; ++i) v = load_l2(line + v);
  return v;
}

__global__ void map_kernel(const std::uint32_t* buffer, int lines, MapOut out) {
  if (threadIdx.x != 0) return;
  out.smid[blockIdx.x] = sm_id();
  const ClockStamp begin = clock_stamp();
  std::uint32_t v = 0;
  for (int l = 0; l < lines; ++l) {
    const std::uint32_t* line = buffer + std::size_t(l) * kLineWords;
    v = load_l2(line + v);  // brings the line into L2, untimed
    const long long t0 = clock64();
    v = chase_line<kShortChase>(line, v);
    const long long t1 = clock64();
    v = chase_line<kLongChase>(line, v);
    const long long t2 = clock64();
    const long long extra = (t2 - t1) - (t1 - t0);
    out.cycles[std::size_t(blockIdx.x) * lines + l] = std::uint32_t(extra > 0 ? extra : 0) + v;  // v is 0
  }
  out.clock[blockIdx.x] = ClockWindow{begin, clock_stamp()};
}

__global__ void stream_kernel(StreamArgs a) {
  const std::uint32_t smid = sm_id();
  const int group = smid < std::uint32_t(a.smids) ? a.group_of_smid[smid] : 0;
  const std::uint32_t* list = a.lists + std::size_t(group) * a.count;
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, warps = blockDim.x / 32;
  const int column = lane % (kLineBytes / 16), first = warp * kLinesPerWarpLoad + lane / (kLineBytes / 16);
  uint4 acc = make_uint4(0, 0, 0, 0);
  for (int pass = 0; pass < a.passes; ++pass) {
    for (int j = first; j < a.count; j += warps * kLinesPerWarpLoad) {
      const uint4 x = load_l2_16(a.buffer + std::size_t(list[j]) * kLineWords + column * 4);
      acc.x ^= x.x;
      acc.y ^= x.y;
      acc.z ^= x.z;
      acc.w ^= x.w;
    }
  }
  if ((acc.x ^ acc.y ^ acc.z ^ acc.w) == 0xdeadbeefu) a.sink[threadIdx.x] = acc.x;
}

}  // namespace

void prepare_map(int smem_bytes) {
  TK_CUDA(cudaFuncSetAttribute(map_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem_bytes));
}

void launch_map(const std::uint32_t* buffer, int lines, int blocks, int smem_bytes, const MapOut& out,
                cudaStream_t stream) {
  map_kernel<<<blocks, 32, smem_bytes, stream>>>(buffer, lines, out);
  TK_CUDA(cudaGetLastError());
}

void launch_stream(const StreamArgs& a, int sms, cudaStream_t stream) {
  stream_kernel<<<sms * kStreamBlocksPerSm, kStreamThreads, 0, stream>>>(a);
}

}  // namespace tkprobe::l2

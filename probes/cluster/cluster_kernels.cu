#include "probes/cluster/cluster_kernels.hpp"

namespace tkprobe::cluster {
namespace {

__device__ __forceinline__ std::uint32_t cluster_rank() {
  std::uint32_t r;
  asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
  return r;
}
__device__ __forceinline__ std::uint32_t cluster_size() {
  std::uint32_t n;
  asm volatile("mov.u32 %0, %%cluster_nctarank;" : "=r"(n));
  return n;
}

// The shared::cluster address of the word at `cta_address` (this block's shared window) in block
// `rank` of the cluster (PTX ISA 9.7.9.18 "mapa").
__device__ __forceinline__ std::uint32_t map_to_rank(std::uint32_t cta_address, std::uint32_t rank) {
  std::uint32_t out;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(out) : "r"(cta_address), "r"(rank));
  return out;
}

// Every thread of every block of the cluster; not .aligned, since block 0's thread 0 comes late from
// its chase (PTX ISA 9.7.13.4 "barrier.cluster"): release and acquire order the blocks' shared writes.
__device__ __forceinline__ void cluster_sync() {
  asm volatile("barrier.cluster.arrive.release;\n\tbarrier.cluster.wait.acquire;" ::: "memory");
}

__device__ __forceinline__ std::uint32_t load_cluster(std::uint32_t address) {
  std::uint32_t v;
  asm volatile("ld.shared::cluster.u32 %0, [%1];" : "=r"(v) : "r"(address) : "memory");
  return v;
}

__device__ __forceinline__ uint4 load_cluster_16(std::uint32_t address) {
  uint4 v;
  asm volatile("ld.shared::cluster.v4.u32 {%0, %1, %2, %3}, [%4];"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
               : "r"(address)
               : "memory");
  return v;
}

// The chase's loop: one shape for every length, so cycles grow linearly with the loads.
__device__ __forceinline__ std::uint32_t chase_loads(std::uint32_t at, int loads) {
#pragma unroll 1
  for (int i = 0; i < loads; i += kChaseUnroll) {
#pragma unroll
    for (int u = 0; u < kChaseUnroll; ++u) at = load_cluster(at);
  }
  return at;
}

__global__ void chase_kernel(Chase c, ChaseOut out) {
  extern __shared__ std::uint32_t chain[];
  const auto base = static_cast<std::uint32_t>(__cvta_generic_to_shared(chain));
  const std::uint32_t rank = cluster_rank();
  // Each block lays the chain out in its own memory, every word the cluster address of the next.
  for (int i = threadIdx.x; i < c.words; i += blockDim.x) chain[i] = map_to_rank(base + 4u * c.next[i], rank);
  cluster_sync();
  if (rank == 0 && threadIdx.x == 0) {
    std::uint32_t at = map_to_rank(base, static_cast<std::uint32_t>(c.target));
    at = chase_loads(at, kChaseUnroll);  // warm-up: the loop's code into the i-cache
    const ClockStamp begin = clock_stamp();
    at = chase_loads(at, c.loads);
    const ClockStamp end = clock_stamp();
    *out.cycles = end.cycles - begin.cycles;
    *out.clock = ClockWindow{begin, end};
    *out.sink = at;
  }
  cluster_sync();  // the target's memory stays until the chase is done
}

__global__ void stream_kernel(Stream s, StreamOut out) {
  extern __shared__ uint4 buffer[];
  constexpr int kVectors = kStreamBytes / 16;
  for (int i = threadIdx.x; i < kVectors; i += blockDim.x) buffer[i] = make_uint4(i, i ^ 1, i ^ 2, blockIdx.x);
  const auto base = static_cast<std::uint32_t>(__cvta_generic_to_shared(buffer));
  const std::uint32_t source = map_to_rank(base, (cluster_rank() + s.target_offset) % cluster_size());
  cluster_sync();
  __syncthreads();  // the block's warps start together, inside the window
  const ClockStamp begin = clock_stamp();
  uint4 acc = make_uint4(0, 0, 0, 0);
  for (int pass = 0; pass < s.passes; ++pass) {
#pragma unroll 1
    for (int i = threadIdx.x; i < kVectors; i += kThreads * kStreamUnroll) {
#pragma unroll
      for (int u = 0; u < kStreamUnroll; ++u) {
        const uint4 v = load_cluster_16(source + 16u * (i + u * kThreads));
        acc.x ^= v.x;
        acc.y ^= v.y;
        acc.z ^= v.z;
        acc.w ^= v.w;
      }
    }
  }
  __syncthreads();  // the window closes after the block's last load
  const ClockStamp end = clock_stamp();
  if (blockIdx.x == 0 && threadIdx.x == 0) *out.clock = ClockWindow{begin, end};
  if ((acc.x ^ acc.y ^ acc.z ^ acc.w) == 0xdeadbeefu) out.sink[threadIdx.x] = acc.x;  // a use for every load
  cluster_sync();  // every reader is done before any block's memory goes
}

// A launch of `blocks` blocks in clusters of `cluster_size`, with `smem` bytes of shared memory each:
// a configuration only, so that a timed launch does no host-side work but the launch itself.
cudaLaunchConfig_t config_for(int cluster_size, int blocks, int smem, cudaLaunchAttribute& attribute,
                              cudaStream_t stream) {
  attribute.id = cudaLaunchAttributeClusterDimension;
  attribute.val.clusterDim.x = static_cast<unsigned>(cluster_size);
  attribute.val.clusterDim.y = 1;
  attribute.val.clusterDim.z = 1;
  cudaLaunchConfig_t config{};
  config.gridDim = dim3(static_cast<unsigned>(blocks));
  config.blockDim = dim3(kThreads);
  config.dynamicSmemBytes = static_cast<std::size_t>(smem);
  config.stream = stream;
  config.attrs = &attribute;
  config.numAttrs = 1;
  return config;
}

cudaError_t allow(const void* kernel, int cluster_size, int smem) {
  cudaError_t e = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
  if (e == cudaSuccess && cluster_size > kPortableMax) {
    e = cudaFuncSetAttribute(kernel, cudaFuncAttributeNonPortableClusterSizeAllowed, 1);
  }
  return e;
}

}  // namespace

cudaError_t prepare(int cluster_size, int chase_words) {
  const cudaError_t e = allow(reinterpret_cast<const void*>(chase_kernel), cluster_size, chase_words * 4);
  return e != cudaSuccess ? e : allow(reinterpret_cast<const void*>(stream_kernel), cluster_size, kStreamBytes);
}

cudaError_t launch_chase(int cluster_size, const Chase& chase, const ChaseOut& out, cudaStream_t stream) {
  cudaLaunchAttribute attribute;
  const cudaLaunchConfig_t config = config_for(cluster_size, cluster_size, chase.words * 4, attribute, stream);
  return cudaLaunchKernelEx(&config, chase_kernel, chase, out);
}

cudaError_t launch_stream(int cluster_size, int clusters, const Stream& s, const StreamOut& out, cudaStream_t stream) {
  cudaLaunchAttribute attribute;
  const cudaLaunchConfig_t config = config_for(cluster_size, cluster_size * clusters, kStreamBytes, attribute, stream);
  return cudaLaunchKernelEx(&config, stream_kernel, s, out);
}

cudaError_t max_active_clusters(int cluster_size, int* clusters) {
  cudaLaunchAttribute attribute;
  const cudaLaunchConfig_t config = config_for(cluster_size, cluster_size, kStreamBytes, attribute, nullptr);
  return cudaOccupancyMaxActiveClusters(clusters, reinterpret_cast<const void*>(stream_kernel), &config);
}

}  // namespace tkprobe::cluster

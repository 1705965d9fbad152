#include "probes/cluster/cluster_kernels.hpp"
#include "tk/arch/mbarrier.cuh"
#include "tk/arch/shared_memory.cuh"
#include "tk/arch/tma.cuh"

namespace tkprobe::cluster {
namespace {

using namespace tk::arch;

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
// A thread alternates arrive and wait; the wait returns once every thread of the cluster has arrived.
__device__ __forceinline__ void cluster_arrive() { asm volatile("barrier.cluster.arrive.release;" ::: "memory"); }
__device__ __forceinline__ void cluster_wait() { asm volatile("barrier.cluster.wait.acquire;" ::: "memory"); }
__device__ __forceinline__ void cluster_sync() {
  cluster_arrive();
  cluster_wait();
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

// The sum mod 2^32 of a landed tile's 32-bit words, this thread's share (consecutive threads read
// consecutive 16-byte chunks). Where the swizzle put a chunk does not change it; a tile that had not
// landed, or an earlier tile still in the stage, does.
__device__ __forceinline__ std::uint32_t sum_tile(const std::uint8_t* tile) {
  const uint4* chunks = reinterpret_cast<const uint4*>(tile);
  std::uint32_t sum = 0;
#pragma unroll
  for (int c = threadIdx.x; c < kTileBytes / int(sizeof(uint4)); c += kThreads) {
    const uint4 v = chunks[c];
    sum += v.x + v.y + v.z + v.w;
  }
  return sum;
}

// Every block of a cluster receives the cluster's tiles through a ring of kRingStages one-tile stages,
// each with a `full` mbarrier. Round r (kTilesPerRound tiles) fills half r % 2 of the ring, so one
// round lands while the one before it is read. Each block's thread 0 arms its own barriers with the
// round's bytes, and the issuer copies: rank 0 one multicast per tile to the whole cluster (which
// completes the bytes on the barrier at the same offset in every block), or every block its own copy.
//
// Round r + 2 refills round r's half, and with multicast the copy comes from rank 0 into every block,
// so every block must have read round r first: each thread arrives on the cluster barrier once it has
// read round r, and waits on it at the next trip, before round r + 2 is issued. The same wait keeps a
// multicast's bytes in the phase they belong to: every block saw that half's previous phase complete
// before arriving, so bytes that land before the block arms the barrier only leave the phase's
// transaction count below zero until the arming (PTX ISA 9.7.13.15 "mbarrier": the object's tx-count
// may be negative; the phase cannot complete without the block's arrival). The cost: the cluster
// advances a round at a time, at its slowest block's pace, and pays the barrier's round trip once a
// round, hidden only while the other half is in flight. Both deliveries pay it: the comparison is fair.
__global__ void __launch_bounds__(kThreads) multicast_kernel(const __grid_constant__ Multicast m, MulticastOut out) {
  extern __shared__ std::uint8_t smem_raw[];
  __shared__ alignas(8) std::uint64_t full[kRingStages];
  const std::uint32_t raw = shared_address(smem_raw);
  // The same offset in every block of the kernel: a multicast lands at one offset in all of them.
  std::uint8_t* ring = smem_raw + (kTileAlign - raw % kTileAlign) % kTileAlign;
  const std::uint32_t size = cluster_size();
  const int cluster = blockIdx.x / size, clusters = gridDim.x / size;
  const bool issuer = threadIdx.x == 0 && (m.delivery == Delivery::each_block || cluster_rank() == 0);
  const auto stage = [](int r, int i) { return r % 2 * kTilesPerRound + i; };
  const auto bar = [&](int s) { return shared_address(&full[s]); };
  if (threadIdx.x == 0) {
    for (int s = 0; s < kRingStages; ++s) mbarrier_init(bar(s), 1);  // thread 0's arrive.expect_tx
    fence_mbarrier_init();
  }
  cluster_sync();  // every block's barriers exist before rank 0's first multicast signals them
  const auto load_round = [&](int r) {
    if (threadIdx.x != 0 || r >= m.rounds) return;
    for (int i = 0; i < kTilesPerRound; ++i) {
      const int s = stage(r, i), tile = (cluster + (r * kTilesPerRound + i) * clusters) % m.tiles;
      mbarrier_arrive_expect_tx(bar(s), kTileBytes);
      if (!issuer) continue;
      const std::uint32_t dst = shared_address(ring + s * kTileBytes);
      if (m.delivery == Delivery::multicast) {
        tma_load_2d_multicast(dst, m.map, 0, tile * kTileRows, bar(s), std::uint16_t((1u << size) - 1));
      } else {
        tma_load_2d(dst, m.map, 0, tile * kTileRows, bar(s));
      }
    }
  };
  const ClockStamp begin = clock_stamp();
  std::uint32_t sum = 0;
  load_round(0);
  for (int r = 0; r < m.rounds; ++r) {
    if (r > 0) cluster_wait();  // every thread of the cluster has read round r - 1: its half is free
    load_round(r + 1);
    for (int i = 0; i < kTilesPerRound; ++i) {
      const int s = stage(r, i);
      mbarrier_wait(bar(s), r / 2 % 2);  // the half's (r / 2)-th use
      if (m.check) sum += sum_tile(ring + s * kTileBytes);
    }
    cluster_arrive();  // this thread is done with round r
  }
  cluster_wait();  // every block has every tile: no copy still writes into, or signals, a block that left
  const ClockStamp end = clock_stamp();
  if (blockIdx.x == 0 && threadIdx.x == 0) *out.clock = ClockWindow{begin, end};
  if (m.check) {
    sum = __reduce_add_sync(0xffffffffu, sum);
    if (threadIdx.x % warpSize == 0) atomicAdd(out.sums + blockIdx.x, sum);
  }
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
  cudaError_t e = allow(reinterpret_cast<const void*>(chase_kernel), cluster_size, chase_words * 4);
  if (e == cudaSuccess) e = allow(reinterpret_cast<const void*>(stream_kernel), cluster_size, kStreamBytes);
  return e != cudaSuccess ? e : allow(reinterpret_cast<const void*>(multicast_kernel), cluster_size, kMulticastSmem);
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

cudaError_t launch_multicast(int cluster_size, int clusters, const Multicast& m, const MulticastOut& out,
                             cudaStream_t stream) {
  cudaLaunchAttribute attribute;
  const cudaLaunchConfig_t config =
      config_for(cluster_size, cluster_size * clusters, kMulticastSmem, attribute, stream);
  return cudaLaunchKernelEx(&config, multicast_kernel, m, out);
}

cudaError_t max_active_clusters(int cluster_size, int* clusters) {
  cudaLaunchAttribute attribute;
  const cudaLaunchConfig_t config = config_for(cluster_size, cluster_size, kStreamBytes, attribute, nullptr);
  return cudaOccupancyMaxActiveClusters(clusters, reinterpret_cast<const void*>(stream_kernel), &config);
}

cudaError_t max_active_multicast_clusters(int cluster_size, int* clusters) {
  cudaLaunchAttribute attribute;
  const cudaLaunchConfig_t config = config_for(cluster_size, cluster_size, kMulticastSmem, attribute, nullptr);
  return cudaOccupancyMaxActiveClusters(clusters, reinterpret_cast<const void*>(multicast_kernel), &config);
}

}  // namespace tkprobe::cluster

#pragma once
// Shared tiles loaded by a group of warps without the TMA (sm_80 and newer): each thread copies
// 16-byte chunks of the tile's rows with cp.async (tk/arch/cp_async.cuh) straight to where the
// tile's swizzled layout keeps them (st::offset), so ldmatrix reads the tile exactly as it reads
// one the TMA wrote. Rows at and beyond `valid_rows` (past the end of a tensor whose length is
// not a multiple of the tile's) are zeroed with plain shared stores and read nothing from global
// memory: zeros rather than stale data, because 0 * NaN is NaN even where a mask follows. An e4m3
// tile becomes f16 by the group's copy, for ldmatrix, which cannot convert.
//
//   using block = tk::group<4>;                        // a block of 4 warps
//   block::load_async(k_tile, k + row0 * d, d, seq - row0);
//   block::commit();
//   block::wait<0>();                                  // this thread's copies have landed,
//   __syncthreads();                                   // and now every thread's
//
// The group is `Warps` consecutive warps of the block. Waiting makes a thread's own copies
// visible to it; the caller synchronises the group (__syncwarp, __syncthreads, a named barrier)
// before it reads the others', as for every shared-tile write in the DSL. The barrier is the
// caller's because its id must be an immediate: a barrier named by a register makes ptxas
// reserve all 16 of them, which costs occupancy.
#include <cuda_fp16.h>
#include <cuda_fp8.h>

#include <cstdint>

#include "tk/arch/cp_async.cuh"
#include "tk/arch/fp8.cuh"
#include "tk/arch/shared_memory.cuh"
#include "tk/types/st.cuh"

namespace tk {

inline constexpr int kWarpThreads = 32;

template <int Warps>
struct group {
  static constexpr int threads = Warps * kWarpThreads;

  __device__ static int thread() { return threadIdx.x % threads; }  // within the group

  // Starts copying the R x C tile at `src` (row-major, `ld` elements between rows; `src` and
  // the row pitch 16-byte aligned) into `dst`; rows >= valid_rows become zeros instead. Every
  // thread of the group calls it; the copies join each thread's current cp.async group.
  template <class T, int R, int C>
  __device__ static void load_async(st<T, R, C>& dst, const T* src, int ld, int valid_rows) {
    load_rows_async(
        dst, [=](int row) { return src + row * ld; }, valid_rows);
  }

  // The same for rows that lie anywhere (a gather, such as a paged cache's): row r of the tile
  // from row_source(r), a 16-byte-aligned pointer to its first element, or nullptr for a row of
  // zeros (as are rows >= valid_rows, whose source is never asked for).
  template <class T, int R, int C, class RowSource>
  __device__ static void load_rows_async(st<T, R, C>& dst, RowSource row_source, int valid_rows) {
    using Tile = st<T, R, C>;
    constexpr int chunk_elements = arch::kCpAsyncBytes / int(sizeof(T));
    constexpr int chunks_per_row = C / chunk_elements, chunks = R * chunks_per_row;
    static_assert(C % chunk_elements == 0, "group::load_async: a tile row must be whole 16-byte chunks");
    const std::uint32_t base = arch::shared_address(dst.data);
#pragma unroll
    for (int i = 0; i < (chunks + threads - 1) / threads; ++i) {
      const int chunk = thread() + i * threads;  // consecutive threads, consecutive chunks: coalesced
      if (chunks % threads != 0 && chunk >= chunks) break;
      const int row = chunk / chunks_per_row, col = chunk % chunks_per_row * chunk_elements;
      const std::uint32_t to = base + Tile::offset(row, col);
      const T* from = row < valid_rows ? row_source(row) : nullptr;
      if (from != nullptr) {
        arch::cp_async_16(to, from + col);
      } else {
        arch::store_zero_16(to);
      }
    }
  }

  // The same gather into N tiles at once, for sources that share their rows (K and V, each cut
  // into head-dim slices): tile t's row r from sources[t] + row_offset(r) elements, or zeros where
  // that is negative, so each row is found once for all N tiles rather than once per tile.
  template <class T, int R, int C, int N, class RowOffset>
  __device__ static void load_rows_async(st<T, R, C>* const (&dst)[N], const T* const (&sources)[N],
                                         RowOffset row_offset, int valid_rows) {
    using Tile = st<T, R, C>;
    constexpr int chunk_elements = arch::kCpAsyncBytes / int(sizeof(T));
    constexpr int chunks_per_row = C / chunk_elements, chunks = R * chunks_per_row;
    static_assert(C % chunk_elements == 0, "group::load_rows_async: a tile row must be whole 16-byte chunks");
#pragma unroll
    for (int i = 0; i < (chunks + threads - 1) / threads; ++i) {
      const int chunk = thread() + i * threads;
      if (chunks % threads != 0 && chunk >= chunks) break;
      const int row = chunk / chunks_per_row, col = chunk % chunks_per_row * chunk_elements;
      const long long at = row < valid_rows ? row_offset(row) : -1;
#pragma unroll
      for (int t = 0; t < N; ++t) {
        const std::uint32_t to = arch::shared_address(dst[t]->data) + Tile::offset(row, col);
        if (at >= 0) {
          arch::cp_async_16(to, sources[t] + at + col);
        } else {
          arch::store_zero_16(to);
        }
      }
    }
  }

  // Where this thread's 16-byte chunks of an R x C e4m3 tile lie in it, and the two halves each
  // becomes in its f16 copy: the same for every tile of these types, so a loop that converts a tile
  // a pass builds the plan once, before it, rather than swizzling the offsets anew each pass (about
  // 25 integer instructions). Where each pass of the group over the tile moves both tiles on by
  // whole swizzle repeats (the decode's 64 x 64 tiles: 32 rows a pass), a thread's later chunks lie
  // a constant stride past its first, and the plan keeps the first's three offsets only. Build it
  // before the loop and before the loads the loop reuses: the compiler takes its asm (below) to
  // write memory, so it reads again after it what it had read before.
  template <int R, int C>
  struct copy_plan {
    using From = st<__nv_fp8_e4m3, R, C>;
    using To = st<__half, R, C>;
    static constexpr int chunk_elements = arch::kCpAsyncBytes / int(sizeof(__nv_fp8_e4m3));  // one uint4 load
    static constexpr int half_chunk = chunk_elements / 2;  // the f16 values of one uint4 store
    static constexpr int chunks_per_row = C / chunk_elements, chunks = R * chunks_per_row;
    static constexpr int per_thread = (chunks + threads - 1) / threads;
    static_assert(C % chunk_elements == 0, "group::copy_plan: a tile row must be whole 16-byte chunks of e4m3");

    // Offsets (in elements) of chunk `chunk` in the e4m3 tile, and of its half `h` (8 values) in
    // the f16 tile: the swizzle may put the second half before the first.
    static constexpr std::uint32_t from_of(int chunk) {
      return From::offset(chunk / chunks_per_row, chunk % chunks_per_row * chunk_elements);
    }
    static constexpr std::uint32_t to_of(int chunk, int h) {
      return To::offset(chunk / chunks_per_row, chunk % chunks_per_row * chunk_elements + h * half_chunk);
    }
    static constexpr std::uint32_t from_stride = per_thread > 1 ? from_of(threads) - from_of(0) : 0;
    static constexpr std::uint32_t to_stride = per_thread > 1 ? to_of(threads, 0) - to_of(0, 0) : 0;
    // Whether every chunk lies a pass's stride past the one a pass before, in both tiles.
    static constexpr bool is_strided() {
      for (int chunk = threads; chunk < chunks; ++chunk) {
        if (from_of(chunk) != from_of(chunk - threads) + from_stride) return false;
        for (int h = 0; h < 2; ++h)
          if (to_of(chunk, h) != to_of(chunk - threads, h) + to_stride) return false;
      }
      return true;
    }
    static constexpr bool strided = is_strided();
    static constexpr int kept = strided ? 1 : per_thread;  // chunks whose offsets the plan holds

    std::uint32_t from[kept], to[kept][2];

    // Whether this thread has an i-th chunk: all do where the chunks divide among the group.
    __device__ static bool has(int i) { return chunks % threads == 0 || thread() + i * threads < chunks; }
    __device__ std::uint32_t from_offset(int i) const { return strided ? from[0] + i * from_stride : from[i]; }
    __device__ std::uint32_t to_offset(int i, int h) const { return strided ? to[0][h] + i * to_stride : to[i][h]; }

    __device__ copy_plan() {
#pragma unroll
      for (int i = 0; i < kept; ++i) {
        const int chunk = thread() + i * threads;  // consecutive threads, consecutive chunks
        from[i] = from_of(chunk);
        to[i][0] = to_of(chunk, 0);
        to[i][1] = to_of(chunk, 1);
        // Opaque to the compiler, which would otherwise rebuild them from tid.x where they are
        // used (every pass of the caller's loop), judging that cheaper than keeping the registers.
        asm("" : "+r"(from[i]), "+r"(to[i][0]), "+r"(to[i][1]));
      }
    }
  };

  // dst = src, an e4m3 tile as f16 (exact: every e4m3 value is an f16), so warps read it with
  // ldmatrix as any 16-bit tile: each thread converts 16 values (one 16-byte chunk) at a time into
  // two chunks of dst, where `plan` says. The caller syncs the group before (src landed) and after
  // (dst written).
  template <int R, int C>
  __device__ static void copy(st<__half, R, C>& dst, const st<__nv_fp8_e4m3, R, C>& src, const copy_plan<R, C>& plan) {
    using Plan = copy_plan<R, C>;
#pragma unroll
    for (int i = 0; i < Plan::per_thread; ++i) {
      if (!Plan::has(i)) break;
      const uint4 bytes = *reinterpret_cast<const uint4*>(src.data + plan.from_offset(i));
      const std::uint32_t words[4] = {bytes.x, bytes.y, bytes.z, bytes.w};
      __half2 halves[8];
#pragma unroll
      for (int w = 0; w < 4; ++w) {
        halves[2 * w] = arch::half2_of_e4m3x2(std::uint16_t(words[w]));
        halves[2 * w + 1] = arch::half2_of_e4m3x2(std::uint16_t(words[w] >> 16));
      }
      *reinterpret_cast<uint4*>(dst.data + plan.to_offset(i, 0)) = *reinterpret_cast<const uint4*>(&halves[0]);
      *reinterpret_cast<uint4*>(dst.data + plan.to_offset(i, 1)) = *reinterpret_cast<const uint4*>(&halves[4]);
    }
  }

  // Closes each thread's group of copies started since the last commit.
  __device__ static void commit() { arch::cp_async_commit(); }

  // Waits until at most `Pending` of this thread's committed copy groups are in flight.
  template <int Pending>
  __device__ static void wait() {
    arch::cp_async_wait<Pending>();
  }
};

}  // namespace tk

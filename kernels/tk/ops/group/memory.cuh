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

  // dst = src, an e4m3 tile as f16 (exact: every e4m3 value is an f16), so warps read it with
  // ldmatrix as any 16-bit tile: each thread converts 16 values (one 16-byte chunk) at a time into
  // two chunks of dst. The caller syncs the group before (src landed) and after (dst written).
  template <int R, int C>
  __device__ static void copy(st<__half, R, C>& dst, const st<__nv_fp8_e4m3, R, C>& src) {
    using From = st<__nv_fp8_e4m3, R, C>;
    using To = st<__half, R, C>;
    constexpr int chunk_elements = arch::kCpAsyncBytes / int(sizeof(__nv_fp8_e4m3)), chunks = R * C / chunk_elements;
    static_assert(C % chunk_elements == 0, "group::copy: a tile row must be whole 16-byte chunks of e4m3");
#pragma unroll
    for (int i = 0; i < (chunks + threads - 1) / threads; ++i) {
      const int chunk = thread() + i * threads;
      if (chunks % threads != 0 && chunk >= chunks) break;
      const int row = chunk / (C / chunk_elements), col = chunk % (C / chunk_elements) * chunk_elements;
      const uint4 bytes = *reinterpret_cast<const uint4*>(src.data + From::offset(row, col));
      const std::uint32_t words[4] = {bytes.x, bytes.y, bytes.z, bytes.w};
      __half2 halves[8];
#pragma unroll
      for (int w = 0; w < 4; ++w) {
        halves[2 * w] = arch::half2_of_e4m3x2(std::uint16_t(words[w]));
        halves[2 * w + 1] = arch::half2_of_e4m3x2(std::uint16_t(words[w] >> 16));
      }
      *reinterpret_cast<uint4*>(dst.data + To::offset(row, col)) = *reinterpret_cast<const uint4*>(&halves[0]);
      *reinterpret_cast<uint4*>(dst.data + To::offset(row, col + chunk_elements / 2)) =
          *reinterpret_cast<const uint4*>(&halves[4]);
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

#pragma once
// Shared tiles loaded by a group of warps without the TMA (sm_80 and newer): each thread copies
// 16-byte chunks of the tile's rows with cp.async (tk/arch/cp_async.cuh) straight to where the
// tile's swizzled layout keeps them (st::offset), so ldmatrix reads the tile exactly as it reads
// one the TMA wrote. Rows at and beyond `valid_rows` (past the end of a tensor whose length is
// not a multiple of the tile's) are zeroed with plain shared stores and read nothing from global
// memory: zeros rather than stale data, because 0 * NaN is NaN even where a mask follows.
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
#include <cstdint>

#include "tk/arch/cp_async.cuh"
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

  // Closes each thread's group of copies started since the last commit.
  __device__ static void commit() { arch::cp_async_commit(); }

  // Waits until at most `Pending` of this thread's committed copy groups are in flight.
  template <int Pending>
  __device__ static void wait() {
    arch::cp_async_wait<Pending>();
  }
};

}  // namespace tk

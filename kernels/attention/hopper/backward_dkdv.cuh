#pragma once
// The backward's dK and dV (backward_config.cuh): a block per work item of 128 keys of one
// (batch, key/value head). A producer warpgroup loads the item's K and V once and streams the
// query steps (Q, dO, and the scratch's lse2 and D for KvConfig::step queries) through a ring;
// two consumer warpgroups of 64 keys each work in the transposed frame, keys down and queries
// across, so that P^T and dS^T come out of the tensor cores as the A operands of dV += P^T dO and
// dK += dS^T Q, straight from registers. The TMA zero-fills the rows of K, V, Q and dO past the
// keys' or queries' end and drops the rows of dK and dV past the keys'; pad queries have P = 0
// (lse2 = +inf), and the pairs the mask leaves out (../mask.hpp) are masked to -inf.
//
// FusedDq (the reducing path): each step also stages both consumers' dS^T in shared memory and
// computes the step's dQ = dS K, consumer w its part w (dq_step_parts: a query tile at D = 64, a
// column box at D = 128), then hands the part to the producer warpgroup's writer warp, whose bulk
// reduction adds it into the fp32 accumulator (../backward_schedule.hpp). Pad queries add 0
// (dS = 0 there) into the padded rows.
#include "kernels/attention/hopper/backward_config.cuh"

namespace attention::hopper::backward {

template <int D, bool FusedDq, class M>
__device__ void produce_kv(KvSmem<D, FusedDq>& sm, const M& maps, const Problem& p, const KvWork& work) {
  using C = KvConfig<D, FusedDq>;
  const KvItem& it = work.item;
  const std::uint32_t kv = sm.kv_pipe.acquire(0, KvSmem<D, FusedDq>::kv_bytes);
  for (int w = 0; w < C::consumers; ++w) {
    tma::load_async(sm.k[w], map_of(maps.k, work.seq), it.kv_block * C::consumers + w, 0, kv, it.kvm);
    tma::load_async(sm.v[w], map_of(maps.v, work.seq), it.kv_block * C::consumers + w, 0, kv, it.kvm);
  }
  for (int step = 0; step < it.steps; ++step) {
    const int stage = sm.pipe.stage(step), qm = it.qm(step), q_tile = it.q_tile(step);
    const std::uint32_t full = sm.pipe.acquire(step, KvSmem<D, FusedDq>::step_bytes);
    tma::load_async(sm.q[stage], map_of(maps.q, work.seq), q_tile, 0, full, qm);
    tma::load_async(sm.d_o[stage], map_of(maps.d_o, work.seq), q_tile, 0, full, qm);
    const std::size_t row = p.row(qm, work.padded_row + q_tile * C::step);
    tma::load_async(sm.lse2[stage], p.lse2 + row, full);
    tma::load_async(sm.delta[stage], p.delta + row, full);
  }
}

// The step's query vectors (lse2 or D), applied to S^T's columns a 16-query slice at a time:
// f(slice i of s, slice i of t, the vector's entries for it).
template <class C, class F>
__device__ __forceinline__ void per_query_slice(typename C::scores& s, typename C::scores& t,
                                                const typename C::vec& vec, F&& f) {
#pragma unroll
  for (int i = 0; i < C::step / C::slice; ++i) {
    typename C::slice_vec v;
    warp::load(v, vec.data + i * C::slice);
    f(column_slice<C::slice>(s, i), column_slice<C::slice>(t, i), v);
  }
}

// FusedDq: part `part` of the step's dQ, once every consumer's dS^T is staged (ds_slot):
// dQ_part = sum over consumers v of (dS^T_v[:, the part's queries])^T K_v[:, the part's columns],
// read from shared memory. The caller waits for it.
template <int D>
__device__ __forceinline__ void issue_dq_part(const KvSmem<D, true>& sm, int ds_slot, int part,
                                              typename KvConfig<D, true>::dq_part& dq) {
  using C = KvConfig<D, true>;
  using ds_box = typename C::ds_box;
  using key_box = typename C::key_box;
  const int query_box = part / dq_parts(D), column_box = part % dq_parts(D);
#pragma unroll
  for (int v = 0; v < C::consumers; ++v) {
    const ds_box& ds = *reinterpret_cast<const ds_box*>(sm.fused.ds[v][ds_slot].data + query_box * C::ds_tile::box_bytes);
    const key_box& k = *reinterpret_cast<const key_box*>(sm.k[v].data + column_box * C::kv::box_bytes);
    warpgroup::mma_AtB(dq, ds, k, v > 0);  // dQ_part (+)= dS_v K_v
  }
  warpgroup::mma_commit();
}

// FusedDq: the part, scaled later (the conversion), to consumer w's staging tile in the
// accumulator's order (conflict-free 16-byte stores), once the writer has read the tile's last
// part (the first step's finds it free), then handed to the writer.
template <int D>
__device__ __forceinline__ void stage_dq_part(KvSmem<D, true>& sm, int w, int step,
                                              const typename KvConfig<D, true>::dq_part& dq) {
  using C = KvConfig<D, true>;
  float* tile = sm.fused.dq[w].data;
  const int warp = warpgroup::thread() / 32, lane = threadIdx.x % 32;
  static_assert(C::dq_part::pairs == 2 * kDqFloat4sPerLane, "a lane's part is kDqFloat4sPerLane float4s");
  if (step > 0) warpgroup::sync(C::dq_empty(w), C::dq_handoff_threads);
#pragma unroll
  for (int k = 0; k < kDqFloat4sPerLane; ++k) {
    const float2 a = dq.data[2 * k], b = dq.data[2 * k + 1];  // registers 4k..4k+3
    *reinterpret_cast<float4*>(tile + dq_fragment_offset(warp, k, lane, 0)) = make_float4(a.x, a.y, b.x, b.y);
  }
  arch::fence_proxy_async();  // generic-proxy writes, read by the copy engine
  warpgroup::arrive(C::dq_full(w), C::dq_handoff_threads);
}

// FusedDq, the producer warpgroup's writer warp: every part of the item, step by step and
// consumer by consumer, each added into the accumulator with one bulk reduction; the consumer's
// tile is freed once the copy engine has read it, and only before another step (no barrier is
// left half-done). No consumer waits on a reduction.
template <int D>
__device__ void write_dq(KvSmem<D, true>& sm, const Problem& p, const KvWork& work) {
  using C = KvConfig<D, true>;
  const KvItem& it = work.item;
  const bool issuer = threadIdx.x % 32 == 0;
  for (int step = 0; step < it.steps; ++step) {
    for (int w = 0; w < C::consumers; ++w) {
      warpgroup::sync(C::dq_full(w), C::dq_handoff_threads);
      if (issuer) {
        const int step_tile = work.padded_row / C::step + it.q_tile(step);  // padded_row: whole steps
        float* dst = p.dq_accumulator + dq_step_part_start(it.qm(step), step_tile, w, p.schedule.seq, D);
        arch::bulk_reduce_add_f32(dst, arch::shared_address(sm.fused.dq[w].data), C::dq_part_bytes);
        arch::bulk_commit();
        arch::bulk_wait_read<0>();
      }
      __syncwarp();
      if (step + 1 < it.steps) warpgroup::arrive(C::dq_empty(w), C::dq_handoff_threads);
    }
  }
}

// One query step of consumer w, whose warp holds keys warp_key0 .. + 15, its first two products
// issued in its turn (`turn`, consume_kv's). Each product runs under the element-wise work of the
// one before (wgmma groups complete in order): dP^T under P^T, dV under dS^T; with FusedDq, dV
// under the dS^T barrier and dK under the dQ part's staging (FlashAttention-3's order). The step
// ends with every product done (the stage may be released).
template <int D, bool FusedDq>
__device__ void kv_step(KvSmem<D, FusedDq>& sm, const Problem& p, const KvWork& work, int step, int w, int warp_key0,
                        typename KvConfig<D, FusedDq>::grad& dk, typename KvConfig<D, FusedDq>::grad& dv,
                        const typename KvConfig<D, FusedDq>::Turns& turn) {
  using C = KvConfig<D, FusedDq>;
  using slice = typename C::slice_tile;
  const Mask& mask = work.mask;
  const int stage = sm.pipe.stage(step), query0 = work.item.q_tile(step) * C::step;
  typename C::scores s, dp;
  typename C::probs pr, ds;
  turn.wait();
  warpgroup::mma_fence();
  warpgroup::mma_ABt(s, sm.k[w], sm.q[stage], false);  // S^T = K Q^T
  warpgroup::mma_commit();
  warpgroup::mma_ABt(dp, sm.v[w], sm.d_o[stage], false);  // dP^T = V dO^T
  warpgroup::mma_commit();
  turn.pass();
  warpgroup::mma_wait<1>();  // S^T
  if (mask.needs_mask(query0, warp_key0, warpgroup::kWarpRows)) {
    warp::fill_where(s, -INFINITY, [&](int r, int c) { return !mask.attends(query0 + c, warp_key0 + r); });
  }
  per_query_slice<C>(s, dp, sm.lse2[stage], [&](slice& s_i, slice&, const typename C::slice_vec& lse2) {
    warp::exp2_col(s_i, s_i, p.scale_log2, lse2);  // P^T
  });
  warp::copy(pr, s);
  warpgroup::mma_fence();  // the A registers were just written (PTX ISA 9.7.15.6 "wgmma.fence")
  warpgroup::mma_AB(dv, pr, sm.d_o[stage]);  // dV += P^T dO
  warpgroup::mma_commit();
  warpgroup::mma_wait<1>();  // dP^T
  per_query_slice<C>(s, dp, sm.delta[stage], [&](slice& p_i, slice& dp_i, const typename C::slice_vec& delta) {
    warp::sub_col(dp_i, dp_i, delta);
    warp::mul(dp_i, dp_i, p_i);  // dS^T = P^T (dP^T - D)
  });
  warp::copy(ds, dp);
  if constexpr (FusedDq) {
    const int ds_slot = step % C::ds_ring;
    warpgroup::store(sm.fused.ds[w][ds_slot], ds);  // dS^T for every consumer's parts
    arch::fence_proxy_async();                      // read by wgmma (the async proxy)
    typename C::dq_part dq;
    // The part before dK (groups complete in order), so that dK runs under the part's staging.
    warpgroup::sync(C::ds_barrier, C::consumer_threads);  // every consumer's dS^T is staged
    warpgroup::mma_fence();
    issue_dq_part<D>(sm, ds_slot, w, dq);
    warpgroup::mma_AB(dk, ds, sm.q[stage]);  // dK += dS^T Q
    warpgroup::mma_commit();
    warpgroup::mma_wait<1>();  // the part
    stage_dq_part<D>(sm, w, step, dq);
    warpgroup::mma_wait<0>();  // dK
  } else {
    warpgroup::mma_fence();
    warpgroup::mma_AB(dk, ds, sm.q[stage]);  // dK += dS^T Q
    warpgroup::mma_commit();
    warpgroup::mma_wait<0>();
  }
}

// Consumer w: its 64 keys' dK and dV over every step, then out through its K and V tiles
// (named barrier 1 + w), which no product reads any more.
template <int D, bool FusedDq, class M>
__device__ void consume_kv(KvSmem<D, FusedDq>& sm, const M& maps, const Problem& p, const KvWork& work) {
  using C = KvConfig<D, FusedDq>;
  const KvItem& it = work.item;
  const int w = block_warpgroup<D>() - 1;
  const int key0 = (it.kv_block * C::consumers + w) * warpgroup::kRows;
  typename C::grad dk, dv;
  warp::zero(dk);
  warp::zero(dv);
  const typename C::Turns turn{w};
  turn.start();
  sm.kv_pipe.wait_full(0);
  for (int step = 0; step < it.steps; ++step) {
    sm.pipe.wait_full(step);
    kv_step<D, FusedDq>(sm, p, work, step, w, key0 + warpgroup::warp_row(), dk, dv, turn);
    sm.pipe.release(step);  // every thread: its own reads of lse2 and D (KvSmem::init)
  }
  turn.finish();
  // FusedDq: the other consumers' last parts read this consumer's K, which its dK overwrites.
  if constexpr (FusedDq) warpgroup::sync(C::ds_barrier, C::consumer_threads);
  typename C::grad_bf out;
  warp::mul(dk, dk, p.scale);  // the scores were Q K^T scaled: dK = scale dS^T Q
  warp::copy(out, dk);
  warpgroup::store_async(map_of(maps.dk, work.seq), sm.k[w], out, it.kv_block * C::consumers + w, 0, 1 + w, it.kvm);
  warp::copy(out, dv);
  warpgroup::store_async(map_of(maps.dv, work.seq), sm.v[w], out, it.kv_block * C::consumers + w, 0, 1 + w, it.kvm);
}

// A block's dK/dV work item `item` (kv_work), in its shared memory.
template <int D, bool FusedDq, class M>
__device__ __forceinline__ void dkdv_block(KvSmem<D, FusedDq>& sm, const M& maps, const Problem& p, int item) {
  using C = KvConfig<D, FusedDq>;
  if (threadIdx.x == 0) sm.init();
  __syncthreads();
  const KvWork work = kv_work(maps, p, item, C::step, FusedDq);

  if (block_warpgroup<D>() == 0) {
    warpgroup::decrease_registers<C::producer_registers>();
    if (warpgroup::thread() == 0) produce_kv<D, FusedDq>(sm, maps, p, work);
    if constexpr (FusedDq) {
      if (warpgroup::thread() / 32 == C::writer_warp) write_dq<D>(sm, p, work);
    }
    return;
  }
  warpgroup::increase_registers<C::consumer_registers>();
  consume_kv<D, FusedDq>(sm, maps, p, work);
  // The K and V tiles must outlive the stores (the writer waited for its reductions' reads).
  if (warpgroup::thread() == 0) tma::store_wait_read<0>();
}

// The reducing path's kernel: a dK/dV item per block, each adding its dQ parts into
// p.dq_accumulator (items staggered). M: KvMaps, or a packed batch's VarlenKvMaps.
template <int D, class M = KvMaps>
__global__ void __launch_bounds__(KvConfig<D, true>::threads, 1)
    reducing_dkdv_kernel(const __grid_constant__ M maps, const Problem p) {
  extern __shared__ std::uint8_t raw[];
  dkdv_block<D, true>(aligned_smem<KvSmem<D, true>>(raw), maps, p, blockIdx.x);
}

}  // namespace attention::hopper::backward

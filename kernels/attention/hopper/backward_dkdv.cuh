#pragma once
// The backward's dK and dV (backward_config.cuh): a block per work item of 128 keys of one
// (batch, key/value head). A producer warpgroup loads the item's K and V once and streams the
// query steps (Q, dO, and the scratch's lse2 and D for 64 queries) through a ring; two consumer
// warpgroups of 64 keys each work in the transposed frame, keys down and queries across, so
// that P^T and dS^T come out of the tensor cores as the A operands of dV += P^T dO and
// dK += dS^T Q, straight from registers. The TMA zero-fills the rows of K, V, Q and dO past the
// sequence and drops the rows of dK and dV past it; pad queries have P = 0 (lse2 = +inf), and
// keys past the sequence or after a query (causal) are masked to -inf.
#include "kernels/attention/hopper/backward_config.cuh"

namespace attention::hopper::backward {

template <int D>
__device__ void produce_kv(KvSmem<D>& sm, const KvMaps& maps, const Problem& p, const KvItem& it) {
  using C = KvConfig<D>;
  const std::uint32_t kv = sm.kv_pipe.acquire(0, KvSmem<D>::kv_bytes);
  for (int w = 0; w < C::consumers; ++w) {
    tma::load_async(sm.k[w], maps.k, it.kv_block * C::consumers + w, 0, kv, it.kvm);
    tma::load_async(sm.v[w], maps.v, it.kv_block * C::consumers + w, 0, kv, it.kvm);
  }
  for (int step = 0; step < it.steps; ++step) {
    const int stage = sm.pipe.stage(step), qm = it.qm(step), q_tile = it.q_tile(step);
    const std::uint32_t full = sm.pipe.acquire(step, KvSmem<D>::step_bytes);
    tma::load_async(sm.q[stage], maps.q, q_tile, 0, full, qm);
    tma::load_async(sm.d_o[stage], maps.d_o, q_tile, 0, full, qm);
    tma::load_async(sm.lse2[stage], p.lse2 + p.row(qm, q_tile * kKvStepQ), full);
    tma::load_async(sm.delta[stage], p.delta + p.row(qm, q_tile * kKvStepQ), full);
  }
}

// The step's query vectors (lse2 or D), applied to S^T's columns a 16-query slice at a time:
// f(slice i of s, slice i of t, the vector's entries for it).
template <int D, class F>
__device__ __forceinline__ void per_query_slice(typename KvConfig<D>::scores& s, typename KvConfig<D>::scores& t,
                                                const typename KvConfig<D>::vec& vec, F&& f) {
  using C = KvConfig<D>;
#pragma unroll
  for (int i = 0; i < kKvStepQ / C::slice; ++i) {
    typename C::slice_vec v;
    warp::load(v, vec.data + i * C::slice);
    f(column_slice<C::slice>(s, i), column_slice<C::slice>(t, i), v);
  }
}

// One query step of consumer w, whose warp holds keys warp_key0 .. + 15. Each product runs under
// the element-wise work of the one before (wgmma groups complete in order): dP^T under P^T, dV under
// dS^T. The step ends with every product done (the stage may be released).
template <int D>
__device__ void kv_step(const KvSmem<D>& sm, const Problem& p, const KvItem& it, int step, int w, int warp_key0,
                        typename KvConfig<D>::grad& dk, typename KvConfig<D>::grad& dv) {
  using C = KvConfig<D>;
  using slice = typename C::slice_tile;
  const Schedule& sc = p.schedule;
  const int stage = sm.pipe.stage(step), query0 = it.q_tile(step) * kKvStepQ;
  typename C::scores s, dp;
  typename C::probs pr, ds;
  warpgroup::mma_fence();
  warpgroup::mma_ABt(s, sm.k[w], sm.q[stage], false);  // S^T = K Q^T
  warpgroup::mma_commit();
  warpgroup::mma_ABt(dp, sm.v[w], sm.d_o[stage], false);  // dP^T = V dO^T
  warpgroup::mma_commit();
  warpgroup::mma_wait<1>();  // S^T
  if (needs_mask(query0, warp_key0, warpgroup::kWarpRows, sc.seq, sc.causal)) {
    warp::fill_where(s, -INFINITY, [&](int r, int c) { return !attends(query0 + c, warp_key0 + r, sc.seq, sc.causal); });
  }
  per_query_slice<D>(s, dp, sm.lse2[stage], [&](slice& s_i, slice&, const typename C::slice_vec& lse2) {
    warp::exp2_col(s_i, s_i, p.scale_log2, lse2);  // P^T
  });
  warp::copy(pr, s);
  warpgroup::mma_fence();  // the A registers were just written (PTX ISA 9.7.15.6 "wgmma.fence")
  warpgroup::mma_AB(dv, pr, sm.d_o[stage]);  // dV += P^T dO
  warpgroup::mma_commit();
  warpgroup::mma_wait<1>();  // dP^T
  per_query_slice<D>(s, dp, sm.delta[stage], [&](slice& p_i, slice& dp_i, const typename C::slice_vec& delta) {
    warp::sub_col(dp_i, dp_i, delta);
    warp::mul(dp_i, dp_i, p_i);  // dS^T = P^T (dP^T - D)
  });
  warp::copy(ds, dp);
  warpgroup::mma_fence();
  warpgroup::mma_AB(dk, ds, sm.q[stage]);  // dK += dS^T Q
  warpgroup::mma_commit();
  warpgroup::mma_wait<0>();
}

// Consumer w: its 64 keys' dK and dV over every step, then out through its K and V tiles
// (named barrier 1 + w), which no product reads any more.
template <int D>
__device__ void consume_kv(KvSmem<D>& sm, const KvMaps& maps, const Problem& p, const KvItem& it) {
  using C = KvConfig<D>;
  const int w = warpgroup::index() - 1;
  const int key0 = (it.kv_block * C::consumers + w) * warpgroup::kRows;
  typename C::grad dk, dv;
  warp::zero(dk);
  warp::zero(dv);
  sm.kv_pipe.wait_full(0);
  for (int step = 0; step < it.steps; ++step) {
    sm.pipe.wait_full(step);
    kv_step<D>(sm, p, it, step, w, key0 + warpgroup::warp_row(), dk, dv);
    sm.pipe.release(step);  // every thread: its own reads of lse2 and D (KvSmem::init)
  }
  typename C::grad_bf out;
  warp::mul(dk, dk, p.scale);  // the scores were Q K^T scaled: dK = scale dS^T Q
  warp::copy(out, dk);
  warpgroup::store_async(maps.dk, sm.k[w], out, it.kv_block * C::consumers + w, 0, 1 + w, it.kvm);
  warp::copy(out, dv);
  warpgroup::store_async(maps.dv, sm.v[w], out, it.kv_block * C::consumers + w, 0, 1 + w, it.kvm);
}

template <int D>
__global__ void __launch_bounds__(KvConfig<D>::threads, 1) dkdv_kernel(const __grid_constant__ KvMaps maps, const Problem p) {
  using C = KvConfig<D>;
  extern __shared__ std::uint8_t raw[];
  KvSmem<D>& sm = *reinterpret_cast<KvSmem<D>*>(raw + (kSmemAlign - arch::shared_address(raw) % kSmemAlign) % kSmemAlign);
  if (threadIdx.x == 0) sm.init();
  __syncthreads();
  const KvItem it = kv_item(p.schedule, blockIdx.x);

  if (warpgroup::index() == 0) {
    warpgroup::decrease_registers<C::producer_registers>();
    if (warpgroup::thread() == 0) produce_kv<D>(sm, maps, p, it);
    return;
  }
  warpgroup::increase_registers<C::consumer_registers>();
  consume_kv<D>(sm, maps, p, it);
  if (warpgroup::thread() == 0) tma::store_wait_read<0>();  // the K and V tiles must outlive the stores
}

}  // namespace attention::hopper::backward

#pragma once
// The backward's dQ (backward_config.cuh): a block per work item of 128 queries of one
// (batch, query head). A producer warpgroup loads the item's Q and dO once and streams K and V a
// step (QConfig::step keys) at a time through a ring; two consumer warpgroups of 64 queries each
// recompute S = Q K^T and dP = dO V^T, form P = 2^(S scale log2(e) - lse2) and dS = P (dP - D) in
// registers, and accumulate dQ += dS K. Each dQ element is summed in one thread, in key order:
// deterministic, with no atomics and no scratch beyond the preprocess's vectors. The TMA
// zero-fills the rows past the queries' or keys' end and drops the rows of dQ past the queries';
// pad queries have P = 0 (lse2 = +inf), and the pairs the mask leaves out (../mask.hpp) are
// masked to -inf. An item whose queries attend no key takes no step and stores dQ = 0.
#include "kernels/attention/hopper/backward_config.cuh"

namespace attention::hopper::backward {

template <int D, class M>
__device__ void produce_q(QSmem<D>& sm, const M& maps, const QWork& work) {
  using C = QConfig<D>;
  const QItem& it = work.item;
  const std::uint32_t q = sm.q_pipe.acquire(0, QSmem<D>::q_bytes);
  for (int w = 0; w < C::consumers; ++w) {
    tma::load_async(sm.q[w], map_of(maps.q, work.seq), it.q_block * C::consumers + w, 0, q, it.qm);
    tma::load_async(sm.d_o[w], map_of(maps.d_o, work.seq), it.q_block * C::consumers + w, 0, q, it.qm);
  }
  const grid_map &k_map = map_of(maps.k, work.seq), &v_map = map_of(maps.v, work.seq);
  const grid_matrix k = matrix_of(k_map, it.kvm), v = matrix_of(v_map, it.kvm);  // once an item
  for (int step = 0; step < it.tiles; ++step) {
    const int stage = sm.pipe.stage(step);
    const std::uint32_t full = sm.pipe.acquire(step, QSmem<D>::step_bytes);
    tma::load_async(sm.k[stage], k_map, step, 0, full, k);
    tma::load_async(sm.v[stage], v_map, step, 0, full, v);
  }
}

// One key step of consumer w, whose warp holds queries row0 .. + 15 (their lse2 and D given), S
// and dP issued in its turn (`turn`, consume_q's). dP's product runs under P's exponentials (wgmma groups complete in
// order).
template <int D>
__device__ void q_step(const QSmem<D>& sm, const Problem& p, const Mask& mask, int step, int w, int row0,
                       const typename QConfig<D>::rows& lse2, const typename QConfig<D>::rows& delta,
                       typename QConfig<D>::grad& dq, const typename QConfig<D>::Turns& turn) {
  using C = QConfig<D>;
  const int stage = sm.pipe.stage(step), key0 = step * C::step;
  typename C::scores s, dp;
  typename C::probs ds;
  turn.wait();
  warpgroup::mma_fence();
  warpgroup::mma_ABt(s, sm.q[w], sm.k[stage], false);  // S = Q K^T
  warpgroup::mma_commit();
  warpgroup::mma_ABt(dp, sm.d_o[w], sm.v[stage], false);  // dP = dO V^T
  warpgroup::mma_commit();
  turn.pass();
  warpgroup::mma_wait<1>();  // S
  if (mask.needs_mask(row0, key0, C::step)) {
    warp::fill_where(s, -INFINITY, [&](int r, int c) { return !mask.attends(row0 + r, key0 + c); });
  }
  warp::exp2_row(s, s, p.scale_log2, lse2);  // P
  warpgroup::mma_wait<0>();  // dP
  warp::sub_row(dp, dp, delta);
  warp::mul(dp, dp, s);  // dS = P (dP - D)
  warp::copy(ds, dp);
  warpgroup::mma_fence();  // the A registers were just written (PTX ISA 9.7.15.6 "wgmma.fence")
  warpgroup::mma_AB(dq, ds, sm.k[stage]);  // dQ += dS K
  warpgroup::mma_commit();
  warpgroup::mma_wait<0>();
}

// Consumer w: its 64 queries' dQ over every key step, then out through its Q tile (named
// barrier 1 + w), which no product reads any more.
template <int D, class M>
__device__ void consume_q(QSmem<D>& sm, const M& maps, const Problem& p, const QWork& work) {
  using C = QConfig<D>;
  const QItem& it = work.item;
  const int w = block_warpgroup<D>() - 1;
  const int tile = it.q_block * C::consumers + w, row0 = tile * warpgroup::kRows + warpgroup::warp_row();
  const bool releaser = threadIdx.x % 32 == 0;
  typename C::rows lse2, delta;
  const std::size_t row = p.row(it.qm, work.padded_row + row0);  // inside the padded scratch: no bound needed
  warp::load(lse2, p.lse2 + row);
  warp::load(delta, p.delta + row);
  typename C::grad dq;
  warp::zero(dq);
  const typename C::Turns turn{w};
  turn.start();
  sm.q_pipe.wait_full(0);
  for (int step = 0; step < it.tiles; ++step) {
    sm.pipe.wait_full(step);
    q_step<D>(sm, p, work.mask, step, w, row0, lse2, delta, dq, turn);
    if (releaser) sm.pipe.release(step);
  }
  turn.finish();
  typename C::grad_bf out;
  warp::mul(dq, dq, p.scale);  // the scores were Q K^T scaled: dQ = scale dS K
  warp::copy(out, dq);
  warpgroup::store_async(map_of(maps.dq, work.seq), sm.q[w], out, tile, 0, 1 + w, it.qm);
}

// A block's dQ work item `item` (q_work), in its shared memory.
template <int D, class M>
__device__ __forceinline__ void dq_block(QSmem<D>& sm, const M& maps, const Problem& p, int item) {
  using C = QConfig<D>;
  if (threadIdx.x == 0) sm.init();
  __syncthreads();
  const QWork work = q_work(maps, p, item);

  if (block_warpgroup<D>() == 0) {
    warpgroup::decrease_registers<C::producer_registers>();
    if (warpgroup::thread() == 0) produce_q<D>(sm, maps, work);
    return;
  }
  warpgroup::increase_registers<C::consumer_registers>();
  consume_q<D>(sm, maps, p, work);
  if (warpgroup::thread() == 0) tma::store_wait_read<0>();  // the Q tile must outlive the store
}

}  // namespace attention::hopper::backward

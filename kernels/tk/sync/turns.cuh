#pragma once
// Warpgroups taking turns (FlashAttention-3's "ping-pong"): member w goes after member w - 1 has
// passed, cyclically, so that one member's tensor-core work runs while the others do something
// else instead of all of them queueing at once. Built on named barriers FirstBarrier ..
// FirstBarrier + Members - 1 (tk/sync/pipeline.cuh: one member syncs, the one before arrives).
// Every member must take the same number of turns between start() and finish().
//
//   turns<2, 4> t{w};  t.start();  for (...) { t.wait(); issue(); t.pass(); ... }  t.finish();
#include "tk/sync/pipeline.cuh"

namespace tk::warpgroup {

template <int Members, int FirstBarrier>
struct turns {
  static_assert(Members >= 2 && FirstBarrier >= 1 && FirstBarrier + Members <= 16, "turns: barrier ids 1..15");
  static constexpr int kPair = 2 * 128;  // the member waiting and the one passing to it
  static constexpr int kEndBarrier = FirstBarrier + Members;  // the first id after its barriers

  int member;

  __device__ void start() const {  // member 0 goes first
    if (member == Members - 1) arrive(FirstBarrier, kPair);
  }
  __device__ void wait() const { sync(FirstBarrier + member, kPair); }
  __device__ void pass() const { arrive(FirstBarrier + (member + 1) % Members, kPair); }
  __device__ void finish() const {  // takes the last member's last pass, so no barrier is left half-done
    if (member == 0) sync(FirstBarrier, kPair);
  }
};

}  // namespace tk::warpgroup

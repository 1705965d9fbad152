#pragma once
// One-warpgroup kernels that run the tile DSL's warpgroup-scope operations (wgmma on shared
// tiles or register A, TMA tile loads and stores), for the GPU tests. Matrices travel row-major
// as the element type's bits (bf16 or fp16) in and as floats out.
#include <cstdint>
#include <vector>

namespace tkprobe::test_kernels::dsl_wg {

// B^T or B; A from shared memory or registers; A^T (A stored K x 64) with B or B^T.
enum class Mma { ABt_ss, AB_ss, ABt_rs, AB_rs, AtB_ss, AtBt_ss };
enum class Half { bf16, f16 };

// 64 x K times (N x K)^T or (K x N): the shapes with kernels. {16, 160} and {160, 64} are the Based
// kernel's (kernels/based): 32B-swizzled K-major tiles (K = 16), and 64B-swizzled tiles five
// boxes wide, K-major (f_q, the state) and MN-major (f_k).
inline constexpr int kMmaShapes[][2] = {{32, 64}, {64, 128}, {16, 160}, {160, 64}};  // {K, N}

// D (64 x N, row-major floats) = A (64 x K; K x 64 for the At forms) times B (N x K for the
// Bt forms, K x N otherwise), + C where c (64 x N, row-major) is given: the accumulator is
// loaded with C and the mma accumulates onto it (accumulate = true), else it overwrites the
// accumulator's unset registers (accumulate = false).
std::vector<float> mma(Mma form, Half type, int k, int n, const std::vector<std::uint16_t>& a,
                       const std::vector<std::uint16_t>& b, const std::vector<float>& c = {});

// The e4m3 P V of the attention forward (kernels/attention/hopper/config_fp8.cuh): each warp loads
// its 16 rows of P (64 x 128 row-major floats, values exact in e4m3) as a float tile, turns them
// into an e4m3 A operand with warp::copy_e4m3 (scale 1; key columns permuted per 32), and
// warpgroup::mma_ABt multiplies it by V^T, a 128 (D) x 128 (keys) e4m3 tile whose key columns are
// stored in the same permuted order (vt, row-major bytes, as transpose_v.cuh writes them).
// Returns O = P V, 64 x 128 row-major floats.
inline constexpr int kE4m3Keys = 128, kE4m3Dim = 128;
std::vector<float> e4m3_pv(const std::vector<float>& p, const std::vector<std::uint8_t>& vt);

// Tile shapes the TMA round trip runs: rows x cols elements.
inline constexpr int kTmaShapes[][2] = {{64, 64}, {128, 128}};

// A rows x cols tile at tile coordinates (row_tile, col_tile) of a row-major (rows * 2) x
// (cols * 2) tensor, loaded into shared memory by the TMA and stored by the TMA into the same
// place of a second tensor, which is returned (its other elements as `out` had them). The
// elements travel as their bits: 16-bit ones (st<bf16, ...>: the map of every 16-bit type)
// or floats (st<float, ...>: a FLOAT32 map, boxes half as many columns wide).
std::vector<std::uint16_t> tma_round_trip(int rows, int cols, const std::vector<std::uint16_t>& tensor,
                                          std::vector<std::uint16_t> out, int row_tile, int col_tile);
std::vector<std::uint32_t> tma_round_trip(int rows, int cols, const std::vector<std::uint32_t>& tensor,
                                          std::vector<std::uint32_t> out, int row_tile, int col_tile);

// tma::load_async of a shared vector sv<float, kVectorLength>: the kVectorLength floats of `tensor`
// from `offset` (a multiple of 4: 16-byte aligned), through one bulk copy, read back.
inline constexpr int kVectorLength = 64;
std::vector<float> vector_load(const std::vector<float>& tensor, int offset);

// The producer/consumer ring (tk::pipeline, tk/sync/pipeline.cuh) with the stage counts that have
// kernels: one producer thread (warpgroup 0) loads `steps` 64 x 64 16-bit tiles, tile s being
// rows 64s..64s+63 of a row-major (64 steps) x 64 tensor, each through the TMA into stage s %
// Stages; the four warps of warpgroup 1 wait for each stage, copy it out (16 rows each) into the
// same place of a second tensor, which is returned, and release it.
inline constexpr int kPipelineStages[] = {2, 3};
std::vector<std::uint16_t> pipeline_copy(int stages, int steps, const std::vector<std::uint16_t>& tensor);

// Warpgroups taking turns (tk::warpgroup::turns) with the member counts that have kernels: in each
// of `rounds` rounds, member w, in its turn, takes the next number from a shared counter and
// stores it at [round][w] of the returned order. Right turns give 0, 1, 2, ... in place.
inline constexpr int kTurnMembers[] = {2, 3};
std::vector<int> turn_order(int members, int rounds);

}  // namespace tkprobe::test_kernels::dsl_wg

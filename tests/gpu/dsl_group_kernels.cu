#include <algorithm>
#include <stdexcept>
#include <type_traits>

#include "src/device_buffer.hpp"
#include "tests/gpu/dsl_group_kernels.hpp"
#include "tk/group.cuh"

namespace tkprobe::test_kernels::dsl {
namespace {

template <class T>
T to_element(float x) {
  if constexpr (std::is_same_v<T, float>) return x;
  if constexpr (std::is_same_v<T, __nv_bfloat16>) return __float2bfloat16(x);
}
template <class T>
float to_float(T x) {
  if constexpr (std::is_same_v<T, float>) return x;
  if constexpr (std::is_same_v<T, __nv_bfloat16>) return __bfloat162float(x);
}

template <int Warps, class T, int R, int C>
__global__ void group_load_kernel(const T* global, int ld, int valid_rows, T* out) {
  using Tile = tk::st<T, R, C>;
  using Group = tk::group<Warps>;
  __shared__ Tile tile;
  for (int at = threadIdx.x; at < Tile::bytes; at += blockDim.x) tile.data[at] = 0xff;  // poison
  __syncthreads();
  Group::load_async(tile, global, ld, valid_rows);
  Group::commit();
  Group::template wait<0>();
  __syncthreads();
  for (int at = threadIdx.x; at < R * C; at += blockDim.x) out[at] = tile(at / C, at % C);
}

template <int Warps, class T, int R, int C>
std::vector<float> group_load(int ld, int valid_rows, const std::vector<float>& global) {
  std::vector<T> host(global.size());
  for (std::size_t i = 0; i < host.size(); ++i) host[i] = to_element<T>(global[i]);
  DeviceBuffer<T> in(std::max<std::size_t>(host.size(), 1)), out(std::size_t(R) * C);  // no rows: a dummy element
  in.upload(host);
  out.poison();
  group_load_kernel<Warps, T, R, C><<<1, tk::group<Warps>::threads>>>(in.get(), ld, valid_rows, out.get());
  TK_CUDA(cudaGetLastError());
  TK_CUDA(cudaDeviceSynchronize());
  std::vector<float> tile;
  for (const T& x : out.download()) tile.push_back(to_float(x));
  return tile;
}

using bf16 = __nv_bfloat16;
using GatherTile = tk::st<bf16, kGatherRows, kGatherCols>;
using GatherGroup = tk::group<4>;

__global__ void group_gather_kernel(const bf16* a, const bf16* b, const long long* offsets, int valid_rows, bf16* out) {
  __shared__ GatherTile tiles[2];
  for (int t = 0; t < 2; ++t)
    for (int at = threadIdx.x; at < GatherTile::bytes; at += blockDim.x) tiles[t].data[at] = 0xff;  // poison
  __syncthreads();
  GatherTile* const dst[2] = {&tiles[0], &tiles[1]};
  const bf16* const sources[2] = {a, b};
  GatherGroup::load_rows_async(
      dst, sources, [=](int r) { return offsets[r]; }, valid_rows);
  GatherGroup::commit();
  GatherGroup::wait<0>();
  __syncthreads();
  constexpr int elements = kGatherRows * kGatherCols;
  for (int at = threadIdx.x; at < 2 * elements; at += blockDim.x)
    out[at] = tiles[at / elements](at % elements / kGatherCols, at % kGatherCols);
}

}  // namespace

std::vector<float> run_group_load(const GroupLoadCase& c, int ld, int valid_rows, const std::vector<float>& global) {
  if (global.size() != std::size_t(valid_rows) * ld)
    throw std::invalid_argument("dsl group kernels: give valid_rows x ld");
  if (c.type == DType::bf16 && c.warps == 1 && c.rows == 16 && c.cols == 64) {
    return group_load<1, __nv_bfloat16, 16, 64>(ld, valid_rows, global);
  }
  if (c.type == DType::bf16 && c.warps == 4 && c.rows == 64 && c.cols == 128) {
    return group_load<4, __nv_bfloat16, 64, 128>(ld, valid_rows, global);
  }
  if (c.type == DType::bf16 && c.warps == 4 && c.rows == 16 && c.cols == 32) {
    return group_load<4, __nv_bfloat16, 16, 32>(ld, valid_rows, global);
  }
  if (c.type == DType::f32 && c.warps == 2 && c.rows == 32 && c.cols == 32) {
    return group_load<2, float, 32, 32>(ld, valid_rows, global);
  }
  throw std::invalid_argument("dsl group kernels: no kernel for this case");
}

std::vector<float> run_group_gather(const std::vector<long long>& offsets, int valid_rows, const std::vector<float>& a,
                                    const std::vector<float>& b) {
  if (offsets.size() != std::size_t(kGatherRows) || a.size() != b.size())
    throw std::invalid_argument("dsl group kernels: give an offset a row and sources of one size");
  const auto to_bf16 = [](const std::vector<float>& x) {
    std::vector<bf16> host;
    for (float v : x) host.push_back(__float2bfloat16(v));
    return host;
  };
  DeviceBuffer<bf16> a_d(a.size()), b_d(b.size());
  a_d.upload(to_bf16(a));
  b_d.upload(to_bf16(b));
  DeviceBuffer<long long> offsets_d(offsets.size());
  offsets_d.upload(offsets);
  DeviceBuffer<bf16> out(2 * std::size_t(kGatherRows) * kGatherCols);
  out.poison();
  group_gather_kernel<<<1, GatherGroup::threads>>>(a_d.get(), b_d.get(), offsets_d.get(), valid_rows, out.get());
  TK_CUDA(cudaGetLastError());
  TK_CUDA(cudaDeviceSynchronize());
  std::vector<float> tiles;
  for (const bf16& x : out.download()) tiles.push_back(__bfloat162float(x));
  return tiles;
}

}  // namespace tkprobe::test_kernels::dsl

#pragma once
// What the attention kernels need of the GPU: the wgmma kernel (its forward in bf16 and e4m3, and
// the backward) is built for sm_90a alone; the mma.sync forward runs on every GPU since sm_80.
#include "src/requirements.hpp"

namespace tkprobe::attention_probe {

inline const Requirements kWgmmaKernelNeeds{
    .sm90a = {Sm90aFeature::wgmma, Sm90aFeature::tma, Sm90aFeature::setmaxnreg}};

}  // namespace tkprobe::attention_probe

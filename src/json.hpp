#pragma once
// One JSON type for the whole driver: ordered, so reports keep the order a human reads them in.
#include <nlohmann/json.hpp>

namespace tkprobe {
using Json = nlohmann::ordered_json;
}

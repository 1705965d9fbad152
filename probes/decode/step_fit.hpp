// A decode step's time as a fixed cost plus its cache read at one rate, fitted over the batch-1
// rows of a run: the fixed part (launch ramp, the first loads' latency, the combine) is what keeps a
// short cache under the HBM ceiling, and the fit says from how many bytes a share of it is reached.
#pragma once

#include <cmath>
#include <limits>
#include <optional>
#include <vector>

namespace tkprobe::decode_fit {

struct Sample {
  double bytes, seconds;  // the cache a step read, its median time
};

struct StepFit {
  double fixed_seconds;  // the time of a step that read nothing
  double bytes_per_second;
};

// Least squares of seconds over bytes; none from fewer than two different sizes, or where the time
// does not grow with the bytes (no rate to speak of).
inline std::optional<StepFit> fit(const std::vector<Sample>& samples) {
  if (samples.size() < 2) return std::nullopt;
  const double n = double(samples.size());
  double sx = 0, sy = 0;
  for (const Sample& s : samples) {
    sx += s.bytes;
    sy += s.seconds;
  }
  double sxx = 0, sxy = 0;
  for (const Sample& s : samples) {  // about the means: sizes of 1e9 bytes would swamp the raw sums
    sxx += (s.bytes - sx / n) * (s.bytes - sx / n);
    sxy += (s.bytes - sx / n) * (s.seconds - sy / n);
  }
  if (sxx <= 0 || sxy <= 0) return std::nullopt;
  const double slope = sxy / sxx;
  return StepFit{sy / n - slope * sx / n, 1 / slope};
}

// The bytes from which a step reads at `share` of `ceiling` (bytes per second) by the fit; infinity
// where the fitted rate never gets there, 0 where even an empty step would (no fixed cost).
inline double bytes_for_share(const StepFit& f, double ceiling, double share) {
  const double target = share * ceiling;
  if (target >= f.bytes_per_second) return std::numeric_limits<double>::infinity();
  if (f.fixed_seconds <= 0) return 0;
  // bytes / (fixed + bytes / rate) = target  =>  bytes = target fixed / (1 - target / rate)
  return target * f.fixed_seconds / (1 - target / f.bytes_per_second);
}

}  // namespace tkprobe::decode_fit

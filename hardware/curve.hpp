#pragma once
// A measured curve of [x, y] points and its one interpolation: linear in log(x) between
// points, the end values held beyond them. What x and y are is the owner's to say (a
// message's bytes and its time or bus bandwidth, a TP size and a memory fraction); EfficiencyPoint
// (hardware/gpu_spec.hpp) is the efficiency curves' own point and shares the arithmetic.
#include <cmath>
#include <span>
#include <stdexcept>
#include <vector>

namespace twinsim {

// One point of a measured curve: at `x`, the value `y`.
struct CurvePoint {
  double x = 0;
  double y = 0;
};

// A non-empty curve's value at `x`, its points' x increasing; X and Y name a point's members.
// The curve is any run of points (a vector, or a few on the stack: compute_cost.cpp fused_grouped_rate).
template <class Point, double Point::*X, double Point::*Y>
double interpolate_log_x(std::span<const Point> curve, double x) {
  if (x <= curve.front().*X) return curve.front().*Y;
  if (x >= curve.back().*X) return curve.back().*Y;
  for (std::size_t i = 1; i < curve.size(); ++i) {
    if (x <= curve[i].*X) {
      const Point& a = curve[i - 1];
      const Point& b = curve[i];
      // linear in log(x) between the two points around x
      const double t = (std::log(x) - std::log(a.*X)) / (std::log(b.*X) - std::log(a.*X));
      return a.*Y + t * (b.*Y - a.*Y);
    }
  }
  return curve.back().*Y;
}

// A curve's value at `x` (interpolate_log_x); throws std::invalid_argument for an empty curve.
inline double interpolate_curve(const std::vector<CurvePoint>& curve, double x) {
  if (curve.empty()) throw std::invalid_argument("interpolate_curve: the curve has no points");
  return interpolate_log_x<CurvePoint, &CurvePoint::x, &CurvePoint::y>(curve, x);
}

}  // namespace twinsim

#include "sim/validate/nelder_mead.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace twinsim {

namespace {

struct Vertex {
  std::vector<double> x;
  double value = 0;
};

// x = a + t (b - a)
std::vector<double> along(const std::vector<double>& a, const std::vector<double>& b, double t) {
  std::vector<double> x(a.size());
  for (std::size_t i = 0; i < a.size(); ++i) x[i] = a[i] + t * (b[i] - a[i]);
  return x;
}

}  // namespace

NelderMeadResult nelder_mead(const std::function<double(const std::vector<double>&)>& f,
                             std::vector<double> start, const NelderMeadOptions& options) {
  const std::size_t n = start.size();
  int evaluations = 0;
  auto eval = [&](std::vector<double> x) {
    ++evaluations;
    const double v = f(x);
    return Vertex{std::move(x), v};
  };
  std::vector<Vertex> simplex{eval(start)};
  for (std::size_t i = 0; i < n; ++i) {
    std::vector<double> x = start;
    x[i] += options.initial_step;
    simplex.push_back(eval(x));
  }
  auto by_value = [](const Vertex& a, const Vertex& b) { return a.value < b.value; };
  while (evaluations < options.max_evaluations) {
    std::sort(simplex.begin(), simplex.end(), by_value);
    const Vertex& best = simplex.front();
    Vertex& worst = simplex.back();
    if (std::abs(worst.value - best.value) < options.tolerance) break;
    // centroid of every vertex but the worst
    std::vector<double> centroid(n, 0.0);
    for (std::size_t v = 0; v < n; ++v)
      for (std::size_t i = 0; i < n; ++i) centroid[i] += simplex[v].x[i] / static_cast<double>(n);
    const Vertex reflected = eval(along(centroid, worst.x, -1.0));
    if (reflected.value < best.value) {
      const Vertex expanded = eval(along(centroid, worst.x, -2.0));
      worst = expanded.value < reflected.value ? expanded : reflected;
      continue;
    }
    if (reflected.value < simplex[n - 1].value) {  // better than the second worst
      worst = reflected;
      continue;
    }
    // contract towards the better of the worst and the reflected point
    const bool outside = reflected.value < worst.value;
    const Vertex contracted = eval(along(centroid, outside ? reflected.x : worst.x, 0.5));
    if (contracted.value < std::min(worst.value, reflected.value)) {
      worst = contracted;
      continue;
    }
    // shrink every vertex towards the best
    for (std::size_t v = 1; v < simplex.size(); ++v) simplex[v] = eval(along(simplex.front().x, simplex[v].x, 0.5));
  }
  std::sort(simplex.begin(), simplex.end(), by_value);
  return {simplex.front().x, simplex.front().value, evaluations};
}

}  // namespace twinsim

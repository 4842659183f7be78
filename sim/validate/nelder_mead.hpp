#pragma once
// Derivative-free minimisation of a function of a few parameters: the Nelder-Mead
// simplex (Nelder & Mead 1965, "A simplex method for function minimization"), with the
// standard coefficients reflection 1, expansion 2, contraction 1/2, shrink 1/2
// (Lagarias et al. 1998, "Convergence properties of the Nelder-Mead simplex method in
// low dimensions", §2). The objective here is a simulation, so it need not be smooth.
#include <functional>
#include <vector>

namespace twinsim {

struct NelderMeadOptions {
  int max_evaluations = 200;
  double initial_step = 0.25;  // simplex edge along each axis, in parameter units
  double tolerance = 1e-4;     // stop when best and worst values differ by less
};

struct NelderMeadResult {
  std::vector<double> x;
  double value = 0;
  int evaluations = 0;
};

NelderMeadResult nelder_mead(const std::function<double(const std::vector<double>&)>& f,
                             std::vector<double> start, const NelderMeadOptions& options = {});

}  // namespace twinsim

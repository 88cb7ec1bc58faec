// SPDX-License-Identifier: MIT
// glibc's libm, loaded on first use (bench/startup/README.md). Two computations must give
// CPython's results bit for bit, and CPython calls glibc's `log` and `pow`: reward scoring's
// logit and the port of `random.sample`. Linking libm for them made every start map and relocate
// it (about 12 page faults per start, bench/startup/README.md); rounding is compiled inline
// instead (-fno-math-errno, cmake/PbSettings.cmake).
#pragma once

namespace pb::libm {

// The same functions as std::log and std::pow, from libm.so.6. Throws pb::Error (exit 1) when
// libm cannot be loaded, which glibc does not allow to happen.
double log(double x);
double pow(double x, double y);

} // namespace pb::libm

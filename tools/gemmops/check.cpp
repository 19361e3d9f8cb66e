// tools/gemmops/check.cpp: reference by the CPU operator, then poison and error checks on the output
// SPDX-License-Identifier: Apache-2.0
#include "check.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "element.hpp"
#include "gemmops/registry.hpp"

namespace gemmops::cli {
namespace {

std::string sci(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1e", v);
  return buf;
}

bool is_poison(const unsigned char* p, size_t width) {
  return std::all_of(p, p + width, [](unsigned char c) { return c == 0xFF; });
}

// The reference output in host memory; `dtype` says which one the CPU operator could produce.
Result<std::vector<unsigned char>> cpu_reference(const Problem& problem, DType* dtype) {
  const int64_t elements = operand_out(problem.args).numel();
  for (DType candidate : {DType::fp32, problem.spec.out_dtype}) {
    std::vector<unsigned char> ref(std::max<size_t>(size_t(elements) * size_of(candidate), 1), 0xFF);
    Arguments host = problem.host_arguments(ref.data(), candidate);
    for (const OperatorPtr& op : get_operators(host)) {
      if (!op->metadata().target.is_cpu()) continue;
      GEMMOPS_TRY(op->run(host));
      *dtype = candidate;
      return ref;
    }
  }
  return unsupported("check: no CPU operator supports the problem on host tensors; use --no-check to skip it");
}

}  // namespace

double check_tolerance(DType out_dtype) {
  switch (out_dtype) {
    case DType::bf16:
    case DType::fp16: return 1e-2;
    case DType::fp32: return 1e-4;
    default: return 1e-1;
  }
}

Result<double> check_against_cpu(const Problem& problem) {
  DType ref_dtype = DType::fp32;
  GEMMOPS_ASSIGN_OR_RETURN(std::vector<unsigned char> ref, cpu_reference(problem, &ref_dtype));

  const DType out_dtype = problem.spec.out_dtype;
  const size_t width = size_of(out_dtype), ref_width = size_of(ref_dtype);
  const int64_t elements = operand_out(problem.args).numel();
  int64_t unwritten = 0, clobbered = 0;
  double diff2 = 0, ref2 = 0;
  for (int64_t i = 0; i < elements; ++i) {
    const unsigned char* o = problem.out.data() + size_t(i) * width;
    if (!problem.written(i)) {
      clobbered += !is_poison(o, width);
      continue;
    }
    if (is_poison(o, width)) {
      ++unwritten;
      continue;
    }
    double r = decode_element(ref_dtype, ref.data() + size_t(i) * ref_width);
    double d = decode_element(out_dtype, o) - r;
    diff2 += d * d;
    ref2 += r * r;
  }
  if (unwritten)
    return internal_error("out: every element inside the groups must be written; " + std::to_string(unwritten) +
                          " of " + std::to_string(problem.covered()) + " elements still hold the poison");
  if (clobbered && problem.spec.op == OperationKind::grouped_m_masked)
    return internal_error("out: each group's rows past its count (offsets) must be left untouched; " +
                          std::to_string(clobbered) + " elements were written");
  if (clobbered) {
    const char* what = problem.spec.op == OperationKind::grouped_n ? "columns" : "rows";
    return internal_error(std::string("out: ") + what + " at or past offsets[G-1] = " +
                          std::to_string(problem.offsets.empty() ? 0 : problem.offsets.back()) +
                          " must be left untouched; " + std::to_string(clobbered) + " elements were written");
  }
  const double err = ref2 > 0 ? std::sqrt(diff2 / ref2) : std::sqrt(diff2);
  const double tol = check_tolerance(out_dtype);
  if (!(err <= tol))  // also catches NaN
    return internal_error("out: relative Frobenius error against the CPU operator must be <= " + sci(tol) +
                          "; got " + sci(err));
  return err;
}

}  // namespace gemmops::cli

// src/sm90/kernel_problem.cpp: arguments -> KernelProblem, with the mapping's own rules
// SPDX-License-Identifier: Apache-2.0
#include "sm90/kernel_problem.hpp"

#include <string>

namespace gemmops::sm90 {
namespace {

Status b_strides(const TensorDesc& b, KernelProblem* p) {
  const int r = b.rank();
  const int64_t sk = b.strides[r - 2], sn = b.strides[r - 1];
  p->b_group_stride = r == 3 ? b.strides[0] : 0;
  p->b_k_stride = sk;
  p->b_n_stride = sn;
  if (sk == 1 || p->k == 1) {
    p->b_major = Major::k;
  } else if (sn == 1 || p->n == 1) {
    p->b_major = Major::mn;
  } else {
    return unsupported("B: sm90 kernels need K or N contiguous (stride 1); got strides " +
                       std::to_string(sk) + ", " + std::to_string(sn) + " for (K, N)");
  }
  return Status::ok();
}

Status a_and_out_rows(const TensorDesc& a, const TensorDesc& out, KernelProblem* p) {
  const int ra = a.rank(), ro = out.rank();
  if (a.strides[ra - 1] != 1 && p->k > 1)
    return unsupported("A: sm90 kernels need A K-major (stride 1 along K); got strides " + a.describe());
  if (out.strides[ro - 1] != 1 && p->n > 1)
    return unsupported("out: sm90 kernels need out row-major (stride 1 along N); got " + out.describe());
  p->a_row_stride = a.strides[ra - 2];
  p->out_row_stride = out.strides[ro - 2];
  return Status::ok();
}

}  // namespace

Result<KernelProblem> map_problem(const Arguments& args) {
  GEMMOPS_ASSIGN_OR_RETURN(ProblemShape shape, problem_shape(args));
  KernelProblem p;
  p.kind = shape.kind;
  p.a = &operand_a(args);
  p.b = &operand_b(args);
  p.out = &operand_out(args);
  p.n = shape.n;
  p.k = shape.k;
  switch (shape.kind) {
    case OperationKind::grouped_k:
      return unsupported("grouped_gemm_k: the K-grouped form has no sm90 kernel yet; the cpu operator serves it");
    case OperationKind::gemm:
      p.groups = 1;
      p.rows = shape.m;
      p.rows_per_group = shape.m;
      break;
    case OperationKind::batched_gemm: {
      p.groups = shape.groups;
      p.rows = shape.groups * shape.m;
      p.rows_per_group = shape.m;
      // The kernel walks rows of one (L*M, K) matrix: each batch must start where the previous ends.
      if (shape.m > 1 && (p.a->strides[0] != shape.m * p.a->strides[1] || p.out->strides[0] != shape.m * p.out->strides[1]))
        return unsupported("A/out: batched sm90 kernels need batches stacked by rows (stride[0] == M * stride[1]); got A " +
                           p.a->describe() + ", out " + p.out->describe());
      break;
    }
    case OperationKind::grouped_m: {
      const auto& g = std::get<GroupedGemmArguments>(args);
      p.groups = shape.groups;
      p.rows = p.a->shape[0];
      p.offsets = static_cast<const int32_t*>(g.offsets.data);
      break;
    }
  }
  GEMMOPS_TRY(a_and_out_rows(*p.a, *p.out, &p));
  GEMMOPS_TRY(b_strides(*p.b, &p));
  constexpr int64_t kInt32Max = 2147483647;
  if (p.rows >= kInt32Max || p.n >= kInt32Max || p.k >= kInt32Max || p.groups >= kInt32Max)
    return unsupported("A/B: sm90 kernels index rows, N and K with 32-bit integers; got rows " +
                       std::to_string(p.rows) + ", N " + std::to_string(p.n) + ", K " + std::to_string(p.k));
  return p;
}

}  // namespace gemmops::sm90

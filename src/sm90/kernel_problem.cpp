// src/sm90/kernel_problem.cpp: arguments -> KernelProblem, with the mapping's own rules
// SPDX-License-Identifier: Apache-2.0
#include "sm90/kernel_problem.hpp"

#include <string>

#include "core/constraints.hpp"

namespace gemmops::sm90 {
namespace {

Status b_strides(const TensorDesc& b, KernelProblem* p) {
  const int r = b.rank();
  const int64_t sk = b.strides[r - 2], sn = b.strides[r - 1];
  p->b_group_stride = r == 3 ? b.strides[0] : 0;
  p->b_k_stride = sk;
  p->b_n_stride = sn;
  if (sk == 1 || p->k <= 1) {  // (a B without K is never read)
    p->b_major = Major::k;
  } else if (sn == 1 || p->n == 1) {
    p->b_major = Major::mn;
  } else {
    return unsupported("B: sm90 kernels need K or N contiguous (stride 1); got strides " +
                       std::to_string(sk) + ", " + std::to_string(sn) + " for (K, N)");
  }
  return Status::ok();
}

// A (rows, K): K-major (K contiguous) or M-major (rows contiguous). A dimension of extent 1 never
// steps, so its stride says nothing about the layout; an A without K (torch gives a (rows, 0)
// tensor strides (1, 1)) is never read, so it takes the layout every form serves.
Status a_layout(const TensorDesc& a, KernelProblem* p) {
  const int r = a.rank();
  const int64_t s_row = a.strides[r - 2], s_k = a.strides[r - 1], rows = a.shape[r - 2];
  if (p->k == 0 || ((s_k == 1 || p->k == 1) && !(s_row == 1 && rows > 1))) {
    p->a_major = Major::k;
    p->a_stride = s_row;
  } else if (s_row == 1 || rows == 1) {
    p->a_major = Major::mn;
    p->a_stride = s_k;
  } else {
    return unsupported("A: sm90 kernels need A K-major or M-major (stride 1 along K or M); got " + a.describe());
  }
  return Status::ok();
}

Status out_rows(const TensorDesc& out, KernelProblem* p) {
  const int ro = out.rank();
  if (detail::k_grouped_out_m_major(p->kind, out)) {  // the TMA epilogue's M-major store
    p->out_m_major = true;
    p->out_row_stride = out.strides[2];  // between N columns
    p->out_group_stride = out.strides[0];
    return Status::ok();
  }
  if (out.strides[ro - 1] != 1 && p->n > 1)
    return unsupported("out: sm90 kernels need out row-major (stride 1 along N); got " + out.describe());
  p->out_row_stride = out.strides[ro - 2];
  return Status::ok();
}

// K-grouped: the kernel stores group g's (M, N) result at rows [g * M, (g + 1) * M) of one matrix.
Status k_grouped_out(const TensorDesc& out, KernelProblem* p) {
  const int64_t M = out.shape[1];
  if (p->out_m_major) {  // TMA: the N and group strides in 16-byte multiples (the M-major store's 3D map)
    const int64_t align = 16 / static_cast<int64_t>(size_of(out.dtype));
    if (size_of(out.dtype) != 2 || out.strides[2] % align != 0 || (out.shape[0] > 1 && out.strides[0] % align != 0))
      return unsupported("out: an M-major K-grouped out is stored by TMA in 16-bit elements, its N and group strides "
                         "multiples of 16 bytes; got " + out.describe());
    p->out_rows = out.shape[0] * M;
    return Status::ok();
  }
  if (M == 1) p->out_row_stride = out.strides[0];  // one row per group: groups are the rows
  if (out.shape[0] > 1 && M > 1 && out.strides[0] != M * out.strides[1])
    return unsupported("out: K-grouped sm90 kernels need the groups' results stacked by rows (stride[0] == M * "
                       "stride[1]); got " + out.describe());
  p->out_rows = out.shape[0] * M;
  return Status::ok();
}

// TMA reads a tensor's contiguous dimension from 16-byte-aligned starts only (anything else is an
// illegal instruction), and an M-major A is read from each group's (or batch's) first row.
Status m_major_a_starts(const KernelProblem& p) {
  if (p.kind == OperationKind::grouped_m)
    return unsupported("A: M-grouped sm90 kernels need A K-major (a group may start at any row, and TMA reads an "
                       "M-major A only from 16-byte-aligned rows); got A " + p.a->describe());
  const int64_t align = 16 / static_cast<int64_t>(size_of(p.a->dtype));
  if ((p.kind == OperationKind::batched_gemm || p.masked) && p.groups > 1 && p.rows_per_group % align != 0)
    return unsupported("A: batched and masked sm90 kernels with A M-major need M (MaxM) a multiple of " +
                       std::to_string(align) + " (each group starts a TMA box); got " + std::to_string(p.rows_per_group));
  return Status::ok();
}

// The K-grouped form's gathered A (a_k_index): each k-row is a source row's M values, copied 16
// bytes at a time, so M contiguous, M and the row stride whole 16-byte chunks (a chunk partly past
// M would read past the row, as memcheck found for the M-grouped gather's K).
Status gathered_k_layouts(const KernelProblem& p) {
  if (!p.gather_a) return Status::ok();
  const int64_t align = 16 / static_cast<int64_t>(size_of(p.a->dtype));
  if (p.a_major != Major::mn || p.a->size(0) <= 1)
    return unsupported("a_k_index: sm90 kernels gather an M-major A only (stride 1 along M: each source row's M "
                       "values contiguous); got A " + p.a->describe());
  if (p.rows % align != 0 || p.a_stride % align != 0)
    return unsupported("a_k_index: sm90 kernels copy a gathered A's source rows in whole 16-byte chunks: M and the "
                       "stride between source rows must be multiples of " + std::to_string(align) + "; got A " +
                       p.a->describe());
  return Status::ok();
}

// The same for a gathered B (b_k_index): N contiguous, N and the row stride whole 16-byte chunks.
Status gathered_k_b(const KernelProblem& p) {
  const int64_t align = 16 / static_cast<int64_t>(size_of(p.b->dtype));
  if (p.b_major != Major::mn || p.n <= 1)
    return unsupported("b_k_index: sm90 kernels gather an N-major B only (stride 1 along N: each source row's N "
                       "values contiguous); got B " + p.b->describe());
  if (p.n % align != 0 || p.b_k_stride % align != 0)
    return unsupported("b_k_index: sm90 kernels copy a gathered B's source rows in whole 16-byte chunks: N and the "
                       "stride between source rows must be multiples of " + std::to_string(align) + "; got B " +
                       p.b->describe());
  return Status::ok();
}

// Batched with M = 1: the batches are the rows of the one matrix the kernel walks.
Status single_row_batches(KernelProblem* p) {
  p->out_row_stride = p->out->strides[0];
  if (p->a_major == Major::k) {
    p->a_stride = p->a->strides[0];
  } else if (p->a->strides[0] != 1 && p->groups > 1) {
    return unsupported("A: batched sm90 kernels with M = 1 need A's batches or K contiguous; got " + p->a->describe());
  }
  return Status::ok();
}

}  // namespace

const EpilogueOps& epilogue_ops(const Arguments& args) {
  return std::visit([](const auto& a) -> const EpilogueOps& { return a.epilogue; }, args);
}

void bind_epilogue(const EpilogueOps& ops, KernelProblem* p) {
  p->alpha = ops.alpha;
  p->limit = ops.limit;
  p->bias = ops.bias ? ops.bias->data : nullptr;
  // (G, N) or (L, N): a row per group; (N,): one row for all.
  p->bias_group_stride = ops.bias && ops.bias->rank() >= 2 ? ops.bias->strides[ops.bias->rank() - 2] : 0;
  p->row_scale = ops.row_scale ? static_cast<const float*>(ops.row_scale->data) : nullptr;
  p->pre_activation = nullptr;
  p->scaled_activation = nullptr;
  p->score_grad_partials = nullptr;
  const bool gated = ops.activation == Activation::swiglu || ops.activation == Activation::swiglu_oss;
  const double element = p->out != nullptr ? static_cast<double>(size_of(p->out->dtype)) : 2.0;
  p->epilogue_bytes_per_element = 0;
  if (ops.pre_activation) {
    p->pre_activation = ops.pre_activation->data;
    p->pre_activation_row_stride = ops.pre_activation->stride(0);
    p->epilogue_bytes_per_element = element * (gated ? 1.5 : 2.0);  // out (half the columns, gated) and h
  }
  if (const auto& g = ops.activation_grad) {
    p->epilogue_bytes_per_element = element * (gated ? 5.0 : 3.0);  // h read, dh and s act(h) written
    p->pre_activation = g->pre_activation.data;  // read: h
    p->pre_activation_row_stride = g->pre_activation.stride(0);
    p->scaled_activation = g->scaled_activation.data;
    p->scaled_activation_row_stride = g->scaled_activation.stride(0);
    p->score_grad_partials = static_cast<float*>(g->score_grad_partials.data);
    p->score_grad_row_stride = g->score_grad_partials.stride(0);
  }
}

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
    case OperationKind::grouped_n:  // not in the operator's kinds: supports() refuses it before this
      return unsupported("operation: sm90 kernels do not serve grouped_gemm_n (offsets along N)");
    case OperationKind::grouped_m_masked: {  // A (G*MaxM, K) and out (G*MaxM, N) seen as one matrix each
      const auto& g = std::get<GroupedGemmArguments>(args);
      const int64_t max_m = p.a->shape[1];
      p.groups = shape.groups;
      p.rows = shape.m;
      p.rows_per_group = max_m;
      p.offsets = static_cast<const int32_t*>(g.offsets.data);
      p.masked = true;
      if (max_m > 1 && (p.a->strides[0] != max_m * p.a->strides[1] || p.out->strides[0] != max_m * p.out->strides[1]))
        return unsupported("A/out: masked sm90 kernels need the groups stacked by rows (stride[0] == MaxM * "
                           "stride[1]); got A " + p.a->describe() + ", out " + p.out->describe());
      break;
    }
    case OperationKind::grouped_k: {
      const auto& g = std::get<GroupedGemmArguments>(args);
      p.groups = shape.groups;
      p.rows = shape.m;
      p.offsets = static_cast<const int32_t*>(g.offsets.data);
      // Gathered along K: the kernel's a_row_index / b_row_index are the K indices.
      p.gather_a = g.a_k_index.has_value();
      p.a_row_index = g.a_k_index ? static_cast<const int32_t*>(g.a_k_index->data) : nullptr;
      p.gather_b = g.b_k_index.has_value();
      p.b_row_index = g.b_k_index ? static_cast<const int32_t*>(g.b_k_index->data) : nullptr;
      break;
    }
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
      p.rows = shape.m;  // out's rows: A's, unless a_row_index gathers them
      p.offsets = static_cast<const int32_t*>(g.offsets.data);
      p.gather_a = g.a_row_index.has_value();
      p.a_row_index = g.a_row_index ? static_cast<const int32_t*>(g.a_row_index->data) : nullptr;
      p.zero_tail = g.zero_tail;
      p.group_alignment = g.group_alignment;
      break;
    }
  }
  GEMMOPS_TRY(a_layout(*p.a, &p));
  GEMMOPS_TRY(out_rows(*p.out, &p));
  p.out_rows = p.rows;
  if (p.kind == OperationKind::grouped_k) GEMMOPS_TRY(k_grouped_out(*p.out, &p));
  if (p.kind == OperationKind::batched_gemm && p.rows_per_group == 1) GEMMOPS_TRY(single_row_batches(&p));
  if (p.kind == OperationKind::grouped_k) GEMMOPS_TRY(gathered_k_layouts(p));
  if (p.gather_a && p.kind != OperationKind::grouped_k && p.a_major != Major::k)
    return unsupported("a_row_index: sm90 kernels gather rows of a K-major A only (each row's K contiguous, copied "
                       "16 bytes at a time); got A " + p.a->describe());
  // A chunk only partly inside K would be a 16-byte cp.async with fewer source bytes, which
  // compute-sanitizer reports reading the whole 16 past the last row's end (H100, memcheck).
  if (p.gather_a && p.kind != OperationKind::grouped_k && (p.k * static_cast<int64_t>(size_of(p.a->dtype))) % 16 != 0)
    return unsupported("a_row_index: sm90 kernels copy a gathered A's rows in whole 16-byte chunks: K must be a "
                       "multiple of " + std::to_string(16 / size_of(p.a->dtype)) + " elements; got K " +
                       std::to_string(p.k));
  if (p.a_major == Major::mn) GEMMOPS_TRY(m_major_a_starts(p));
  GEMMOPS_TRY(b_strides(*p.b, &p));
  if (p.gather_b) GEMMOPS_TRY(gathered_k_b(p));
  bind_epilogue(epilogue_ops(args), &p);
  constexpr int64_t kInt32Max = 2147483647;
  if (p.out_rows >= kInt32Max || p.n >= kInt32Max || p.k >= kInt32Max || p.groups >= kInt32Max)
    return unsupported("out: sm90 kernels index rows, N and K with 32-bit integers; got rows " +
                       std::to_string(p.out_rows) + ", N " + std::to_string(p.n) + ", K " + std::to_string(p.k));
  return p;
}

}  // namespace gemmops::sm90

// src/cpu/cpu_operator.cpp: metadata of the CPU operators, and arguments -> a list of GemmTasks (and
// the epilogue ops after them)
// SPDX-License-Identifier: Apache-2.0
#include "cpu/cpu_operator.hpp"

#include <cstring>
#include <new>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "core/env.hpp"
#include "cpu/blocked_gemm.hpp"
#include "cpu/activation_grad.hpp"
#include "cpu/epilogue.hpp"
#include "cpu/dequantize.hpp"
#include "cpu/gather_operands.hpp"

namespace gemmops::cpu {
namespace {

constexpr double kAssumedFlopsPerUs = 2.0e4;  // ~20 GFLOP/s: CPU operators sort after GPU ones

MatrixRef matrix(const TensorDesc& t, int64_t offset_elements) {
  const auto* base = static_cast<const std::byte*>(t.data);
  return {base + offset_elements * static_cast<int64_t>(size_of(t.dtype)), t.dtype, t.stride(-2),
          t.stride(-1)};
}

OutRef out_matrix(const TensorDesc& t, int64_t offset_elements) {
  auto* base = static_cast<std::byte*>(t.data);
  return {base + offset_elements * static_cast<int64_t>(size_of(t.dtype)), t.dtype, t.stride(-2),
          t.stride(-1)};
}

// Offsets are int32 on the host (validate() and the device constraint say so). They are checked
// again here because a bad one would make this operator read or write out of bounds.
Result<std::vector<int64_t>> read_offsets(const TensorDesc& offsets, int64_t bound) {
  std::vector<int64_t> ends(static_cast<size_t>(offsets.size(0)));
  const auto* base = static_cast<const std::byte*>(offsets.data);
  int64_t previous = 0;
  for (size_t g = 0; g < ends.size(); ++g) {
    int32_t v;
    std::memcpy(&v, base + static_cast<int64_t>(g) * offsets.stride(0) * 4, 4);
    if (v < previous || v > bound) {
      return invalid_argument("offsets: must be non-decreasing and at most " + std::to_string(bound) +
                              "; got offsets[" + std::to_string(g) + "] = " + std::to_string(v) +
                              " after " + std::to_string(previous));
    }
    ends[g] = previous = v;
  }
  return ends;
}

// The masked form's row counts, each in [0, max_m] (checked again, as above).
Result<std::vector<int64_t>> read_counts(const TensorDesc& offsets, int64_t max_m) {
  std::vector<int64_t> counts(static_cast<size_t>(offsets.size(0)));
  const auto* base = static_cast<const std::byte*>(offsets.data);
  for (size_t g = 0; g < counts.size(); ++g) {
    int32_t v;
    std::memcpy(&v, base + static_cast<int64_t>(g) * offsets.stride(0) * 4, 4);
    if (v < 0 || v > max_m) {
      return invalid_argument("offsets: the masked form's row counts must be in [0, " + std::to_string(max_m) +
                              "]; got offsets[" + std::to_string(g) + "] = " + std::to_string(v));
    }
    counts[g] = v;
  }
  return counts;
}

Result<std::vector<GemmTask>> make_tasks(OperationKind kind, const Arguments& args) {
  const TensorDesc &A = operand_a(args), &B = operand_b(args), &out = operand_out(args);
  std::vector<GemmTask> tasks;
  switch (kind) {
    case OperationKind::gemm:
      tasks.push_back({matrix(A, 0), matrix(B, 0), out_matrix(out, 0), A.size(0), B.size(1), A.size(1)});
      break;
    case OperationKind::batched_gemm:
      for (int64_t l = 0; l < A.size(0); ++l) {
        tasks.push_back({matrix(A, l * A.stride(0)), matrix(B, l * B.stride(0)),
                         out_matrix(out, l * out.stride(0)), A.size(1), B.size(2), A.size(2)});
      }
      break;
    case OperationKind::grouped_m: {
      const auto& g = std::get<GroupedGemmArguments>(args);
      GEMMOPS_ASSIGN_OR_RETURN(std::vector<int64_t> ends, read_offsets(g.offsets, A.size(0)));
      const int64_t align = g.group_alignment;  // a power of two (validate()); 1: contiguous
      int64_t start = 0;
      for (size_t i = 0; i < ends.size(); ++i) {
        const auto gi = static_cast<int64_t>(i);
        start = (start + align - 1) / align * align;  // the padding rows before a group stay untouched
        if (ends[i] > start) {
          tasks.push_back({matrix(A, start * A.stride(0)), matrix(B, gi * B.stride(0)),
                           out_matrix(out, start * out.stride(0)), ends[i] - start, B.size(2), A.size(1)});
        }
        start = ends[i];
      }
      // Rows past the last group: a task without K writes zeros.
      if (g.zero_tail && start < A.size(0))
        tasks.push_back({matrix(A, start * A.stride(0)), matrix(B, 0), out_matrix(out, start * out.stride(0)),
                         A.size(0) - start, B.size(2), 0});
      break;
    }
    case OperationKind::grouped_m_masked: {
      const auto& g = std::get<GroupedGemmArguments>(args);
      GEMMOPS_ASSIGN_OR_RETURN(std::vector<int64_t> counts, read_counts(g.offsets, A.size(1)));
      for (size_t i = 0; i < counts.size(); ++i) {
        const auto gi = static_cast<int64_t>(i);
        if (counts[i] > 0) {
          tasks.push_back({matrix(A, gi * A.stride(0)), matrix(B, gi * B.stride(0)), out_matrix(out, gi * out.stride(0)),
                           counts[i], B.size(2), A.size(2)});
        }
      }
      break;
    }
    case OperationKind::grouped_k: {
      const auto& g = std::get<GroupedGemmArguments>(args);
      GEMMOPS_ASSIGN_OR_RETURN(std::vector<int64_t> ends, read_offsets(g.offsets, A.size(1)));
      int64_t start = 0;
      for (size_t i = 0; i < ends.size(); ++i) {
        // An empty K range is still a task: its out slice must become zeros.
        tasks.push_back({matrix(A, start * A.stride(1)), matrix(B, start * B.stride(0)),
                         out_matrix(out, static_cast<int64_t>(i) * out.stride(0)), A.size(0), B.size(1),
                         ends[i] - start});
        start = ends[i];
      }
      break;
    }
    case OperationKind::grouped_n: {
      const auto& g = std::get<GroupedGemmArguments>(args);
      GEMMOPS_ASSIGN_OR_RETURN(std::vector<int64_t> ends, read_offsets(g.offsets, B.size(1)));
      int64_t start = 0;
      for (size_t i = 0; i < ends.size(); ++i) {
        const auto gi = static_cast<int64_t>(i);
        if (ends[i] > start) {
          tasks.push_back({matrix(A, gi * A.stride(0)), matrix(B, start * B.stride(1)),
                           out_matrix(out, start * out.stride(1)), A.size(1), ends[i] - start, A.size(2)});
        }
        start = ends[i];
      }
      // Columns past the last group: a task without K writes zeros.
      if (g.zero_tail && start < B.size(1))
        tasks.push_back({matrix(A, 0), matrix(B, start * B.stride(1)), out_matrix(out, start * out.stride(1)),
                         A.size(1), B.size(1) - start, 0});
      break;
    }
  }
  return tasks;
}

// The epilogue's operands at one block of rows: bias row `bias_row`, row_scale from element
// `first_row` (row_scale is contiguous, so row r of the block is element first_row + r).
EpilogueRows epilogue_rows(const EpilogueOps& e, const float* acc, int64_t rows, int64_t n, OutRef out,
                           int64_t bias_row, int64_t first_row) {
  EpilogueRows r{acc, n, rows, n, out};
  if (e.bias) {
    const TensorDesc& b = *e.bias;
    r.bias = static_cast<const std::byte*>(b.data) +
             (b.rank() == 2 ? bias_row * b.stride(0) : 0) * static_cast<int64_t>(size_of(b.dtype));
    r.bias_dtype = b.dtype;
  }
  if (e.row_scale) r.row_scale = static_cast<const float*>(e.row_scale->data) + first_row;
  // The second operands (M-grouped only, validate()): row r of the block is their row first_row + r.
  if (e.pre_activation) r.pre_activation = out_matrix(*e.pre_activation, first_row * e.pre_activation->stride(0));
  if (const auto& g = e.activation_grad) {
    r.h = static_cast<const std::byte*>(g->pre_activation.data) +
          first_row * g->pre_activation.stride(0) * static_cast<int64_t>(size_of(g->pre_activation.dtype));
    r.h_dtype = g->pre_activation.dtype;
    r.h_row_stride = g->pre_activation.stride(0);
    r.scaled_activation = out_matrix(g->scaled_activation, first_row * g->scaled_activation.stride(0));
    r.score_grad_partials = out_matrix(g->score_grad_partials, first_row * g->score_grad_partials.stride(0));
  }
  return r;
}

// The product into an fp32 scratch of its own shape (the blocked GEMM unchanged), then the epilogue
// row block by row block into out: bias, activation and row scale need the whole fp32 row (a gated
// pair may lie in two tiles), and out is rounded once.
Status run_with_epilogue(OperationKind kind, const Arguments& args, int threads) {
  const TensorDesc &B = operand_b(args), &out = operand_out(args);
  const EpilogueOps& e = epilogue_of(args);
  const int64_t n = B.size(-1);
  std::vector<int64_t> shape = out.shape;
  shape.back() = n;
  TensorDesc product = TensorDesc::contiguous(DType::fp32, shape, Device::cpu());
  std::vector<float> scratch(static_cast<size_t>(product.numel()));
  product.data = scratch.data();
  Arguments into_scratch = args;
  std::visit(
      [&](auto& a) {
        a.out = product;
        a.epilogue = EpilogueOps{};
      },
      into_scratch);
  if (auto* g = std::get_if<GroupedGemmArguments>(&into_scratch)) g->zero_tail = false;  // written below
  GEMMOPS_ASSIGN_OR_RETURN(std::vector<GemmTask> tasks, make_tasks(kind, into_scratch));
  GEMMOPS_TRY(run_blocked(tasks, threads));

  const float* acc = scratch.data();
  switch (kind) {
    case OperationKind::gemm:
      apply_epilogue(e, epilogue_rows(e, acc, out.size(0), n, out_matrix(out, 0), 0, 0));
      break;
    case OperationKind::batched_gemm: {
      const int64_t m = out.size(1);
      for (int64_t l = 0; l < out.size(0); ++l) {
        EpilogueRows r = epilogue_rows(e, acc + l * m * n, m, n, out_matrix(out, l * out.stride(0)), l, 0);
        if (e.row_scale) r.row_scale = static_cast<const float*>(e.row_scale->data) + l * e.row_scale->stride(0);
        apply_epilogue(e, r);
      }
      break;
    }
    case OperationKind::grouped_m: {
      const auto& g = std::get<GroupedGemmArguments>(args);
      GEMMOPS_ASSIGN_OR_RETURN(std::vector<int64_t> ends, read_offsets(g.offsets, out.size(0)));
      const int64_t align = g.group_alignment;
      int64_t start = 0;
      for (size_t i = 0; i < ends.size(); ++i) {
        start = (start + align - 1) / align * align;  // padding rows: untouched, as without ops
        if (ends[i] > start)  // else empty (it may end before its aligned start)
          apply_epilogue(e, epilogue_rows(e, acc + start * n, ends[i] - start, n,
                                          out_matrix(out, start * out.stride(0)), static_cast<int64_t>(i), start));
        start = ends[i];
      }
      // Rows past the last group hold no product: zeros (zero_tail) or untouched, as without ops.
      if (g.zero_tail && start < out.size(0)) {
        const std::vector<float> zeros(static_cast<size_t>(out.size(1)), 0.0f);
        for (int64_t r = start; r < out.size(0); ++r) {
          store_tile(zeros.data(), 0, out_matrix(out, r * out.stride(0)), 0, 1, 0, out.size(1));
          zero_second_outputs(e, epilogue_rows(e, acc, 1, n, out_matrix(out, r * out.stride(0)), 0, r));
        }
      }
      break;
    }
    case OperationKind::grouped_m_masked: {  // row_scale (G, MaxM): group i's rows from element i * MaxM
      const auto& g = std::get<GroupedGemmArguments>(args);
      const int64_t max_m = out.size(1);
      GEMMOPS_ASSIGN_OR_RETURN(std::vector<int64_t> counts, read_counts(g.offsets, max_m));
      for (size_t i = 0; i < counts.size(); ++i) {
        const auto gi = static_cast<int64_t>(i);
        apply_epilogue(e, epilogue_rows(e, acc + gi * max_m * n, counts[i], n, out_matrix(out, gi * out.stride(0)),
                                        gi, gi * max_m));
      }
      break;
    }
    case OperationKind::grouped_k:
    case OperationKind::grouped_n: break;  // validate() refuses epilogue ops on these forms
  }
  return Status::ok();
}

}  // namespace

OperatorMetadata CpuOperator::make_metadata(OperationKind kind) {
  OperatorMetadata md;
  md.name = "cpu_" + std::string(gemmops::name(kind));
  md.provider = "cpu";
  md.target = Target::cpu();
  OperandConstraints& c = md.constraints;
  c.kinds = {kind};
  c.a_dtypes = {DType::bf16, DType::fp16, DType::fp32, DType::e4m3, DType::e5m2};
  c.b_dtypes = c.a_dtypes;
  c.out_dtypes = {DType::bf16, DType::fp16, DType::fp32};
  c.accumulator_dtypes = {DType::fp32};
  c.a_b_same_dtype = false;  // e4m3 x e5m2 is allowed; validate() refuses the non-fp8 mixes
  c.device = Device::Kind::cpu;
  c.aligned_groups = true;
  c.a_row_index = true;  // gathered into a copy of A first (gather_operands.hpp)
  c.a_k_index = c.b_k_index = true;  // likewise along K
  c.epilogue = EpilogueSupport::all();  // grouped_k and grouped_n take none (validate()), so nothing is served there
  c.scalings = ScalingSupport::all();  // fp8 scales: dequantised to fp32 before the GEMM
  md.design.schedule = Schedule::cpu_blocked;
  return md;
}

CpuOperator::CpuOperator(OperationKind kind) : Operator(make_metadata(kind)), kind_(kind) {}

Result<Artifact> CpuOperator::do_compile(const Arguments&) const {
  return Artifact(name(), nullptr, "cpu: nothing to compile");
}

Status CpuOperator::do_run(const Arguments& args, const Artifact&, Stream, Workspace) const {
  try {
    // Gathered operands: copied in product order into buffers `gathered` owns.
    std::optional<GatheredOperands> gathered;
    if (const auto* g = std::get_if<GroupedGemmArguments>(&args); g && has_gathered_operands(*g))
      gathered.emplace(gather_operands(*g));
    const Arguments& ungathered = gathered ? gathered->args : args;
    // Scaled fp8 operands: dequantised once into fp32 buffers that `scaled` owns.
    std::optional<DequantizedOperands> scaled;
    if (has_scales(ungathered)) {
      GEMMOPS_ASSIGN_OR_RETURN(DequantizedOperands d, dequantize_operands(ungathered, kind_));
      scaled.emplace(std::move(d));
    }
    const Arguments& plain = scaled ? scaled->args : ungathered;
    if (!epilogue_of(plain).empty()) return run_with_epilogue(kind_, plain, env::cpu_threads());
    GEMMOPS_ASSIGN_OR_RETURN(std::vector<GemmTask> tasks, make_tasks(kind_, plain));
    return run_blocked(tasks, env::cpu_threads());
  } catch (const std::bad_alloc&) {
    return Status(ErrorCode::out_of_memory, "cpu: could not allocate the group list or the product's scratch");
  }
}

double CpuOperator::do_estimated_time_us(const Arguments& args, const Target&) const {
  const TensorDesc &A = operand_a(args), &B = operand_b(args);
  // Upper bounds are enough for ordering: the rows, columns or K actually covered may be fewer.
  // A's leading dimension is L (batched), a stack of rows; N-grouped it is G, which splits N.
  // Masked: A (G, MaxM, K) is a stack of rows like the batched form's.
  const bool rows_of_a = kind_ == OperationKind::grouped_k || kind_ == OperationKind::grouped_n || A.size(-1) == 0;
  const double m = double(rows_of_a ? A.size(-2) : A.numel() / A.size(-1));
  const double k = double(A.size(-1)), n = double(B.size(-1));
  return 2.0 * m * n * k / kAssumedFlopsPerUs;
}

}  // namespace gemmops::cpu

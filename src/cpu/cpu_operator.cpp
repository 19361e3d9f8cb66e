// src/cpu/cpu_operator.cpp: metadata of the CPU operators, and arguments -> a list of GemmTasks
// SPDX-License-Identifier: Apache-2.0
#include "cpu/cpu_operator.hpp"

#include <cstring>
#include <new>
#include <optional>
#include <string>
#include <vector>

#include "core/env.hpp"
#include "cpu/blocked_gemm.hpp"
#include "cpu/dequantize.hpp"

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
      int64_t start = 0;
      for (size_t i = 0; i < ends.size(); ++i) {
        const auto gi = static_cast<int64_t>(i);
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
    // Scaled fp8 operands: dequantised once into fp32 buffers that `scaled` owns.
    std::optional<DequantizedOperands> scaled;
    if (has_scales(args)) {
      GEMMOPS_ASSIGN_OR_RETURN(DequantizedOperands d, dequantize_operands(args, kind_));
      scaled.emplace(std::move(d));
    }
    GEMMOPS_ASSIGN_OR_RETURN(std::vector<GemmTask> tasks, make_tasks(kind_, scaled ? scaled->args : args));
    return run_blocked(tasks, env::cpu_threads());
  } catch (const std::bad_alloc&) {
    return Status(ErrorCode::out_of_memory, "cpu: could not allocate the group list");
  }
}

double CpuOperator::do_estimated_time_us(const Arguments& args, const Target&) const {
  const TensorDesc &A = operand_a(args), &B = operand_b(args);
  // Upper bounds are enough for ordering: the rows, columns or K actually covered may be fewer.
  // A's leading dimension is L (batched), a stack of rows; N-grouped it is G, which splits N.
  const bool rows_of_a = kind_ == OperationKind::grouped_k || kind_ == OperationKind::grouped_n || A.size(-1) == 0;
  const double m = double(rows_of_a ? A.size(-2) : A.numel() / A.size(-1));
  const double k = double(A.size(-1)), n = double(B.size(-1));
  return 2.0 * m * n * k / kAssumedFlopsPerUs;
}

}  // namespace gemmops::cpu

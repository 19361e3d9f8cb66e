// tools/gemmops/problem.cpp: operand layouts per operation, group sizes per distribution, host data
// SPDX-License-Identifier: Apache-2.0
#include "problem.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <utility>

#include "element.hpp"

namespace gemmops::cli {
namespace {

using Dims = std::vector<int64_t>;

// Sizes proportional to `weights` (adding up to `total`); the remainder goes to the heaviest group.
std::vector<int64_t> split(int64_t total, const std::vector<double>& weights) {
  double sum = std::accumulate(weights.begin(), weights.end(), 0.0);
  std::vector<int64_t> sizes(weights.size(), 0);
  if (sum <= 0) return sizes;
  int64_t used = 0;
  for (size_t i = 0; i < weights.size(); ++i) used += sizes[i] = int64_t(double(total) * weights[i] / sum);
  sizes[std::max_element(weights.begin(), weights.end()) - weights.begin()] += total - used;
  return sizes;
}

// Zipf weights 1/rank^s in a seeded random order; the first `empty` of that order get weight 0.
std::vector<double> zipf_weights(int64_t groups, double s, int64_t empty, uint64_t seed) {
  std::vector<int64_t> order(static_cast<size_t>(groups));
  std::iota(order.begin(), order.end(), 0);
  SplitMix64 rng(seed);
  for (size_t i = order.size(); i > 1; --i) std::swap(order[i - 1], order[rng.next() % i]);
  std::vector<double> w(size_t(groups), 0.0);
  for (int64_t r = empty; r < groups; ++r) w[size_t(order[size_t(r)])] = 1.0 / std::pow(double(r - empty + 1), s);
  return w;
}

// B (.., K, N): K-major is the permuted (.., N, K) tensor, i.e. strides (N*K, 1, K).
Dims b_strides(bool batched, int64_t k, int64_t n, Major major) {
  Dims s = major == Major::k ? Dims{1, k} : Dims{n, 1};
  if (batched) s.insert(s.begin(), k * n);
  return s;
}

struct Layout {
  Dims a_shape, a_strides, b_shape, b_strides, out_shape, out_strides;
};

Layout layout_of(const ProblemSpec& p) {
  const int64_t g = p.groups, m = p.total_m, k = p.k, n = p.n;
  switch (p.op) {
    case OperationKind::grouped_m:
      return {{m, k}, {k, 1}, {g, k, n}, b_strides(true, k, n, p.b_major), {m, n}, {n, 1}};
    case OperationKind::grouped_k:
      return {{m, k}, {k, 1}, {k, n}, b_strides(false, k, n, p.b_major), {g, m, n}, {m * n, n, 1}};
    case OperationKind::grouped_n:
      return {{g, m, k}, {m * k, k, 1}, {k, n}, b_strides(false, k, n, p.b_major), {m, n}, {n, 1}};
    case OperationKind::gemm:
      return {{m, k}, {k, 1}, {k, n}, b_strides(false, k, n, p.b_major), {m, n}, {n, 1}};
    case OperationKind::batched_gemm:
    case OperationKind::grouped_m_masked: {  // masked: MaxM = m / g rows a group, counts in the offsets
      const int64_t mb = m / g;  // rows per batch, so that the FLOPs match the grouped problem
      return {{g, mb, k}, {mb * k, k, 1}, {g, k, n}, b_strides(true, k, n, p.b_major), {g, mb, n}, {mb * n, n, 1}};
    }
  }
  return {};
}

bool is_grouped(OperationKind op) { return op != OperationKind::gemm && op != OperationKind::batched_gemm; }

// The masked form's row counts: the distribution's sizes of half of all rows, each at most MaxM
// (a dispatcher's buffers are sized for more tokens than arrive).
std::vector<int32_t> make_counts(const ProblemSpec& p) {
  const std::vector<int32_t> ends = make_offsets(p.dist, p.total_m / 2, p.groups, p.seed);
  std::vector<int32_t> counts(ends.size());
  const int64_t max_m = p.total_m / p.groups;
  for (size_t i = 0; i < ends.size(); ++i)
    counts[i] = int32_t(std::min<int64_t>(ends[i] - (i ? ends[i - 1] : 0), max_m));
  return counts;
}

int64_t sum(const std::vector<int32_t>& v) { return std::accumulate(v.begin(), v.end(), int64_t{0}); }

// The extent the offsets split: rows (grouped_m), K (grouped_k) or columns (grouped_n).
int64_t grouped_total(const ProblemSpec& p) {
  return p.op == OperationKind::grouped_k ? p.k : p.op == OperationKind::grouped_n ? p.n : p.total_m;
}

Arguments make_arguments(const ProblemSpec& p, Device dev, void* a, void* b, void* out, void* offsets,
                         DType out_dtype) {
  Layout l = layout_of(p);
  TensorDesc ta(p.dtype, l.a_shape, l.a_strides, dev, a), tb(p.dtype, l.b_shape, l.b_strides, dev, b);
  TensorDesc tout(out_dtype, l.out_shape, l.out_strides, dev, out);
  if (!is_grouped(p.op)) return GemmArguments{ta, tb, tout, DType::fp32};
  return GroupedGemmArguments{ta, tb, tout, DType::fp32, TensorDesc(DType::i32, {p.groups}, {1}, dev, offsets)};
}

Result<DeviceBuffer> upload(const void* data, size_t bytes, int ordinal) {
  GEMMOPS_ASSIGN_OR_RETURN(DeviceBuffer buffer, DeviceBuffer::allocate(std::max<size_t>(bytes, 1), ordinal));
  if (bytes) GEMMOPS_TRY(buffer.copy_from_host(data, bytes));
  return buffer;
}

}  // namespace

std::vector<int32_t> make_offsets(Distribution dist, int64_t total, int64_t groups, uint64_t seed) {
  std::vector<int64_t> sizes;
  switch (dist) {
    case Distribution::uniform: sizes = split(total, std::vector<double>(size_t(groups), 1.0)); break;
    case Distribution::zipf: sizes = split(total, zipf_weights(groups, 1.2, 0, seed)); break;
    case Distribution::skewed: sizes = split(total, zipf_weights(groups, 1.0, groups / 4, seed)); break;
    case Distribution::empty: sizes.assign(size_t(groups), 0); break;
  }
  std::vector<int32_t> offsets(sizes.size());
  int64_t end = 0;
  for (size_t i = 0; i < sizes.size(); ++i) offsets[i] = int32_t(end += sizes[i]);
  return offsets;
}

Arguments fake_arguments(const ProblemSpec& spec, Device device) {
  return make_arguments(spec, device, nullptr, nullptr, nullptr, nullptr, spec.out_dtype);
}

Arguments Problem::host_arguments(void* out_data, DType out_dtype) const {
  return make_arguments(spec, Device::cpu(), const_cast<unsigned char*>(a.data()),
                        const_cast<unsigned char*>(b.data()), out_data,
                        const_cast<int32_t*>(offsets.data()), out_dtype);
}

double Problem::flops() const {
  const double m = double(spec.total_m), n = double(spec.n), k = double(spec.k);
  const double covered = offsets.empty() ? 0.0 : double(offsets.back());
  switch (spec.op) {
    case OperationKind::grouped_m: return 2.0 * covered * n * k;
    case OperationKind::grouped_k: return 2.0 * m * n * covered;
    case OperationKind::grouped_n: return 2.0 * m * covered * k;
    case OperationKind::gemm: return 2.0 * m * n * k;
    case OperationKind::batched_gemm: return 2.0 * double(spec.groups) * double(spec.total_m / spec.groups) * n * k;
    case OperationKind::grouped_m_masked: return 2.0 * double(sum(offsets)) * n * k;
  }
  return 0.0;
}

int64_t Problem::covered() const {
  const int64_t end = offsets.empty() ? 0 : offsets.back();
  switch (spec.op) {
    case OperationKind::grouped_m: return end * spec.n;
    case OperationKind::grouped_n: return spec.total_m * end;
    case OperationKind::grouped_m_masked: return sum(offsets) * spec.n;
    case OperationKind::grouped_k:
    case OperationKind::gemm:
    case OperationKind::batched_gemm: break;
  }
  return operand_out(args).numel();
}

bool Problem::written(int64_t element) const {
  const int64_t end = offsets.empty() ? 0 : offsets.back();
  const int64_t cols = std::max<int64_t>(operand_out(args).size(-1), 1);  // out is row-major
  switch (spec.op) {
    case OperationKind::grouped_m: return element / cols < end;
    case OperationKind::grouped_n: return element % cols < end;
    case OperationKind::grouped_m_masked: {  // row r of group g is written when r < counts[g]
      const int64_t row = element / cols, max_m = std::max<int64_t>(spec.total_m / spec.groups, 1);
      return row % max_m < offsets[size_t(row / max_m)];
    }
    case OperationKind::grouped_k:
    case OperationKind::gemm:
    case OperationKind::batched_gemm: break;
  }
  return true;
}

Status Problem::poison_out() {
  std::fill(out.begin(), out.end(), 0xFF);
  return device.is_cuda() ? d_out.fill_bytes(0xFF) : Status::ok();
}

Status Problem::fetch_out() { return device.is_cuda() ? d_out.copy_to_host(out.data(), out.size()) : Status::ok(); }

Result<Problem> make_problem(const ProblemSpec& spec, Device device) {
  Problem p;
  p.spec = spec;
  p.device = device;
  Arguments fake = fake_arguments(spec, Device::cpu());
  // At least one byte each: an empty vector may have no data pointer, which would make a fake tensor.
  auto bytes = [](const TensorDesc& t) { return std::max<size_t>(size_t(t.span_bytes()), 1); };
  p.a.resize(bytes(operand_a(fake)));
  p.b.resize(bytes(operand_b(fake)));
  p.out.resize(bytes(operand_out(fake)));
  fill_random(spec.dtype, p.a, spec.seed);
  fill_random(spec.dtype, p.b, spec.seed + 1);
  if (spec.op == OperationKind::grouped_m_masked) {
    p.offsets = make_counts(spec);
  } else if (is_grouped(spec.op)) {
    p.offsets = make_offsets(spec.dist, grouped_total(spec), spec.groups, spec.seed);
  }
  if (!device.is_cuda()) {
    p.args = p.host_arguments(p.out.data(), spec.out_dtype);
    return p;
  }
  GEMMOPS_ASSIGN_OR_RETURN(p.d_a, upload(p.a.data(), p.a.size(), device.index));
  GEMMOPS_ASSIGN_OR_RETURN(p.d_b, upload(p.b.data(), p.b.size(), device.index));
  GEMMOPS_ASSIGN_OR_RETURN(p.d_out, DeviceBuffer::allocate(p.out.size(), device.index));
  GEMMOPS_ASSIGN_OR_RETURN(p.d_offsets, upload(p.offsets.data(), p.offsets.size() * 4, device.index));
  p.args = make_arguments(spec, device, p.d_a.data(), p.d_b.data(), p.d_out.data(),
                          is_grouped(spec.op) ? p.d_offsets.data() : nullptr, spec.out_dtype);
  return p;
}

}  // namespace gemmops::cli

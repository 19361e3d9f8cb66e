// tests/support/reference.hpp: the float64 loop every operator is checked against
// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <algorithm>
#include <cstdint>
#include <variant>
#include <vector>

#include "gemmops/arguments.hpp"
#include "support/host_tensor.hpp"

namespace gemmops::testing {

/// Expected out in its logical row-major shape, and which elements the operation writes (rows
/// past offsets[G-1] of an M-grouped problem, columns past it of an N-grouped one, are not written
/// unless zero_tail: their value is 0 and must keep whatever out held before).
struct Reference {
  std::vector<double> values;
  std::vector<char> written;
};

namespace detail {

// A strided matrix (rows x cols) at element offset `offset` of `d`, as doubles, row-major.
inline std::vector<double> read_matrix(const TensorDesc& d, int64_t offset, int64_t rows, int64_t cols,
                                       int64_t row_stride, int64_t col_stride) {
  std::vector<double> m(static_cast<size_t>(rows * cols));
  const auto* base = static_cast<const std::byte*>(d.data);
  const auto size = static_cast<int64_t>(size_of(d.dtype));
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c)
      m[static_cast<size_t>(r * cols + c)] =
          load_element(d.dtype, base + (offset + r * row_stride + c * col_stride) * size);
  return m;
}

// out[r0.., :] (row-major, n columns) += A (m x k) * B (k x n), both row-major doubles.
inline void multiply_into(std::vector<double>& out, int64_t out_row0, const std::vector<double>& a,
                          const std::vector<double>& b, int64_t m, int64_t n, int64_t k) {
  for (int64_t i = 0; i < m; ++i)
    for (int64_t p = 0; p < k; ++p) {
      const double x = a[static_cast<size_t>(i * k + p)];
      double* row = out.data() + (out_row0 + i) * n;
      const double* brow = b.data() + p * n;
      for (int64_t j = 0; j < n; ++j) row[j] += x * brow[j];
    }
}

// Rows [r0, r0 + rows) of a gathered A (row r is A[index[r], :]), as doubles, row-major.
inline std::vector<double> read_gathered_rows(const TensorDesc& a, const TensorDesc& index, int64_t r0, int64_t rows,
                                              int64_t cols) {
  std::vector<double> m;
  m.reserve(static_cast<size_t>(rows * cols));
  for (int64_t r = r0; r < r0 + rows; ++r) {
    const auto row = static_cast<int64_t>(read_logical(index, r));
    const std::vector<double> one = read_matrix(a, row * a.strides[0], 1, cols, a.strides[0], a.strides[1]);
    m.insert(m.end(), one.begin(), one.end());
  }
  return m;
}

/// Columns index[c0 .. c0 + cols) of `a` (rows x its columns), as a (rows, cols) row-major matrix.
inline std::vector<double> read_gathered_columns(const TensorDesc& a, const TensorDesc& index, int64_t c0,
                                                 int64_t cols, int64_t rows) {
  std::vector<double> m(static_cast<size_t>(rows * cols));
  for (int64_t c = 0; c < cols; ++c) {
    const auto col = static_cast<int64_t>(read_logical(index, c0 + c));
    const std::vector<double> one = read_matrix(a, col * a.strides[1], rows, 1, a.strides[0], a.strides[1]);
    for (int64_t r = 0; r < rows; ++r) m[static_cast<size_t>(r * cols + c)] = one[static_cast<size_t>(r)];
  }
  return m;
}

inline int32_t read_offset(const TensorDesc& offsets, int64_t g) {
  return static_cast<int32_t>(read_logical(offsets, g));
}

}  // namespace detail

/// The exact-as-double result of valid host `args` of any kind, dtype and strides.
inline Reference reference_result(const Arguments& args) {
  const TensorDesc& A = operand_a(args);
  const TensorDesc& B = operand_b(args);
  const TensorDesc& out = operand_out(args);
  Reference ref;
  ref.values.assign(static_cast<size_t>(out.numel()), 0.0);
  ref.written.assign(static_cast<size_t>(out.numel()), 1);
  using detail::read_matrix;
  if (std::holds_alternative<GemmArguments>(args)) {
    const bool batched = A.rank() == 3;
    const int64_t L = batched ? A.shape[0] : 1, M = A.size(-2), K = A.size(-1), N = B.size(-1);
    for (int64_t l = 0; l < L; ++l) {
      const int64_t oa = batched ? l * A.strides[0] : 0, ob = batched ? l * B.strides[0] : 0;
      auto a = read_matrix(A, oa, M, K, A.stride(-2), A.stride(-1));
      auto b = read_matrix(B, ob, K, N, B.stride(-2), B.stride(-1));
      detail::multiply_into(ref.values, l * M, a, b, M, N, K);
    }
    return ref;
  }
  const auto& g = std::get<GroupedGemmArguments>(args);
  const int64_t G = g.offsets.size(0);
  int64_t start = 0;
  if (A.rank() == 3 && B.rank() == 3) {  // masked M-grouped: rows [0, count) of each group's MaxM
    const int64_t max_m = A.size(1), K = A.size(2), N = B.size(2);
    for (int64_t i = 0; i < G; ++i) {
      const int64_t count = detail::read_offset(g.offsets, i);
      auto a = read_matrix(A, i * A.strides[0], count, K, A.strides[1], A.strides[2]);
      auto b = read_matrix(B, i * B.strides[0], K, N, B.strides[1], B.strides[2]);
      detail::multiply_into(ref.values, i * max_m, a, b, count, N, K);
      for (int64_t e = (i * max_m + count) * N; e < (i + 1) * max_m * N; ++e) ref.written[static_cast<size_t>(e)] = 0;
    }
    return ref;
  }
  if (B.rank() == 3) {  // M-grouped (A's rows gathered through a_row_index when it is given)
    const int64_t K = A.size(1), N = B.size(2), align = g.group_alignment, total_m = out.size(0);
    int64_t reach = start;  // how far the offsets reach: the zero tail starts there
    for (int64_t i = 0; i < G; ++i) {
      // Padding rows: never written; a start rounded up past TotalM (an empty group after one that
      // ends near it) stays at TotalM.
      const int64_t aligned = std::min<int64_t>((start + align - 1) / align * align, total_m);
      // An empty group may end where the previous one did, before its aligned start.
      const int64_t end = std::max<int64_t>(detail::read_offset(g.offsets, i), aligned);
      reach = std::max<int64_t>(reach, std::min<int64_t>(detail::read_offset(g.offsets, i), total_m));
      for (int64_t e = start * N; e < aligned * N; ++e) ref.written[static_cast<size_t>(e)] = 0;
      start = aligned;
      auto a = g.a_row_index ? detail::read_gathered_rows(A, *g.a_row_index, start, end - start, K)
                             : read_matrix(A, start * A.strides[0], end - start, K, A.strides[0], A.strides[1]);
      auto b = read_matrix(B, i * B.strides[0], K, N, B.strides[1], B.strides[2]);
      detail::multiply_into(ref.values, start, a, b, end - start, N, K);
      start = end;
    }
    if (!g.zero_tail)
      for (int64_t e = start * N, n = out.numel(); e < n; ++e) ref.written[static_cast<size_t>(e)] = 0;
    else  // past an empty last aligned group, the rows up to its rounded-up start are tail too
      for (int64_t e = reach * N; e < start * N; ++e) ref.written[static_cast<size_t>(e)] = 1;
    return ref;
  }
  if (A.rank() == 3) {  // N-grouped
    const int64_t M = A.size(1), K = A.size(2), N = B.size(1);
    for (int64_t i = 0; i < G; ++i) {
      const int64_t end = detail::read_offset(g.offsets, i);
      auto a = read_matrix(A, i * A.strides[0], M, K, A.strides[1], A.strides[2]);
      auto b = read_matrix(B, start * B.strides[1], K, end - start, B.strides[0], B.strides[1]);
      std::vector<double> part(static_cast<size_t>(M * (end - start)), 0.0);
      detail::multiply_into(part, 0, a, b, M, end - start, K);
      for (int64_t r = 0; r < M; ++r)
        for (int64_t c = start; c < end; ++c)
          ref.values[static_cast<size_t>(r * N + c)] = part[static_cast<size_t>(r * (end - start) + c - start)];
      start = end;
    }
    if (!g.zero_tail)
      for (int64_t r = 0; r < M; ++r)
        for (int64_t c = start; c < N; ++c) ref.written[static_cast<size_t>(r * N + c)] = 0;
    return ref;
  }
  const int64_t M = A.size(0), N = B.size(1);  // K-grouped (A's columns, B's rows gathered through the K indices)
  for (int64_t i = 0; i < G; ++i) {
    const int64_t end = detail::read_offset(g.offsets, i);
    auto a = g.a_k_index ? detail::read_gathered_columns(A, *g.a_k_index, start, end - start, M)
                         : read_matrix(A, start * A.strides[1], M, end - start, A.strides[0], A.strides[1]);
    auto b = g.b_k_index ? detail::read_gathered_rows(B, *g.b_k_index, start, end - start, N)
                         : read_matrix(B, start * B.strides[0], end - start, N, B.strides[0], B.strides[1]);
    detail::multiply_into(ref.values, i * M, a, b, M, N, end - start);
    start = end;
  }
  return ref;
}

/// reference_result(args).values.
inline std::vector<double> reference(const Arguments& args) { return reference_result(args).values; }

}  // namespace gemmops::testing

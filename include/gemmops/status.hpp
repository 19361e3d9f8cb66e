// include/gemmops/status.hpp: ErrorCode, Status and Result<T>: every expected failure carries a sentence
// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <variant>

namespace gemmops {

/// The kinds of expected failure. Bugs are not in this list: they abort through GEMMOPS_ASSERT.
enum class ErrorCode {
  ok,
  invalid_argument,  ///< the arguments break a rule of the operation (shape, dtype, device, ...)
  unsupported,       ///< valid arguments that this operator or target cannot serve
  no_device,         ///< no CUDA driver or device, or the device is not the required one
  compile_failed,    ///< NVRTC rejected a kernel, or JIT is disabled and nothing is cached
  driver_error,      ///< a CUDA driver call failed
  out_of_memory,     ///< an allocation failed
  internal,          ///< an invariant of gemmops itself broke; please report
};

/// Lower-case name of a code, e.g. "invalid_argument".
std::string_view to_string(ErrorCode code);

/// The result of an operation that returns nothing. Cheap when ok (no allocation).
/// Messages start with the operand, state the rule and what was seen, lower case, no trailing period:
///   "offsets: must be int32 with shape (G,) = (12,); got int64 with shape (12,)"
class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(ErrorCode code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status ok() { return {}; }

  explicit operator bool() const { return code_ == ErrorCode::ok; }
  bool is_ok() const { return code_ == ErrorCode::ok; }
  ErrorCode code() const { return code_; }
  const std::string& message() const { return message_; }
  /// "invalid_argument: offsets: must be int32 ..." (or "ok").
  std::string to_string() const;

 private:
  ErrorCode code_ = ErrorCode::ok;
  std::string message_;
};

inline Status invalid_argument(std::string m) { return {ErrorCode::invalid_argument, std::move(m)}; }
inline Status unsupported(std::string m) { return {ErrorCode::unsupported, std::move(m)}; }
inline Status no_device(std::string m) { return {ErrorCode::no_device, std::move(m)}; }
inline Status compile_failed(std::string m) { return {ErrorCode::compile_failed, std::move(m)}; }
inline Status driver_error(std::string m) { return {ErrorCode::driver_error, std::move(m)}; }
inline Status internal_error(std::string m) { return {ErrorCode::internal, std::move(m)}; }

/// A value or the Status that explains why there is none. Shaped like std::expected.
template <class T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}                // NOLINT: implicit by design
  Result(Status status) : v_(std::move(status)) {}         // NOLINT: must not be ok
  bool has_value() const { return v_.index() == 0; }
  explicit operator bool() const { return has_value(); }
  T& value() & { return std::get<0>(v_); }
  const T& value() const& { return std::get<0>(v_); }
  T&& value() && { return std::get<0>(std::move(v_)); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  /// The failure; an ok Status when a value is held.
  Status status() const { return has_value() ? Status::ok() : std::get<1>(v_); }

 private:
  std::variant<T, Status> v_;
};

}  // namespace gemmops

#define GEMMOPS_CONCAT_INNER(a, b) a##b
#define GEMMOPS_CONCAT(a, b) GEMMOPS_CONCAT_INNER(a, b)

/// Return the Status of `expr` from the enclosing function when it is not ok.
#define GEMMOPS_TRY(expr)                                       \
  do {                                                          \
    ::gemmops::Status gemmops_try_status_ = (expr);             \
    if (!gemmops_try_status_) return gemmops_try_status_;       \
  } while (0)

/// `GEMMOPS_ASSIGN_OR_RETURN(auto x, make_x())`: unwrap a Result or return its Status.
#define GEMMOPS_ASSIGN_OR_RETURN(lhs, expr)                                       \
  auto GEMMOPS_CONCAT(gemmops_result_, __LINE__) = (expr);                        \
  if (!GEMMOPS_CONCAT(gemmops_result_, __LINE__))                                 \
    return GEMMOPS_CONCAT(gemmops_result_, __LINE__).status();                    \
  lhs = std::move(GEMMOPS_CONCAT(gemmops_result_, __LINE__)).value()

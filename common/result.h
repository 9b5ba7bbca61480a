// Result<T>: either a value or a non-OK Status (docs/conventions.md "Errors").
//
// Shaped so that a move to C++23 can make it an alias of std::expected<T, Status>.
// Thread-safety: a value type; no internal synchronization.
#pragma once

#include <cassert>
#include <optional>
#include <utility>

#include "common/status.h"

namespace reelfs {

template <class T>
class [[nodiscard]] Result {
 public:
  // Implicit from a value and from an error, so `return value;` and `return status;` both work.
  Result(T value) : value_(std::move(value)) {}         // NOLINT(google-explicit-constructor)
  Result(Status status) : status_(std::move(status)) {  // NOLINT(google-explicit-constructor)
    assert(!status_.ok() && "Result constructed from an OK Status carries no value");
    if (status_.ok()) status_ = Status::Internal("Result built from OK status without value");
  }

  bool ok() const { return value_.has_value(); }
  const Status& status() const& { return status_; }
  Status status() && { return std::move(status_); }

  T& value() & {
    assert(ok());
    return *value_;
  }
  const T& value() const& {
    assert(ok());
    return *value_;
  }
  T value() && {
    assert(ok());
    return std::move(*value_);
  }
  T value_or(T fallback) const& { return ok() ? *value_ : std::move(fallback); }

  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

 private:
  std::optional<T> value_;
  Status status_;  // OK iff value_ holds a value
};

}  // namespace reelfs

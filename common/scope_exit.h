// ScopeExit: runs a callable when the scope ends, for the rare cleanup no handle type fits
// (Core Guidelines E.19 final_action). Thread-safety: none.
#pragma once

#include <utility>

namespace reelfs {

template <class F>
class ScopeExit {
 public:
  explicit ScopeExit(F fn) : fn_(std::move(fn)) {}
  ~ScopeExit() {
    if (armed_) fn_();
  }
  ScopeExit(const ScopeExit&) = delete;
  ScopeExit& operator=(const ScopeExit&) = delete;
  void Dismiss() { armed_ = false; }

 private:
  F fn_;
  bool armed_ = true;
};

}  // namespace reelfs

// Progress: the one-line progress bar of `reelfs cp` uploads on a terminal (cli/README.md).
//
// When enabled (stderr is a terminal and --quiet was not given), a thread rewrites one stderr
// line about four times a second: bytes sent of the total, percent, rate, ETA and files done
// ("\r" then the line, then "erase to end of line"). Disabled, it prints no bar; Note still
// prints its lines, so error messages are the same either way. The bytes counted are the bytes
// handed to the uploader, which sends them with at most a few parts buffered per file.
//
// Thread-safety: every method may be called from any thread; Note's lines and the bar never
// interleave (one mutex around stderr).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>
#include <thread>

#include "common/mutex.h"
#include "common/thread_annotations.h"

namespace reelfs::cli {

// What the bar shows, one snapshot.
struct ProgressSnapshot {
  uint64_t bytes = 0;
  uint64_t total_bytes = 0;  // 0 with `total_known` false: stdin, size unknown
  bool total_known = true;
  uint64_t files_done = 0;
  uint64_t files = 0;
  double seconds = 0;  // since the start
};

// The bar's text, without "\r" or escape codes ("1.2 GiB / 4.0 GiB  30%  512.0 MiB/s  ETA 0:05
// 3/200 files"); pure, for tests.
std::string FormatProgress(const ProgressSnapshot& s);

// "1.5 GiB", "12.0 MiB", "512 B": binary units, one decimal above bytes.
std::string FormatBytes(double bytes);

class Progress {
 public:
  // `total_bytes` is ignored when `total_known` is false.
  Progress(bool enabled, uint64_t total_bytes, bool total_known, uint64_t files);
  ~Progress();  // stops the thread (as Finish does)
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;

  void AddBytes(uint64_t n) { bytes_.fetch_add(n, std::memory_order_relaxed); }
  void FileDone() { files_done_.fetch_add(1, std::memory_order_relaxed); }
  // Prints `line` (a newline is added) on stderr above the bar.
  void Note(std::string_view line) EXCLUDES(mu_);
  // Draws the final state once more, ends the bar's line and stops the thread. Idempotent.
  void Finish() EXCLUDES(mu_);

 private:
  ProgressSnapshot Snapshot() const;
  void DrawLocked() REQUIRES(mu_);
  void Loop() EXCLUDES(mu_);

  const bool enabled_;
  const uint64_t total_bytes_;
  const bool total_known_;
  const uint64_t files_;
  const std::chrono::steady_clock::time_point start_;
  std::atomic<uint64_t> bytes_{0};
  std::atomic<uint64_t> files_done_{0};

  Mutex mu_;
  CondVar cv_;
  bool stop_ GUARDED_BY(mu_) = false;
  bool drawn_ GUARDED_BY(mu_) = false;  // a bar line is on the terminal, not yet ended
  std::thread thread_;                  // declared last: started once the state above exists
};

}  // namespace reelfs::cli

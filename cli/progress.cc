#include "cli/progress.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>

#include <fmt/format.h>

namespace reelfs::cli {

std::string FormatBytes(double bytes) {
  static constexpr const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  int unit = 0;
  while (bytes >= 1024 && unit < 5) {
    bytes /= 1024;
    ++unit;
  }
  if (unit == 0) return fmt::format("{:.0f} B", bytes);
  return fmt::format("{:.1f} {}", bytes, kUnits[unit]);
}

std::string FormatProgress(const ProgressSnapshot& s) {
  std::string line = FormatBytes(static_cast<double>(s.bytes));
  if (s.total_known) {
    line += " / " + FormatBytes(static_cast<double>(s.total_bytes));
    const double pct = s.total_bytes == 0 ? 100.0 : 100.0 * s.bytes / s.total_bytes;
    line += fmt::format("  {:3.0f}%", std::min(pct, 100.0));
  }
  const double rate = s.seconds > 0 ? s.bytes / s.seconds : 0;
  line += "  " + FormatBytes(rate) + "/s";
  if (s.total_known && rate > 0 && s.bytes < s.total_bytes) {
    const auto eta = static_cast<uint64_t>(std::ceil((s.total_bytes - s.bytes) / rate));
    if (eta >= 3600) {
      line += fmt::format("  ETA {}:{:02}:{:02}", eta / 3600, eta / 60 % 60, eta % 60);
    } else {
      line += fmt::format("  ETA {}:{:02}", eta / 60, eta % 60);
    }
  }
  if (s.files > 1) line += fmt::format("  {}/{} files", s.files_done, s.files);
  return line;
}

Progress::Progress(bool enabled, uint64_t total_bytes, bool total_known, uint64_t files)
    : enabled_(enabled),
      total_bytes_(total_bytes),
      total_known_(total_known),
      files_(files),
      start_(std::chrono::steady_clock::now()) {
  if (enabled_) thread_ = std::thread([this] { Loop(); });
}

Progress::~Progress() { Finish(); }

ProgressSnapshot Progress::Snapshot() const {
  return {
      .bytes = bytes_.load(std::memory_order_relaxed),
      .total_bytes = total_bytes_,
      .total_known = total_known_,
      .files_done = files_done_.load(std::memory_order_relaxed),
      .files = files_,
      .seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count()};
}

void Progress::DrawLocked() {
  // \r, the line, then "erase to the end of the line" (a shorter line leaves no tail behind).
  std::string line = "\r" + FormatProgress(Snapshot()) + "\x1b[K";
  std::fwrite(line.data(), 1, line.size(), stderr);
  std::fflush(stderr);
  drawn_ = true;
}

void Progress::Note(std::string_view line) {
  MutexLock lock(mu_);
  std::string text;
  if (drawn_) text = "\r\x1b[K";  // the bar's line becomes the note's
  text.append(line);
  text.push_back('\n');
  std::fwrite(text.data(), 1, text.size(), stderr);
  std::fflush(stderr);
  drawn_ = false;
  if (enabled_ && !stop_) DrawLocked();
}

void Progress::Finish() {
  {
    MutexLock lock(mu_);
    if (stop_) return;
    stop_ = true;
    if (enabled_) {
      DrawLocked();
      std::fputc('\n', stderr);
      std::fflush(stderr);
      drawn_ = false;
    }
    cv_.notify_all();
  }
  if (thread_.joinable()) thread_.join();
}

void Progress::Loop() {
  MutexLock lock(mu_);
  while (!stop_) {
    DrawLocked();
    // Not a deadline anyone waits on: only how often the line is redrawn.
    cv_.wait_for(lock, std::chrono::milliseconds(250));
  }
}

}  // namespace reelfs::cli

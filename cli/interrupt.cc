#include "cli/interrupt.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>

namespace reelfs::cli {
namespace {

// A signal handler gets no user data: the pipe's write end is the one global here, set while an
// InterruptCancel exists (Install refuses a second one).
std::atomic<int> g_write_fd{-1};

extern "C" void OnSignal(int sig) {
  const int saved = errno;
  const int fd = g_write_fd.load();
  const unsigned char byte = static_cast<unsigned char>(sig);
  if (fd >= 0 && ::write(fd, &byte, 1) < 0) {
    // Nothing a handler can do: the pipe is full of signals already.
  }
  errno = saved;
}

}  // namespace

Result<std::unique_ptr<InterruptCancel>> InterruptCancel::Install(
    std::shared_ptr<CancellationToken> token) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC | O_NONBLOCK) != 0) return ErrnoToStatus(errno, "pipe2");
  UniqueFd read_end(fds[0]);
  UniqueFd write_end(fds[1]);
  // The reader blocks; only the handler's end must never block.
  if (::fcntl(read_end.get(), F_SETFL, 0) != 0) return ErrnoToStatus(errno, "fcntl");
  int expected = -1;
  if (!g_write_fd.compare_exchange_strong(expected, write_end.get())) {
    return Status(StatusCode::kFailedPrecondition, "an InterruptCancel is already installed");
  }
  std::unique_ptr<InterruptCancel> self(
      new InterruptCancel(std::move(token), std::move(read_end), std::move(write_end)));
  struct sigaction action {};
  action.sa_handler = OnSignal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;
  for (auto [sig, old, installed] :
       {std::tuple{SIGINT, &self->old_int_, &self->installed_int_},
        std::tuple{SIGTERM, &self->old_term_, &self->installed_term_}}) {
    if (::sigaction(sig, nullptr, old) != 0) continue;
    if (old->sa_handler == SIG_IGN) continue;  // ignored by whoever started us: keep it so
    *installed = ::sigaction(sig, &action, nullptr) == 0;
  }
  self->watcher_ = std::thread([p = self.get()] { p->Watch(); });
  return self;
}

InterruptCancel::InterruptCancel(std::shared_ptr<CancellationToken> token, UniqueFd read_end,
                                 UniqueFd write_end)
    : token_(std::move(token)), read_end_(std::move(read_end)), write_end_(std::move(write_end)) {}

InterruptCancel::~InterruptCancel() {
  if (installed_int_) ::sigaction(SIGINT, &old_int_, nullptr);
  if (installed_term_) ::sigaction(SIGTERM, &old_term_, nullptr);
  const unsigned char stop = 0;
  while (::write(write_end_.get(), &stop, 1) < 0 && errno == EINTR) {
  }
  if (watcher_.joinable()) watcher_.join();
  g_write_fd.store(-1);
}

void InterruptCancel::Watch() {
  while (true) {
    unsigned char byte = 0;
    const ssize_t n = ::read(read_end_.get(), &byte, 1);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0 || byte == 0) return;
    const int sig = byte;
    // A second signal of the same kind takes its default action: the user insists.
    ::signal(sig, SIG_DFL);
    int expected = 0;
    if (signal_.compare_exchange_strong(expected, sig)) token_->Cancel();
  }
}

}  // namespace reelfs::cli

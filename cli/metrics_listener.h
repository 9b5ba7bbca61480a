// MetricsListener: `reelfs mount --metrics-listen HOST:PORT`, a minimal HTTP/1.1 endpoint that
// answers `GET /metrics` with the mount's Prometheus text exposition (what `render` returns) and
// every other request with 404 or 405. One thread accepts and answers connections one at a
// time, Connection: close: a scraper asks every few seconds, so there is nothing to gain from
// more. A client that has not sent its request head within 5 s is dropped, a head over 8 KiB
// answered 431; neither can hold up the mount, whose requests never wait on this thread, nor
// its unmount (the destructor wakes the thread out of a wait for a silent client).
//
// Thread-safety: Start and the destructor from one thread; `render` runs on the listener's
// thread and must be safe to call concurrently with the mount's work.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "common/listen_address.h"
#include "common/result.h"
#include "common/unique_fd.h"

namespace reelfs::cli {

class MetricsListener {
 public:
  using Render = std::function<std::string()>;

  // Binds `address` (port 0: an ephemeral port, see port()) and starts answering.
  static Result<std::unique_ptr<MetricsListener>> Start(const ListenAddress& address,
                                                        Render render);
  // Stops accepting, drops a connection still sending its request, joins the thread.
  ~MetricsListener();
  MetricsListener(const MetricsListener&) = delete;
  MetricsListener& operator=(const MetricsListener&) = delete;

  uint16_t port() const { return port_; }
  // "HOST:PORT" as bound, for the log.
  std::string bound() const;

 private:
  MetricsListener(UniqueFd listen_fd, UniqueFd wake_read, UniqueFd wake_write, std::string host,
                  uint16_t port, Render render);
  void Loop();
  void Answer(int fd);

  // Teardown order: the thread is joined in the destructor's body, before any fd closes.
  UniqueFd listen_fd_;
  UniqueFd wake_read_;  // the destructor writes a byte to wake_write_ to end poll()
  UniqueFd wake_write_;
  std::string host_;
  uint16_t port_;
  Render render_;
  std::thread thread_;
};

}  // namespace reelfs::cli

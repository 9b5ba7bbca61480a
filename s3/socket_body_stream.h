// SocketBodyStream: the BodyStream over a connected socket already positioned at a body's first
// byte (the receiver in client/socket_body_source.cc makes them; tests make them over
// socketpairs).
//
// Thread-safety: as BodyStream: one user at a time, Abort from any thread.
#pragma once

#include <cstdint>

#include "common/unique_fd.h"
#include "s3/body_stream.h"

namespace reelfs::s3 {

class SocketBodyStream final : public BodyStream {
 public:
  // `length` body bytes of the object from `offset` are to come on `fd`.
  SocketBodyStream(UniqueFd fd, uint64_t offset, uint64_t length)
      : fd_(std::move(fd)), offset_(offset), remaining_(length) {}
  int fd() const override { return fd_.get(); }
  uint64_t offset() const override { return offset_; }
  uint64_t remaining() const override { return remaining_; }
  void Consumed(uint64_t n) override;
  void Abort() override;

 private:
  UniqueFd fd_;
  uint64_t offset_;
  uint64_t remaining_;
};

}  // namespace reelfs::s3

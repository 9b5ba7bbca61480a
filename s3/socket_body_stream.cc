#include "s3/socket_body_stream.h"

#include <algorithm>

#include <sys/socket.h>

namespace reelfs::s3 {

void SocketBodyStream::Consumed(uint64_t n) {
  n = std::min(n, remaining_);
  offset_ += n;
  remaining_ -= n;
}

// shutdown, not close: a splice blocked on the socket returns, and the descriptor stays valid
// until the owner drops the stream.
void SocketBodyStream::Abort() { ::shutdown(fd_.get(), SHUT_RDWR); }

}  // namespace reelfs::s3

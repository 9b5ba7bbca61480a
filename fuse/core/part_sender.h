// PartSender: how an Upload (upload.h) sends one payload: a full part (UploadPart) or a whole
// small file (PutObject). The Upload keeps the schedule (create, parts in flight, the memory
// budget, sticky errors, abort, complete); the sender only moves bytes and answers the ETag and
// the path they took. Creating, completing and aborting a multipart upload stay on the store.
//
// Two senders (docs/semantics.md "Writes", docs/protocols/rdma-put.md "The mount"):
//   * the store's: every payload is a PutObject / UploadPart through the ObjectStore (HTTP);
//   * the data channel's (`reelfs mount --rdma`): a payload whose buffer is registered goes through
//     DataChannel::Put, where the server RDMA-reads it out of the buffer, and the channel itself
//     falls back to HTTP per endpoint exactly as fetches do (a declined endpoint, a failed
//     transfer: the same bytes as an HTTP body, after the window is fenced). The sender sends the
//     payload through the store itself, with the same bytes, when the channel cannot take it: the
//     buffer is not registered, the channel does not upload (kUnimplemented, DC), or the channel
//     refuses the window (quarantined or busy, as the prefetcher's refused fetches: the buffer is
//     then retired, see PartSent::retire_buffer). Any other error of the channel is the part's:
//     the channel has answered it after its own HTTP attempt, or the server refused the request
//     (NoSuchUpload, AccessDenied, ...), and sending again would only repeat it.
// A payload is sent exactly once by whichever path answers: never a lost or a doubled part (the
// channel's own fallback overwrites a part the server may have stored, with the same bytes).
//
// Counters: bytes and payloads per path, kept by the sender (one per mount) and shown in
// user.reelfs.metrics (rdma_put_*, http_put_*, put_fallbacks).
//
// Thread-safety: Send and counters may be called from any thread; `done` runs exactly once, on
// the caller's thread or the store's / channel's.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "rdmaio/data_channel.h"
#include "s3/object_store.h"

namespace reelfs::fuse {

// One payload. The bytes (and the buffer behind `window`) must stay untouched until `done`.
struct PartPayload {
  std::string bucket;
  std::string key;
  int part_number = 0;       // 1..10000: an UploadPart; 0: a PutObject of the whole file
  std::string upload_id;     // UploadPart only
  std::string content_type;  // PutObject only; empty: none sent
  std::span<const std::byte> body;
  // The same bytes as a registered window (region null: the buffer is not registered).
  rdmaio::RegisteredWindow window;
};

struct PartSent {
  std::string etag;  // quotes stripped: what CompleteMultipartUpload names
  rdmaio::DataPath via = rdmaio::DataPath::kHttp;
  // The channel refused the buffer's window (quarantined: a fence on it failed earlier): the
  // server might still access it, so the buffer must never be reused. The bytes went over HTTP.
  bool retire_buffer = false;
};

struct PutCounters {
  uint64_t rdma_put_parts = 0;  // payloads the server read over RDMA (parts and PutObjects)
  uint64_t rdma_put_bytes = 0;
  uint64_t http_put_parts = 0;  // payloads sent as HTTP bodies, by the channel or the store
  uint64_t http_put_bytes = 0;
  // Of the HTTP ones, payloads that were offered to the channel first (it declined, failed the
  // transfer or refused the window); an unregistered buffer is not a fallback.
  uint64_t put_fallbacks = 0;
  uint64_t put_failures = 0;  // payloads that ended with an error
};

class PartSender {
 public:
  virtual ~PartSender() = default;
  virtual void Send(const PartPayload& payload, s3::Callback<PartSent> done) = 0;
  virtual PutCounters counters() const = 0;
};

// Every payload through `store`.
std::shared_ptr<PartSender> CreateStorePartSender(std::shared_ptr<s3::ObjectStore> store);

// Registered payloads through `channel` (falling back as above), the rest through `store`.
std::shared_ptr<PartSender> CreateChannelPartSender(std::shared_ptr<rdmaio::DataChannel> channel,
                                                    std::shared_ptr<s3::ObjectStore> store);

}  // namespace reelfs::fuse

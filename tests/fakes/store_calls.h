// Blocking PUT and GET of whole byte vectors through any ObjectStore (our client against the
// gateway, s3rver, the fake): the shared part of the tests that store objects and read them back.
// Thread-safety: each call is independent; never call from an ObjectStore callback (s3/await.h).
#pragma once

#include <cstddef>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "s3/await.h"
#include "s3/object_store.h"

namespace reelfs::testing {

// Stores `body` at bucket/key; the ETag.
inline Result<std::string> PutBytes(s3::ObjectStore& store, const std::string& bucket,
                                    const std::string& key, std::span<const std::byte> body) {
  const s3::PutObjectRequest req{bucket, key, body};
  return s3::Await<std::string>([&](auto cb) { store.PutObject(req, cb); });
}

// Reads `range` (the whole object without one) into a buffer of `capacity` bytes; the bytes
// delivered. A capacity smaller than the answer is the store's kOutOfRange, as for any caller.
inline Result<std::vector<std::byte>> GetBytes(s3::ObjectStore& store, const std::string& bucket,
                                               const std::string& key,
                                               std::optional<s3::ByteRange> range,
                                               size_t capacity) {
  std::vector<std::byte> buf(capacity);
  s3::GetObjectRequest req;
  req.bucket = bucket;
  req.key = key;
  req.range = range;
  req.buffer = buf;
  auto r = s3::Await<s3::GetObjectResult>([&](auto cb) { store.GetObject(req, cb); });
  if (!r.ok()) return r.status();
  buf.resize(r->bytes);
  return buf;
}

}  // namespace reelfs::testing

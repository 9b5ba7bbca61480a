// What a failed S3 call means to the person at the terminal: "bucket 'b' does not exist",
// "no such key s3://b/k", "the server refused the secret key (SignatureDoesNotMatch)", "s3://b/k
// is archived on tape: run `reelfs stage s3://b/k`", instead of the status's code name and the
// internal call that failed. The S3 error code and request id stay in the text (they are what a
// server operator asks for); secrets never appear (Status carries none).
//
// Thread-safety: a pure function.
#pragma once

#include <string>
#include <string_view>

#include "common/status.h"

namespace reelfs::cli {

// What the failed call was about. `key` empty: the bucket (or a prefix listing); `endpoint`
// empty: not named in the text.
struct S3Subject {
  std::string_view bucket;
  std::string_view key;
  std::string_view endpoint;
};

// `s` must not be OK. One line, no trailing newline, no "reelfs cmd: " prefix.
std::string Explain(const Status& s, const S3Subject& subject);

}  // namespace reelfs::cli

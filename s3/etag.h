// BareEtag: an ETag as compared, without W/ and quotes (listings, HEAD and GET spell it
// differently; servers disagree on quoting).
#pragma once

#include <string_view>

namespace reelfs::s3 {

inline std::string_view BareEtag(std::string_view etag) {
  if (etag.starts_with("W/")) etag.remove_prefix(2);
  if (etag.size() >= 2 && etag.front() == '"' && etag.back() == '"') {
    etag = etag.substr(1, etag.size() - 2);
  }
  return etag;
}

}  // namespace reelfs::s3

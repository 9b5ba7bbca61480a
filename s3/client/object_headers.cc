#include "s3/client/object_headers.h"

#include <cstdlib>

#include "common/log.h"
#include "common/strings.h"
#include "s3/protocol/restore_header.h"
#include "s3/protocol/time_format.h"

namespace reelfs::s3 {

bool IsWeakEtag(std::string_view etag) { return etag.rfind("W/", 0) == 0; }

std::string StripEtag(std::string_view etag) {
  if (IsWeakEtag(etag)) etag.remove_prefix(2);
  return std::string(Unquote(etag));
}

ObjectInfo ObjectInfoFromHeaders(const std::vector<std::pair<std::string, std::string>>& headers,
                                 std::string key) {
  ObjectInfo info;
  info.key = std::move(key);
  for (const auto& [name, value] : headers) {
    if (name == "content-length") {
      info.size = std::strtoull(value.c_str(), nullptr, 10);
    } else if (name == "etag") {
      info.etag = StripEtag(value);
    } else if (name == "last-modified") {
      auto t = ParseHttpDate(value);
      if (t.ok()) {
        info.last_modified = *t;
      } else {
        REELFS_LOG_DEBUG("s3", "{}: unparseable Last-Modified '{}'", info.key, value);
      }
    } else if (name == "content-type") {
      info.content_type = value;
    } else if (name == "x-amz-storage-class") {
      if (!value.empty()) info.storage_class = value;
    } else if (name == "x-amz-restore") {
      info.restore_header = value;  // kept even when unparseable: user.s3.restore shows it
      auto r = ParseRestoreHeader(value);
      if (r.ok()) {
        info.restore = *r;
      } else {
        REELFS_LOG_DEBUG("s3", "{}: unparseable x-amz-restore '{}': {}", info.key, value,
                         r.status().ToString());
      }
    } else if (name.rfind("x-amz-meta-", 0) == 0) {
      info.user_metadata[name.substr(11)] = value;
    } else if (name.rfind("x-reelfs-", 0) == 0) {
      info.hints[name] = value;
    }
  }
  return info;
}

}  // namespace reelfs::s3

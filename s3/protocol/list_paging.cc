#include "s3/protocol/list_paging.h"

namespace reelfs::s3 {

Result<std::optional<std::string>> ListPaging::Next(const ListObjectsPage& page) {
  ++pages_;
  if (!page.is_truncated) return std::optional<std::string>();
  const std::string& token = page.next_continuation_token;
  const std::string where = " (page " + std::to_string(pages_) + ")";
  if (token.empty()) {
    return Status::DataLoss("IsTruncated is true but there is no NextContinuationToken" + where);
  }
  if (!tokens_.insert(token).second) {
    // Tokens are opaque and may hold any byte; keep the message printable and short.
    std::string shown;
    for (char c : token.substr(0, 64)) {
      shown += (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) ? '?' : c;
    }
    return Status::DataLoss("the server repeated the continuation token '" + shown + "'" + where);
  }
  if (pages_ >= max_pages_) {
    return Status::DataLoss("more than " + std::to_string(max_pages_) + " pages" + where);
  }
  return std::optional<std::string>(token);
}

}  // namespace reelfs::s3

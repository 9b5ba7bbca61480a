#include "rdmaio/wire/rdma_headers.h"

#include <string>

#include "common/strings.h"
#include "rdmaio/wire/field_parse_internal.h"

namespace reelfs::rdmaio::wire {

std::optional<std::string_view> FindHeader(const HeaderList& headers, std::string_view name) {
  for (const auto& [key, value] : headers) {
    if (EqualsIgnoreCase(key, name)) return std::string_view(value);
  }
  return std::nullopt;
}

Result<std::optional<std::string_view>> FindSingleHeader(const HeaderList& headers,
                                                         std::string_view name) {
  std::optional<std::string_view> found;
  for (const auto& [key, value] : headers) {
    if (!EqualsIgnoreCase(key, name)) continue;
    if (found) return Status::InvalidArgument(std::string(name) + ": header appears twice");
    found = value;
  }
  return found;
}

Result<HeaderList> DcDataRequestHeaders(const DcToken& token) {
  REELFS_ASSIGN_OR_RETURN(std::string text, EncodeDcToken(token));
  HeaderList headers;
  headers.emplace_back(header::kToken, std::move(text));
  headers.emplace_back(header::kContentSha256, header::kUnsignedPayload);
  return headers;
}

Result<std::optional<DcToken>> DecodeDcDataRequest(const HeaderList& headers) {
  REELFS_ASSIGN_OR_RETURN(std::optional<std::string_view> text,
                          FindSingleHeader(headers, header::kToken));
  if (!text) return std::optional<DcToken>();
  REELFS_ASSIGN_OR_RETURN(DcToken token, DecodeDcToken(Trim(*text)));
  return std::optional<DcToken>(token);
}

Result<RdmaReply> ParseRdmaReply(std::string_view value) {
  value = Trim(value);
  RdmaReply reply;
  if (EqualsIgnoreCase(value, "ok")) return reply;  // kSuccess, code 0
  if (EqualsIgnoreCase(value, "err")) {
    reply.kind = RdmaReply::Kind::kFailed;
    return reply;
  }
  std::string_view code_text = value;
  std::string_view token_text;
  if (const size_t colon = value.find(':'); colon != std::string_view::npos) {
    code_text = value.substr(0, colon);
    token_text = value.substr(colon + 1);
    if (code_text != "200") {
      return Status::InvalidArgument("x-amz-rdma-reply: only 200 may carry a server token");
    }
  }
  if (code_text.size() != 3) {
    return Status::InvalidArgument("x-amz-rdma-reply: expected a three-digit code");
  }
  REELFS_ASSIGN_OR_RETURN(uint64_t code,
                          internal::ParseDecimalHeader(code_text, header::kReply, 999));
  reply.code = static_cast<int>(code);
  if (reply.code == 200 || reply.code == 204 || reply.code == 206) {
    reply.kind = RdmaReply::Kind::kSuccess;
  } else if (reply.code == 501) {
    reply.kind = RdmaReply::Kind::kDeclined;
  } else if (reply.code >= 200 && reply.code < 300) {
    return Status::InvalidArgument("x-amz-rdma-reply: unknown success code " +
                                   std::to_string(code));
  } else if (reply.code < 100) {
    return Status::InvalidArgument("x-amz-rdma-reply: not an HTTP-style code");
  } else {
    reply.kind = RdmaReply::Kind::kFailed;
  }
  if (value.find(':') != std::string_view::npos) {
    Result<RcToken> token = DecodeRcToken(token_text);
    if (!token.ok()) return token.status().WithContext("x-amz-rdma-reply server token");
    reply.server_token = *token;
  }
  return reply;
}

Result<uint64_t> ParseBytesTransferred(std::string_view value) {
  value = Trim(value);
  std::string_view first = value;
  if (const size_t slash = value.find('/'); slash != std::string_view::npos) {
    first = value.substr(0, slash);
    // The total is not used, but a malformed one means the whole value is suspect.
    REELFS_RETURN_IF_ERROR(
        internal::ParseDecimalHeader(value.substr(slash + 1), header::kBytesTransferred, UINT64_MAX)
            .status());
  }
  return internal::ParseDecimalHeader(first, header::kBytesTransferred, UINT64_MAX);
}

Result<std::optional<uint64_t>> FindBytesTransferred(const HeaderList& headers) {
  for (std::string_view name : {header::kBytesTransferred, header::kBytesLegacy}) {
    REELFS_ASSIGN_OR_RETURN(std::optional<std::string_view> text, FindSingleHeader(headers, name));
    if (!text) continue;
    REELFS_ASSIGN_OR_RETURN(uint64_t bytes, ParseBytesTransferred(*text));
    return std::optional<uint64_t>(bytes);
  }
  return std::optional<uint64_t>();
}

}  // namespace reelfs::rdmaio::wire

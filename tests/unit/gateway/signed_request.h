// Requests to an S3Service in-process, as the HTTP server would hand them over: signed with SigV4
// (access key AK, the time now) by s3::SignRequest. Shared by the service, archive and RDMA PUT
// tests.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "gateway/http/types.h"
#include "s3/protocol/sigv4.h"

namespace reelfs::gateway {

using TestHeaders = std::vector<std::pair<std::string, std::string>>;

// `method path?query` carrying `headers` (lowercase names, "host" among them), signed with
// `secret`; SignRequest adds x-amz-date and, unless given, x-amz-content-sha256.
inline http::Request SignedRequest(const std::string& method, const std::string& path,
                                   const std::string& query, TestHeaders headers, bool has_body,
                                   const std::string& secret = "SK") {
  s3::SignableRequest req;
  req.method = method;
  req.encoded_path = path;
  req.raw_query = query;
  req.headers = std::move(headers);
  s3::SigV4Params params;
  params.time = std::chrono::system_clock::now();
  s3::SignRequest(req, s3::Credentials{"AK", secret, ""}, params);
  http::Request h;
  h.method = method;
  h.target = path + (query.empty() ? "" : "?" + query);
  h.headers = std::move(req.headers);
  h.has_body = has_body;
  h.request_id = "TEST";
  return h;
}

// A request with `body` (UNSIGNED-PAYLOAD, its content-length, then `extra`) started on
// `handler` and, when it becomes an exchange, fed the body in 64 KiB pieces: an exchange must
// take the body in any split.
inline http::Response SendSigned(http::Handler& handler, const std::string& method,
                                 const std::string& path, const std::string& query,
                                 std::string_view body, const TestHeaders& extra = {}) {
  TestHeaders headers = {{"host", "127.0.0.1:7070"},
                         {"x-amz-content-sha256", "UNSIGNED-PAYLOAD"},
                         {"content-length", std::to_string(body.size())}};
  headers.insert(headers.end(), extra.begin(), extra.end());
  auto started =
      handler.Start(SignedRequest(method, path, query, std::move(headers), !body.empty()));
  if (auto* r = std::get_if<http::Response>(&started)) return std::move(*r);
  auto& exchange = std::get<std::unique_ptr<http::Exchange>>(started);
  constexpr size_t kPiece = 64 * 1024;
  for (size_t off = 0; off < body.size(); off += kPiece) exchange->OnBody(body.substr(off, kPiece));
  return exchange->Finish();
}

}  // namespace reelfs::gateway

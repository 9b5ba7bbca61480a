#include "s3/client/curl_status.h"

#include <string>

#include "fmt/format.h"

namespace reelfs::s3 {

AttemptOutcome::Kind CurlOutcomeKind(CURLcode code) {
  switch (code) {
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_COULDNT_RESOLVE_PROXY:
    case CURLE_COULDNT_CONNECT:
    case CURLE_SEND_ERROR:
    case CURLE_RECV_ERROR:
    case CURLE_PARTIAL_FILE:
    case CURLE_GOT_NOTHING:
    case CURLE_HTTP2:
    case CURLE_HTTP2_STREAM:
      return AttemptOutcome::Kind::kConnectionError;
    case CURLE_OPERATION_TIMEDOUT:
      return AttemptOutcome::Kind::kTimeout;
    default:
      return AttemptOutcome::Kind::kLocalError;
  }
}

Status CurlToStatus(CURLcode code, const char* error_buffer) {
  std::string what = (error_buffer != nullptr && error_buffer[0] != '\0')
                         ? std::string(error_buffer)
                         : std::string(curl_easy_strerror(code));
  what = fmt::format("{} (curl {})", what, static_cast<int>(code));
  switch (code) {
    case CURLE_OK:
      return Status::Ok();
    case CURLE_OPERATION_TIMEDOUT:
      return Status::DeadlineExceeded(what);
    case CURLE_PEER_FAILED_VERIFICATION:
    case CURLE_SSL_ISSUER_ERROR:
    case CURLE_SSL_PINNEDPUBKEYNOTMATCH:
    case CURLE_SSL_INVALIDCERTSTATUS:
      // The connection worked; the certificate it showed was not accepted.
      return Status(StatusCode::kFailedPrecondition, StatusReason::kTlsUntrusted,
                    "the server's TLS certificate was not accepted: " + what);
    case CURLE_SSL_CONNECT_ERROR:
    case CURLE_SSL_CERTPROBLEM:
    case CURLE_SSL_CIPHER:
    case CURLE_SSL_CACERT_BADFILE:
      return Status::FailedPrecondition("TLS failed: " + what +
                                        "; check ca_bundle (or verify_tls=false for test servers)");
    case CURLE_URL_MALFORMAT:
    case CURLE_UNSUPPORTED_PROTOCOL:
      return Status::InvalidArgument(what);
    case CURLE_OUT_OF_MEMORY:
      return Status::ResourceExhausted(what);
    default:
      break;
  }
  if (CurlOutcomeKind(code) == AttemptOutcome::Kind::kConnectionError) {
    return Status::Unavailable(what);
  }
  return Status::Internal(what);
}

}  // namespace reelfs::s3

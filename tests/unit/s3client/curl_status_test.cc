#include "s3/client/curl_status.h"

#include <doctest/doctest.h>

using namespace reelfs;
using namespace reelfs::s3;

TEST_CASE("curl errors map to codes by what the caller should do") {
  CHECK(CurlToStatus(CURLE_OK, nullptr).ok());
  CHECK(CurlToStatus(CURLE_COULDNT_CONNECT, nullptr).code() == StatusCode::kUnavailable);
  CHECK(CurlToStatus(CURLE_RECV_ERROR, nullptr).code() == StatusCode::kUnavailable);
  CHECK(CurlToStatus(CURLE_PARTIAL_FILE, nullptr).code() == StatusCode::kUnavailable);
  CHECK(CurlToStatus(CURLE_GOT_NOTHING, nullptr).code() == StatusCode::kUnavailable);
  CHECK(CurlToStatus(CURLE_OPERATION_TIMEDOUT, nullptr).code() == StatusCode::kDeadlineExceeded);
  CHECK(CurlToStatus(CURLE_PEER_FAILED_VERIFICATION, nullptr).code() ==
        StatusCode::kFailedPrecondition);
  // An untrusted certificate is told apart, so the CLI can say how to trust it.
  CHECK(CurlToStatus(CURLE_PEER_FAILED_VERIFICATION, nullptr).reason() ==
        StatusReason::kTlsUntrusted);
  CHECK(CurlToStatus(CURLE_SSL_CONNECT_ERROR, nullptr).reason() == StatusReason::kNone);
  CHECK(CurlToStatus(CURLE_URL_MALFORMAT, nullptr).code() == StatusCode::kInvalidArgument);
  const Status s = CurlToStatus(CURLE_COULDNT_CONNECT, "Failed to connect to 127.0.0.1 port 1");
  CHECK(s.message().find("127.0.0.1 port 1") != std::string_view::npos);
}

TEST_CASE("curl outcome kinds drive retries") {
  CHECK(CurlOutcomeKind(CURLE_COULDNT_CONNECT) == AttemptOutcome::Kind::kConnectionError);
  CHECK(CurlOutcomeKind(CURLE_SEND_ERROR) == AttemptOutcome::Kind::kConnectionError);
  CHECK(CurlOutcomeKind(CURLE_OPERATION_TIMEDOUT) == AttemptOutcome::Kind::kTimeout);
  CHECK(CurlOutcomeKind(CURLE_WRITE_ERROR) == AttemptOutcome::Kind::kLocalError);
  CHECK(CurlOutcomeKind(CURLE_PEER_FAILED_VERIFICATION) == AttemptOutcome::Kind::kLocalError);
}

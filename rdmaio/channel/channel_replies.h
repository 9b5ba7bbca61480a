// What an RDMA DataChannel (RcChannel, DcChannel) makes of HTTP answers: the reply classifier's
// verdict on a data GET's answer, how a non-2xx answer maps to data_channel.h's Status codes, and
// the plain ranged GET it falls back to. One copy, so both transports decide and fail the same
// way for the same answer.
//
// Thread-safety: pure functions.
#pragma once

#include <string_view>

#include "common/result.h"
#include "rdmaio/control_plane.h"
#include "rdmaio/data_channel.h"
#include "rdmaio/wire/reply_classifier.h"

namespace reelfs::rdmaio::channel {

inline bool IsSuccess(int http_status) { return http_status >= 200 && http_status < 300; }

// The classifier's verdict (wire/reply_classifier.h) on the answer to an RDMA data GET of
// [offset, offset + length): a range past the end of the object is expected short, as with HTTP.
wire::ReplyVerdict ClassifyDataGetReply(const ControlReply& reply, uint64_t offset,
                                        uint64_t length);

// The error a non-2xx answer to a data request stands for: the control plane's Status of it
// (ControlReply::error) when it has one, passed through; otherwise the HTTP status and S3 code
// read with the S3 error table an HTTP answer goes through (common/s3_error_table.h: 403
// InvalidObjectState kFailedPrecondition + kArchived, 412 + kObjectChanged, SignatureDoesNotMatch
// kUnauthenticated, ...), and a 2xx (an answer the classifier found contradictory) kDataLoss. The
// HTTP status and S3 code ride in the detail.
Status ErrorFromReply(const ControlReply& reply, std::string_view what);

// The plain ranged GET of `request` into its window's host bytes (the body lands where the
// server would have written). kUnimplemented for a window in device memory: there is no HTTP
// path into it.
Result<ControlGet> HttpFallbackGet(const FetchRequest& request, std::string_view what);

// The FetchResult of that GET's answer, or its error.
Result<FetchResult> HttpFallbackResult(const Result<ControlReply>& reply, std::string_view what);

}  // namespace reelfs::rdmaio::channel

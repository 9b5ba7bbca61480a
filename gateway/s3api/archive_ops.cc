// Archive state in S3 terms (personalities: gateway/archive/personality.h), RestoreObject, tape
// hints and the /_reelfs/admin endpoints.
#include <charconv>

#include "common/json.h"
#include "common/log.h"
#include "common/s3_error_table.h"
#include "gateway/s3api/internal.h"
#include "s3/protocol/request_codecs.h"

namespace reelfs::gateway::s3api {
namespace {

constexpr std::string_view kHintsRequestHeader = "x-reelfs-tape-hints";

std::string PositionHint(tape::Position p) {
  return "wrap=" + std::to_string(p.wrap) + ",lpos=" + std::to_string(p.lpos);
}

http::Response JsonResponse(int status, std::string json) {
  http::Response r;
  r.status = status;
  r.headers.emplace_back("Content-Type", "application/json");
  r.body = std::move(json);
  return r;
}

bool TruthyQuery(const S3Request& req, std::string_view name) {
  if (!req.Has(name)) return false;
  std::string v = req.Query(name);
  return v.empty() || v == "1" || v == "true" || v == "yes";
}

}  // namespace

void AddArchiveHeaders(Context ctx, const ObjectRecord& rec, http::Response& r) {
  const ArchiveOptions& options = ctx.archive_options();
  ArchiveView view = ViewOf(rec, options);
  if (!view.storage_class.empty())
    r.headers.emplace_back("x-amz-storage-class", view.storage_class);
  if (view.restore_header.has_value())
    r.headers.emplace_back("x-amz-restore", *view.restore_header);
  if (options.hints && ctx.archive != nullptr && rec.archive.has_value()) {
    const ArchiveRecord& a = *rec.archive;
    r.headers.emplace_back("x-reelfs-tape-cartridge", a.cartridge);
    r.headers.emplace_back("x-reelfs-tape-block", std::to_string(a.start_block));
    r.headers.emplace_back("x-reelfs-tape-position",
                           PositionHint(ctx.archive->library().PositionOf(a.start_block)));
  }
}

http::Response InvalidObjectState(Context ctx, const S3Request& req) {
  return ErrorResponse(req, kS3InvalidObjectState,
                       std::string(InvalidObjectStateMessage(ctx.archive_options().personality)),
                       403);
}

bool DecorateListing(Context ctx, const S3Request& req, const std::vector<ObjectRecord>& rows,
                     s3::ListObjectsPage& page) {
  const ArchiveOptions& options = ctx.archive_options();
  // versitygw has no x-amz-optional-object-attributes support (docs/gateway.md "Archive").
  const std::string* attrs = req.Header("x-amz-optional-object-attributes");
  const bool want_status = attrs != nullptr && attrs->find("RestoreStatus") != std::string::npos &&
                           options.personality != Personality::kVersitygw;
  for (size_t i = 0; i < page.objects.size() && i < rows.size(); ++i) {
    ArchiveView view = ViewOf(rows[i], options);
    page.objects[i].storage_class = view.listing_class;
    if (want_status) page.objects[i].restore = view.restore_status;
  }
  return want_status;
}

void AddListingHints(Context ctx, const S3Request& req, const std::vector<ObjectRecord>& rows,
                     http::Response& r) {
  const std::string* asked = req.Header(kHintsRequestHeader);
  if (asked == nullptr || !ctx.archive_options().hints || ctx.archive == nullptr) return;
  // One element per <Contents>, in order: the i-th "</Contents>" closes rows[i] (keys are
  // escaped, so the tag cannot occur inside one).
  std::string out;
  out.reserve(r.body.size() + rows.size() * 128);
  size_t pos = 0;
  for (const ObjectRecord& rec : rows) {
    size_t end = r.body.find("</Contents>", pos);
    if (end == std::string::npos) break;
    out.append(r.body, pos, end - pos);
    if (rec.archive.has_value()) {
      const ArchiveRecord& a = *rec.archive;
      tape::Position p = ctx.archive->library().PositionOf(a.start_block);
      out += "<ReelfsTape><Cartridge>" + a.cartridge + "</Cartridge><Block>" +
             std::to_string(a.start_block) + "</Block><Wrap>" + std::to_string(p.wrap) +
             "</Wrap><Lpos>" + std::to_string(p.lpos) + "</Lpos><State>" +
             std::string(ArchiveStateName(a.state)) + "</State></ReelfsTape>";
    }
    pos = end;
    out.append("</Contents>");
    pos += std::string_view("</Contents>").size();
  }
  out.append(r.body, pos, std::string::npos);
  r.body = std::move(out);
  r.headers.emplace_back("x-reelfs-tape-hints", "1");
}

Started RestoreObject(Context ctx, S3Request req) {
  return StartBuffered(ctx, std::move(req), [ctx](const S3Request& r, std::string body) {
    // versitygw and AWS both need a body (versitygw issue #1805): an empty one is MalformedXML.
    auto parsed = s3::ParseRestoreRequest(body);
    if (!parsed.ok()) {
      return ErrorResponse(r, "MalformedXML",
                           "The XML you provided was not well-formed or did "
                           "not validate against our published schema",
                           400);
    }
    auto rec = ctx.store.Head(r.bucket, r.key);
    if (!rec.ok()) return ErrorResponse(r, rec.status());
    const ArchiveOptions& options = ctx.archive_options();
    auto answer = [](int status) {
      http::Response resp = EmptyResponse(status);
      resp.log_context = "op=RestoreObject status=" + std::to_string(status);
      return resp;
    };
    const bool offline = rec->archive && rec->archive->state == ArchiveState::kOffline;
    if (options.personality != Personality::kAws) {
      // versitygw: always 200, Days/Tier ignored, idempotent (docs/gateway.md "Archive"). plain:
      // the same, but Days sets a real expiry.
      if (offline && ctx.archive != nullptr) {
        std::optional<int> days;
        if (options.personality == Personality::kPlain) days = parsed->days;
        auto started = ctx.archive->Restore(r.bucket, r.key, days);
        if (!started.ok()) return ErrorResponse(r, started.status());
      }
      return answer(200);
    }
    // aws (AWS S3 API reference, RestoreObject).
    if (parsed->tier == s3::RestoreTier::kExpedited && options.expedited_unavailable) {
      return ErrorResponse(r, "GlacierExpeditedRetrievalNotAvailable",
                           "Glacier expedited retrievals are currently not available, please try "
                           "again later",
                           503);
    }
    if (!rec->archive.has_value() || ctx.archive == nullptr) {
      return ErrorResponse(r, kS3InvalidObjectState,
                           "Restore is not allowed for the object's current storage class", 403);
    }
    const int days = parsed->days.value_or(1);
    if (rec->archive->staging) {
      return ErrorResponse(r, "RestoreAlreadyInProgress", "Object restore is already in progress",
                           409);
    }
    if (!offline) {
      auto already = ctx.archive->ExtendRestore(r.bucket, r.key, days);
      if (!already.ok()) return ErrorResponse(r, already.status());
      return answer(*already ? 200 : 202);
    }
    auto started = ctx.archive->Restore(r.bucket, r.key, days);
    if (!started.ok()) return ErrorResponse(r, started.status());
    switch (*started) {
      case RestoreStart::kStarted:
        return answer(202);
      case RestoreStart::kJoined:
        return ErrorResponse(r, "RestoreAlreadyInProgress", "Object restore is already in progress",
                             409);
      case RestoreStart::kOnDisk:  // restored between the HEAD above and now
      case RestoreStart::kNotArchived:
        break;
    }
    return answer(200);
  });
}

Started Admin(Context ctx, const S3Request& req, std::string_view name) {
  const std::string& m = req.http.method;
  if (ctx.archive == nullptr) {
    return ErrorResponse(req, "NotImplemented", "this gateway runs without an archive", 501);
  }
  http::Response r;
  const bool owner = ctx.archive->role() == ArchiveRole::kOwner;
  if (!owner && (name == "archive" || name == "release" || name == "timeline.svg")) {
    // The library, its writes, releases and timeline live in the owning process alone.
    return ErrorResponse(req, "NotOwner",
                         "this reelfs-gateway is a front end; send archive, release and timeline "
                         "requests to the gateway that owns the root",
                         409);
  }
  if (name == "archive" && m == "POST") {
    ArchiveRunOptions run;
    run.bucket = req.Query("bucket");
    run.prefix = req.Query("prefix");
    run.cartridge = req.Query("cartridge");
    if (req.Has("cartridges")) {
      std::string n = req.Query("cartridges");
      auto [p, ec] = std::from_chars(n.data(), n.data() + n.size(), run.cartridges);
      if (ec != std::errc() || p != n.data() + n.size() || run.cartridges == 0 ||
          run.cartridges > 10000) {
        return ErrorResponse(req, "InvalidArgument", "cartridges must be 1..10000", 400);
      }
    }
    std::string order = req.Query("order");
    if (!order.empty() && order != "key" && order != "striped") {
      return ErrorResponse(req, "InvalidArgument", "order must be key or striped", 400);
    }
    run.striped = order == "striped";
    run.release = TruthyQuery(req, "release");
    auto report = ctx.archive->Run(run);
    if (!report.ok()) return ErrorResponse(req, report.status());
    r = JsonResponse(200, report->ToJson());
  } else if (name == "release" && m == "POST") {
    auto n = ctx.archive->ReleaseAll(req.Query("bucket"), req.Query("prefix"));
    if (!n.ok()) return ErrorResponse(req, n.status());
    r = JsonResponse(200, DumpJson(Json{{"released", *n}}));
  } else if (name == "metrics" && m == "GET") {
    const Store::UploadExpiryStats expired = ctx.store.upload_expiry_stats();
    r = JsonResponse(
        200,
        DumpJson(Json{{"tape", owner ? ctx.archive->library().MetricsDocument() : Json(nullptr)},
                      {"archive", ctx.archive->MetricsDocument()},
                      {"http_faults", ctx.faults ? ctx.faults->MetricsDocument() : Json::array()},
                      {"multipart", Json{{"expired_uploads", expired.uploads},
                                         {"expired_parts", expired.parts},
                                         {"expired_bytes", expired.bytes}}}}));
  } else if (name == "timeline.svg" && m == "GET") {
    r.status = 200;
    r.headers.emplace_back("Content-Type", "image/svg+xml");
    r.body = ctx.archive->library().TimelineSvg();
  } else if (name == "archive" || name == "release" || name == "metrics" ||
             name == "timeline.svg") {
    return ErrorResponse(req, "MethodNotAllowed", "method not allowed on this admin endpoint", 405);
  } else {
    return ErrorResponse(req, "NotImplemented", "unknown admin endpoint", 501);
  }
  r.log_context = "op=Admin:" + std::string(name);
  return r;
}

}  // namespace reelfs::gateway::s3api

#include "gateway/s3api/metrics_text.h"

#include <optional>
#include <string>
#include <string_view>

#include "common/json.h"
#include "common/prom_text.h"
#include "gateway/archive/archive.h"
#include "gateway/tape/library.h"

namespace reelfs::gateway::s3api {
namespace {

// The number at `path` ("a.b.c") in `doc`, or nullopt when it is missing or not a number.
std::optional<double> At(const Json& doc, std::string_view path) {
  const Json* j = &doc;
  while (!path.empty()) {
    const size_t dot = path.find('.');
    const std::string part(path.substr(0, dot));
    if (!j->is_object() || !j->contains(part)) return std::nullopt;
    j = &(*j)[part];
    path = dot == std::string_view::npos ? std::string_view() : path.substr(dot + 1);
  }
  if (!j->is_number()) return std::nullopt;
  return j->get<double>();
}

void CounterAt(PromText& out, const Json& doc, std::string_view path, std::string_view name,
               std::string_view help) {
  if (auto v = At(doc, path)) out.Counter(name, help, *v);
}

void GaugeAt(PromText& out, const Json& doc, std::string_view path, std::string_view name,
             std::string_view help) {
  if (auto v = At(doc, path)) out.Gauge(name, help, *v);
}

void Tape(PromText& out, const Json& t) {
  GaugeAt(out, t, "drives", "reelfs_gateway_tape_drives", "configured tape drives");
  GaugeAt(out, t, "robots", "reelfs_gateway_tape_robots", "configured robots");
  out.Family("reelfs_gateway_tape_recalls_total", "counter",
             "recalls the library completed, by outcome");
  for (const char* outcome : {"ok", "media_error", "stage_fail", "shutdown"}) {
    if (auto v = At(t, std::string("requests.") + outcome)) {
      out.Sample("reelfs_gateway_tape_recalls_total", {{"outcome", outcome}}, *v);
    }
  }
  GaugeAt(out, t, "requests.pending", "reelfs_gateway_tape_recalls_pending",
          "recalls queued or being served");
  CounterAt(out, t, "requests.requeued", "reelfs_gateway_tape_recalls_requeued_total",
            "recalls sent back to their queue because their drive went down");
  CounterAt(out, t, "bytes_read", "reelfs_gateway_tape_read_bytes_total",
            "bytes of the recalls that completed ok");
  out.Family("reelfs_gateway_tape_writes_total", "counter", "archive writes, by outcome");
  for (const char* outcome : {"ok", "failed", "shutdown"}) {
    if (auto v = At(t, std::string("writes.") + outcome)) {
      out.Sample("reelfs_gateway_tape_writes_total", {{"outcome", outcome}}, *v);
    }
  }
  GaugeAt(out, t, "writes.pending", "reelfs_gateway_tape_writes_pending",
          "archive writes queued or being written");
  CounterAt(out, t, "bytes_written", "reelfs_gateway_tape_written_bytes_total",
            "bytes of the archive writes that completed ok");
  CounterAt(out, t, "mounts.total", "reelfs_gateway_tape_mounts_total",
            "cartridge loads that reached READY");
  CounterAt(out, t, "robot_moves", "reelfs_gateway_tape_robot_moves_total", "robot moves started");
  out.Family("reelfs_gateway_tape_drive_seconds_total", "counter",
             "simulated seconds summed over all drives, by drive state");
  for (const char* state :
       {"loading", "locating", "reading", "writing", "rewinding", "unloading", "down"}) {
    if (auto v = At(t, std::string("drive_time_s.") + state)) {
      out.Sample("reelfs_gateway_tape_drive_seconds_total", {{"state", state}}, *v);
    }
  }
  if (t.contains("drive_utilization") && t["drive_utilization"].is_object()) {
    out.Family("reelfs_gateway_tape_drive_utilization", "gauge",
               "busy fraction of simulated time, per drive");
    for (const auto& [drive, v] : t["drive_utilization"].items()) {
      if (v.is_number()) {
        out.Sample("reelfs_gateway_tape_drive_utilization", {{"drive", drive}}, v.get<double>());
      }
    }
  }
}

// One unlabelled number of a JSON document, as a Prometheus family.
struct Scalar {
  const char* path;  // in the document
  const char* name;
  const char* type;  // "counter" or "gauge"
  const char* help;
};

constexpr Scalar kArchive[] = {
    {"recalls_submitted", "reelfs_gateway_archive_recalls_submitted_total", "counter",
     "recalls handed to the library"},
    {"recalls_joined", "reelfs_gateway_archive_recalls_joined_total", "counter",
     "RestoreObject requests that joined a running recall"},
    {"recalls_failed", "reelfs_gateway_archive_recalls_failed_total", "counter",
     "recalls that failed (media error, stage failure, damaged image, copy error)"},
    {"recalled_bytes", "reelfs_gateway_archive_recalled_bytes_total", "counter",
     "bytes of the objects recalled"},
    {"recalls_in_flight", "reelfs_gateway_archive_recalls_in_flight", "gauge",
     "recalls submitted and not yet copied back"},
    {"archived_objects", "reelfs_gateway_archive_archived_objects_total", "counter",
     "objects written to tape by this process"},
    {"archived_bytes", "reelfs_gateway_archive_archived_bytes_total", "counter",
     "bytes written to tape by this process"},
    {"released_objects", "reelfs_gateway_archive_released_objects_total", "counter",
     "disk copies released (objects gone offline)"},
    {"released_bytes", "reelfs_gateway_archive_released_bytes_total", "counter",
     "bytes of the disk copies released"},
    {"restored_bytes_on_disk", "reelfs_gateway_archive_restored_bytes_on_disk", "gauge",
     "bytes of restored copies on disk"},
};

void ArchiveCounters(PromText& out, const Json& a) {
  for (const Scalar& m : kArchive) {
    if (auto v = At(a, m.path)) {
      out.Family(m.name, m.type, m.help);
      out.Sample(m.name, *v);
    }
  }
}

}  // namespace

std::string PrometheusText(const Context& ctx, const HttpMetrics& http) {
  PromText out;
  http.Write(out);
  if (ctx.archive != nullptr) {
    // A front end's library never runs: the owner's /metrics has the tape.
    if (ctx.archive->role() == ArchiveRole::kOwner)
      Tape(out, ctx.archive->library().MetricsDocument());
    ArchiveCounters(out, ctx.archive->MetricsDocument());
  }
  const Store::UploadExpiryStats expired = ctx.store.upload_expiry_stats();
  out.Counter("reelfs_gateway_multipart_expired_uploads_total",
              "incomplete multipart uploads aborted for their age",
              static_cast<double>(expired.uploads));
  out.Counter("reelfs_gateway_multipart_expired_bytes_total", "bytes those uploads' parts held",
              static_cast<double>(expired.bytes));
  return out.text();
}

}  // namespace reelfs::gateway::s3api

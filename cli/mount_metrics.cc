#include "cli/mount_metrics.h"

#include <string_view>
#include <utility>

#include "common/prom_text.h"

namespace reelfs::cli {
namespace {

double D(uint64_t v) { return static_cast<double>(v); }

// The file system's unlabelled counters and gauges, one row each.
struct FsFamily {
  std::string_view name;
  bool gauge;
  uint64_t fuse::FsCounters::*field;
  std::string_view help;
};
constexpr FsFamily kFsFamilies[] = {
    {"reelfs_fs_lookups_total", false, &fuse::FsCounters::lookups,
     "LOOKUPs answered by the file system"},
    {"reelfs_fs_list_requests_total", false, &fuse::FsCounters::list_requests,
     "ListObjectsV2 pages requested for directories"},
    {"reelfs_fs_head_requests_total", false, &fuse::FsCounters::head_requests,
     "HeadObject requests for lookups and attributes"},
    {"reelfs_fs_open_handles", true, &fuse::FsCounters::open_handles, "files open for reading now"},
    {"reelfs_fs_inodes", true, &fuse::FsCounters::inodes, "inodes the kernel holds references to"},
    {"reelfs_fs_read_bytes_total", false, &fuse::FsCounters::bytes_read, "bytes answered to reads"},
    {"reelfs_fs_direct_reads_total", false, &fuse::FsCounters::direct_reads,
     "reads answered by one GET or fetch each"},
    {"reelfs_fs_offline_reads_total", false, &fuse::FsCounters::offline_reads,
     "reads that found their object offline on tape"},
    {"reelfs_fs_restore_waits_total", false, &fuse::FsCounters::restore_waits,
     "reads that waited for a tape restore"},
    {"reelfs_fs_write_handles", true, &fuse::FsCounters::write_handles, "files being written now"},
    {"reelfs_fs_written_bytes_total", false, &fuse::FsCounters::bytes_written,
     "bytes accepted by WRITE"},
    {"reelfs_fs_files_written_total", false, &fuse::FsCounters::files_written,
     "uploads completed (the object is in S3)"},
    {"reelfs_fs_uploads_failed_total", false, &fuse::FsCounters::uploads_failed,
     "uploads that failed or were aborted"},
    {"reelfs_fs_deletes_total", false, &fuse::FsCounters::deletes,
     "objects deleted by unlink and rmdir"},
    {"reelfs_fs_renames_total", false, &fuse::FsCounters::renames, "files renamed"},
    {"reelfs_fs_spliced_reads_total", false, &fuse::FsCounters::spliced_reads,
     "reads answered with bytes spliced from a GET's socket (--splice-reads)"},
    {"reelfs_fs_spliced_bytes_total", false, &fuse::FsCounters::spliced_bytes,
     "bytes those reads carried"},
    {"reelfs_fs_splice_streams_total", false, &fuse::FsCounters::splice_streams,
     "GET body streams opened for spliced reads"},
    {"reelfs_fs_splice_fallbacks_total", false, &fuse::FsCounters::splice_fallbacks,
     "handles that stopped splicing and read through the ordinary path"},
    {"reelfs_fs_splice_gaps_skipped_total", false, &fuse::FsCounters::splice_gaps_skipped,
     "gaps a spliced stream dropped because their reads went through the ordinary path"},
    {"reelfs_fs_splice_slow_streams_total", false, &fuse::FsCounters::splice_slow_streams,
     "spliced streams slower than their reader, whose handles went to the parallel GETs"},
    {"reelfs_fs_cached_file_opens_total", false, &fuse::FsCounters::cached_file_opens,
     "opens whose reads are answered with the local cache's file (spliced by libfuse)"},
    {"reelfs_fs_cached_file_reads_total", false, &fuse::FsCounters::cached_file_reads,
     "reads answered with the local cache's file"},
    {"reelfs_fs_cached_file_bytes_total", false, &fuse::FsCounters::cached_file_bytes,
     "bytes those reads carried"},
    {"reelfs_fs_cached_file_fallbacks_total", false, &fuse::FsCounters::cached_file_fallbacks,
     "handles whose cache file changed after the open, read through the checked path since"},
};

void FileSystemFamilies(const fuse::FsCounters& c, PromText& out) {
  for (const FsFamily& f : kFsFamilies) {
    f.gauge ? out.Gauge(f.name, f.help, D(c.*f.field)) : out.Counter(f.name, f.help, D(c.*f.field));
  }
  out.Family("reelfs_fs_upload_parts_total", "counter", "upload parts and PUTs, by data path");
  out.Sample("reelfs_fs_upload_parts_total", {{"path", "rdma"}}, D(c.rdma_put_parts));
  out.Sample("reelfs_fs_upload_parts_total", {{"path", "http"}}, D(c.http_put_parts));
  out.Family("reelfs_fs_upload_bytes_total", "counter", "upload payload bytes, by data path");
  out.Sample("reelfs_fs_upload_bytes_total", {{"path", "rdma"}}, D(c.rdma_put_bytes));
  out.Sample("reelfs_fs_upload_bytes_total", {{"path", "http"}}, D(c.http_put_bytes));
}

void ClientFamilies(const s3::S3Client& client, PromText& out) {
  const s3::ClientCounters c = client.counters();
  const PromText::Labels endpoint = {{"endpoint", client.options().endpoint}};
  auto one = [&](std::string_view name, std::string_view help, uint64_t v) {
    out.Family(name, "counter", help);
    out.Sample(name, endpoint, D(v));
  };
  one("reelfs_s3_requests_total", "S3 operations submitted", c.requests);
  one("reelfs_s3_retries_total", "S3 attempts beyond the first", c.retries);
  one("reelfs_s3_failures_total", "S3 operations that ended with an error", c.failures);
  one("reelfs_s3_sent_bytes_total", "S3 request body bytes", c.bytes_sent);
  one("reelfs_s3_received_bytes_total", "S3 response body bytes", c.bytes_received);
  one("reelfs_s3_direct_gets_total",
      "ranged GETs received straight into their buffers (docs/s3-client.md \"Direct GETs\")",
      c.direct_gets);
  one("reelfs_s3_direct_fallbacks_total", "GETs the direct receiver handed to libcurl's path",
      c.direct_fallbacks);
  // Per endpoint (several front ends: s3/client/endpoint_set.h).
  const std::vector<s3::EndpointStats> stats = client.endpoint_stats();
  auto each = [&](std::string_view name, std::string_view type, std::string_view help, auto value) {
    out.Family(name, type, help);
    for (const s3::EndpointStats& e : stats) out.Sample(name, {{"endpoint", e.url}}, value(e));
  };
  each("reelfs_s3_endpoint_attempts_total", "counter", "HTTP attempts sent to each endpoint",
       [](const s3::EndpointStats& e) { return D(e.requests); });
  each("reelfs_s3_endpoint_bytes_total", "counter", "body bytes moved by each endpoint's attempts",
       [](const s3::EndpointStats& e) { return D(e.bytes); });
  each("reelfs_s3_endpoint_errors_total", "counter", "failed attempts per endpoint",
       [](const s3::EndpointStats& e) { return D(e.errors); });
  each("reelfs_s3_endpoint_up", "gauge", "1 while the endpoint is taking requests, 0 while down",
       [](const s3::EndpointStats& e) { return e.up ? 1.0 : 0.0; });
}

// From RdmaDataPath::metrics_json: one sample per channel and path.
void DataPathFamilies(const Json& channels, PromText& out) {
  if (!channels.is_array() || channels.empty()) return;
  struct Field {
    std::string_view family, help, rdma_key, http_key;
  };
  static constexpr Field kFields[] = {
      {"reelfs_data_read_requests_total", "data-path reads (GET bodies), by path", "rdma_requests",
       "http_requests"},
      {"reelfs_data_read_bytes_total", "data-path read bytes, by path", "rdma_bytes", "http_bytes"},
      {"reelfs_data_write_requests_total", "data-path upload parts, by path", "rdma_put_requests",
       "http_put_requests"},
      {"reelfs_data_write_bytes_total", "data-path upload bytes, by path", "rdma_put_bytes",
       "http_put_bytes"}};
  auto number = [](const Json& ch, std::string_view key) {
    const auto it = ch.find(key);
    return it != ch.end() && it->is_number() ? it->get<double>() : 0.0;
  };
  auto text = [](const Json& ch, std::string_view key) {
    const auto it = ch.find(key);
    return it != ch.end() && it->is_string() ? it->get<std::string>() : std::string();
  };
  for (const Field& f : kFields) {
    out.Family(f.family, "counter", f.help);
    for (const Json& ch : channels) {
      for (auto [path, key] : {std::pair{"rdma", f.rdma_key}, std::pair{"http", f.http_key}}) {
        out.Sample(f.family,
                   {{"endpoint", text(ch, "endpoint")},
                    {"transport", text(ch, "transport")},
                    {"path", path}},
                   number(ch, key));
      }
    }
  }
  out.Family("reelfs_data_fallbacks_total", "counter",
             "data-path requests that fell back to HTTP after the channel declined them");
  for (const Json& ch : channels) {
    out.Sample("reelfs_data_fallbacks_total",
               {{"endpoint", text(ch, "endpoint")}, {"transport", text(ch, "transport")}},
               number(ch, "fallbacks"));
  }
}

void MemoryFamilies(const fuse::MemoryBudget* budget, const fuse::BufferPool* pool, PromText& out) {
  if (budget != nullptr) {
    out.Gauge("reelfs_prefetch_memory_bytes", "bytes held by read buffers now", D(budget->used()));
    out.Gauge("reelfs_prefetch_memory_peak_bytes", "the most bytes read buffers held",
              D(budget->peak()));
    out.Gauge("reelfs_prefetch_memory_limit_bytes", "--max-memory", D(budget->limit()));
  }
  if (pool != nullptr) {
    const fuse::BufferPoolStats s = pool->stats();
    out.Gauge("reelfs_buffer_pool_in_use_bytes", "buffers handed out", D(s.in_use_bytes));
    out.Gauge("reelfs_buffer_pool_idle_bytes", "buffers kept for reuse", D(s.idle_bytes));
    out.Counter("reelfs_buffer_pool_fresh_allocations_total",
                "allocations the idle buffers could not serve", D(s.fresh_allocations));
  }
}

void TapeFamilies(const hsm::RestorerCounters& c, PromText& out) {
  out.Counter("reelfs_restore_requests_total", "RestoreObject requests sent",
              D(c.restore_requests));
  out.Counter("reelfs_restore_polls_total", "HEAD polls of objects being restored",
              D(c.head_requests));
  out.Gauge("reelfs_restore_waiters", "reads waiting for a restore now", D(c.waiters));
  out.Counter("reelfs_restore_completed_total", "objects seen readable after a wait",
              D(c.completed));
  out.Counter("reelfs_restore_failures_total", "objects given up on", D(c.failures));
}

void SideChannelFamilies(const api::ServerCounters& c, PromText& out) {
  out.Gauge("reelfs_side_channel_clients", "side channel clients connected now",
            D(c.clients_connected));
  out.Counter("reelfs_side_channel_reads_total", "side channel READs answered with bytes",
              D(c.reads));
  out.Counter("reelfs_side_channel_read_errors_total", "side channel READs answered -errno",
              D(c.read_errors));
  out.Family("reelfs_side_channel_read_bytes_total", "counter",
             "bytes written into side channel clients' buffers, by who wrote them");
  out.Sample("reelfs_side_channel_read_bytes_total", {{"path", "rdma"}}, D(c.rdma_bytes));
  out.Sample("reelfs_side_channel_read_bytes_total", {{"path", "copied"}}, D(c.bytes_copied));
}

}  // namespace

std::string MountMetricsText(const MountMetricsSources& s) {
  PromText out;
  if (s.daemon != nullptr) {
    s.daemon->op_stats().WriteProm(out);
    out.Gauge("reelfs_fuse_requests_in_flight", "FUSE requests received and not yet answered",
              D(s.daemon->requests_in_flight()));
  }
  if (s.fs != nullptr) FileSystemFamilies(s.fs->counters(), out);
  if (s.client != nullptr) ClientFamilies(*s.client, out);
  if (s.data_path_json) DataPathFamilies(s.data_path_json(), out);
  MemoryFamilies(s.budget, s.pool, out);
  if (s.restorer != nullptr) TapeFamilies(s.restorer->counters(), out);
  if (s.side_channel != nullptr) SideChannelFamilies(s.side_channel->counters(), out);
  return out.text();
}

}  // namespace reelfs::cli

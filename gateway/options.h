// gateway::Options: everything reelfs-gateway can be told, with defaults. Filled from the YAML
// config (config_loader.h), then command-line flags, then environment (keys only).
//
// Thread-safety: a plain struct.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "gateway/tape/library.h"

namespace reelfs::gateway {

// Which S3 server the archive imitates (docs/gateway.md "Archive").
enum class Personality {
  // The historical behaviour of this gateway: online objects answer as before (stored storage
  // class, no x-amz-restore until restored); offline objects are GLACIER and 403 on GET;
  // RestoreObject always answers 200 (as versitygw) and recalls offline objects.
  kPlain,
  kVersitygw,  // versitygw --glacier over ScoutFS/ScoutAM, every quirk docs/gateway.md lists
  kAws,        // AWS S3 Glacier Flexible Retrieval: 202/200/409/503, real expiry
};

// versitygw's x-amz-restore generations (docs/gateway.md "Archive").
enum class RestoreHeaderGeneration {
  kCurrent,  // since 2026-04: header omitted when offline and not staging
  k202603,   // 2026-03..04: ongoing-request="true"/"false", never an expiry-date
  kLegacy,   // before 2026-03: bare true / false
};

// ---- archive policy (docs/gateway.md "Archive policy") ----
// An archive set (ScoutAM's archive sets): objects of `bucket` under `prefix` that have not changed
// for `after` are written to tape in batches by the gateway's policy engine (archive/policy.h).
struct ArchiveSet {
  std::string name;  // for logs and metrics; default "bucket/prefix"
  std::string bucket;
  std::string prefix;
  std::chrono::nanoseconds after{std::chrono::seconds(30)};  // unchanged (mtime) for this long
  bool order_by_size = false;         // key order (default), or largest first (then key)
  uint64_t batch_bytes = 4ull << 30;  // a batch is cut before it would exceed this (>= 1 object)
  uint64_t batch_objects = 1000;
  // Cartridges of the set, filled in this order: a batch goes whole to the first with room.
  std::vector<std::string> cartridges = {"RL0000L9"};
  // Disk copies of objects archived (and never restored since) are released this long after
  // their archive write; 0: kept until the admin release (restored copies follow the releaser).
  std::chrono::nanoseconds release_after{0};
};

struct ArchivePolicyOptions {
  std::vector<ArchiveSet> sets;  // empty: no policy engine
  std::chrono::nanoseconds scan_interval{std::chrono::seconds(10)};
};

struct ArchiveOptions {
  Personality personality = Personality::kPlain;
  RestoreHeaderGeneration versitygw_restore_header = RestoreHeaderGeneration::kCurrent;
  // x-reelfs-tape-* hint headers on HEAD/GET, and in listings asked for them
  // (docs/protocols/tape-hints.md). Default: off.
  bool hints = false;
  // Releaser watermarks on the bytes of restored objects on disk: above `high`, the least
  // recently restored are made offline again until at most `low` remain. 0: no watermark
  // releaser. Default: 0 / 0.
  uint64_t release_high_bytes = 0;
  uint64_t release_low_bytes = 0;
  // aws: an Expedited RestoreObject draws 503 GlacierExpeditedRetrievalNotAvailable.
  bool expedited_unavailable = false;
  // Threads copying recalled extents from tape images back to the store. Default: 2.
  int copy_threads = 2;
  // `archive: policy:` and `archive: scan_interval:`.
  ArchivePolicyOptions policy;
};

// An HTTP-level fault (docs/gateway.md "Fault scenarios"). Exactly one trigger and one action.
struct HttpFault {
  std::string op = "*";  // S3 operation name (GetObject, HeadObject, ...) or "*"
  double percent = 0;    // trigger: this share of matching requests (0..100)
  uint64_t nth = 0;      // trigger: only the nth matching request (1-based)
  uint64_t every = 0;    // trigger: every nth matching request
  std::string error;     // action: answer this S3 error (SlowDown, InternalError, ...)
  std::chrono::milliseconds delay{0};   // action: wait this long before answering
  std::optional<uint64_t> reset_after;  // action (GetObject): reset the connection mid-body
};

// A fault of the tape library, forwarded to tape::Library::Inject at simulated time `at`.
struct LibraryFault {
  std::chrono::duration<double> at{0};  // simulated seconds since start; 0: at once
  tape::Fault fault;
};

struct FaultScenario {
  uint64_t seed = 1;  // percent triggers draw from a generator seeded with this
  std::vector<HttpFault> http;
  std::vector<LibraryFault> library;
};

struct Options {
  // Directory served: buckets are its top-level directories. Required, and must exist unless
  // `create_root` (a typo must not serve a new, empty archive).
  std::string root;
  bool create_root = false;
  // A front end over a root another gateway process owns (docs/gateway.md "Several front ends
  // over one root"): serves S3 from the shared files and catalog; the owner runs the library.
  bool front_end = false;
  // HOST:PORT to listen on; port 0 picks an ephemeral port.
  std::string listen = "127.0.0.1:7070";
  // A non-loopback listen address is refused unless this is set (reference gateway only).
  bool allow_non_loopback = false;
  // The one credential pair accepted. Empty: REELFS_GATEWAY_ACCESS_KEY/SECRET_KEY, else a random
  // pair written to ROOT/.reelfs-gateway/credentials (0600).
  std::string access_key;
  std::string secret_key;
  // SigV4 region.
  std::string region = "us-east-1";
  // io threads (connections are spread across them; handlers do blocking disk I/O).
  int threads = 4;
  // When set, the bound port number is written there (for tests using port 0).
  std::string port_file;
  // When set, the tape timeline (SVG, what every drive and robot did) is written there when the
  // gateway stops, so a run can be looked at afterwards without the admin endpoint.
  std::string timeline_file;
  // Log spec, e.g. "info" or "info,gateway.http=debug".
  std::string log_level = "info";
  // TLS: PEM certificate (chain) and private key; both or neither. With them the gateway serves
  // https only.
  std::string tls_cert;
  std::string tls_key;
  // "text" or "json" (one JSON object per line, for a log shipper).
  std::string log_format = "text";
  // Connections idle (or stalled mid-request) this long are closed.
  std::chrono::seconds idle_timeout{60};
  // Bytes per second each connection may send (SO_MAX_PACING_RATE); 0: unlimited. A model of
  // the per-connection cap of remote object stores, for benchmarks and tests on loopback.
  uint64_t max_connection_rate = 0;
  // Virtual-host addressing: Host "<bucket>.<domain>". Empty: path style only.
  std::string virtual_host_domain;
  // Largest single PUT or part.
  uint64_t max_put_size = 5ull << 30;
  // Minimum size of every multipart part but the last (S3: 5 MiB).
  uint64_t min_part_size = 5ull << 20;
  // Multipart uploads initiated longer ago than this are aborted by the gateway (its parts
  // deleted), swept at start and every tenth of it (docs/gateway.md "Multipart uploads").
  // 0: never. Default: 7 days, the usual AbortIncompleteMultipartUpload lifecycle rule.
  std::chrono::nanoseconds multipart_expiry = std::chrono::hours(24 * 7);
  // The archive (`archive:` section) and the tape library behind it (`tape:` section, parsed by
  // tape::LoadLibraryConfigYaml). Default: LTO-9 library on a x1000 clock, plain personality.
  ArchiveOptions archive;
  tape::LibraryConfig tape;
  // `faults:` section or the file named by `archive: faults:`.
  FaultScenario faults;
};

}  // namespace reelfs::gateway

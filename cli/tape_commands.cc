#include "cli/tape_commands.h"

#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <iostream>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include <sys/xattr.h>

#include "cache/cache_contents.h"
#include "cli/mount_path.h"
#include "common/clock.h"
#include "common/json.h"
#include "common/time_format.h"
#include "common/units.h"
#include "hsm/ledger.h"
#include "hsm/stager.h"
#include "s3/etag.h"

namespace reelfs::cli {
namespace {

using hsm::State;

constexpr State kStates[] = {State::kOnline, State::kRestored, State::kStaging, State::kOffline,
                             State::kUnknown};

// "45s", "3m20s", "2h05m".
std::string FormatEta(Clock::Duration d) {
  int64_t s = std::chrono::duration_cast<std::chrono::seconds>(d).count();
  if (s < 0) s = 0;
  char buf[32];
  if (s < 60) {
    std::snprintf(buf, sizeof buf, "%" PRId64 "s", s);
  } else if (s < 3600) {
    std::snprintf(buf, sizeof buf, "%" PRId64 "m%02" PRId64 "s", s / 60, s % 60);
  } else {
    std::snprintf(buf, sizeof buf, "%" PRId64 "h%02" PRId64 "m", s / 3600, (s % 3600) / 60);
  }
  return buf;
}

uint64_t Count(const hsm::StageSummary& s, State st) { return s.objects[static_cast<size_t>(st)]; }
uint64_t Bytes(const hsm::StageSummary& s, State st) { return s.bytes[static_cast<size_t>(st)]; }

// "1200/2000 readable (1.2 GiB/2.0 GiB), 790 staging, 10 offline, 0 failed, 12/20 cartridges
// pending, ETA 1m20s".
std::string ProgressText(const hsm::StageSummary& s, std::optional<Clock::Duration> eta) {
  const uint64_t readable = Count(s, State::kOnline) + Count(s, State::kRestored);
  const uint64_t readable_bytes = Bytes(s, State::kOnline) + Bytes(s, State::kRestored);
  std::ostringstream out;
  out << readable << "/" << s.total_objects << " readable (" << FormatByteSize(readable_bytes)
      << "/" << FormatByteSize(s.total_bytes) << "), " << Count(s, State::kStaging) << " staging, "
      << Count(s, State::kOffline) << " offline";
  if (Count(s, State::kUnknown) != 0) out << ", " << Count(s, State::kUnknown) << " unknown";
  out << ", " << s.failed << " failed";
  if (s.cartridges != 0) {
    out << ", " << s.cartridges_pending << "/" << s.cartridges << " cartridges pending";
  }
  if (eta) out << ", ETA " << FormatEta(*eta);
  return out.str();
}

Json SummaryJson(const hsm::StageSummary& s) {
  Json out;
  for (State st : kStates) {
    out[std::string(hsm::StateName(st))] = Json{{"objects", Count(s, st)}, {"bytes", Bytes(s, st)}};
  }
  out["failed"] = s.failed;
  out["total_objects"] = s.total_objects;
  out["total_bytes"] = s.total_bytes;
  out["cartridges"] = s.cartridges;
  out["cartridges_pending"] = s.cartridges_pending;
  return out;
}

// x-amz-restore as a HEAD received it; for a listing's RestoreStatus (no header), rebuilt from the
// parsed value; "" when the server said nothing.
std::string RestoreHeader(const hsm::StageObject& o) {
  if (!o.restore_header.empty()) return o.restore_header;
  const std::optional<s3::RestoreInfo>& r = o.restore;
  if (!r) return "";
  std::string out = r->ongoing ? "ongoing-request=\"true\"" : "ongoing-request=\"false\"";
  if (r->expiry) out += ", expiry-date=\"" + FormatHttpDate(*r->expiry) + "\"";
  return out;
}

Json ObjectJson(const hsm::StageObject& o, const std::string& bucket) {
  // A hint's members that the server did not give are null.
  auto optional = [](const auto& v) { return v ? Json(*v) : Json(); };
  Json tape;
  if (o.hint) {
    tape = Json{{"cartridge", o.hint->cartridge},
                {"block", optional(o.hint->block)},
                {"wrap", optional(o.hint->wrap)},
                {"lpos", optional(o.hint->lpos)}};
  }
  return Json{{"path", o.display.empty() ? "s3://" + bucket + "/" + o.key : o.display},
              {"bucket", bucket},
              {"key", o.key},
              {"state", hsm::StateName(o.state)},
              {"size", o.size},
              {"storage_class", o.storage_class},
              {"restore", RestoreHeader(o)},
              {"tape", std::move(tape)},
              {"attempts", o.attempts},
              {"error", o.error}};
}

// One (endpoint, bucket, ledger) and what the user named in it.
struct Group {
  std::string endpoint;
  std::string bucket;
  std::string ledger_path;
  std::string cache_dir;  // the mount's --cache ("" = none, or an s3:// URL)
  std::vector<hsm::StageTarget> targets;
  std::unique_ptr<s3::ObjectStore> store;
  std::unique_ptr<hsm::Ledger> ledger;
  std::unique_ptr<hsm::Stager> stager;
  std::vector<hsm::StageObject> objects;
  // What the mount's local cache holds of `objects` (the same version): key -> bytes, and
  // whether whole. Objects held whole are readable on this host whatever the archive says.
  std::unordered_map<std::string, cache::CachedVersion> cached;
  // Objects left out of `objects` because the cache holds them whole (stage and wait without
  // --force): their count and bytes, for the reports.
  uint64_t cached_skipped = 0;
  uint64_t cached_skipped_bytes = 0;
};

// Progress on stderr: one line redrawn with '\r' on a terminal, else one line per call.
class ProgressPrinter {
 public:
  explicit ProgressPrinter(bool quiet) : quiet_(quiet), terminal_(::isatty(STDERR_FILENO) == 1) {}
  ~ProgressPrinter() { End(); }
  void Show(const std::string& label, const std::string& text) {
    if (quiet_) return;
    if (terminal_) {
      std::cerr << "\r\x1b[K" << label << text << std::flush;
      open_ = true;
    } else {
      std::cerr << label << text << "\n";
    }
  }
  void End() {
    if (open_) std::cerr << "\n";
    open_ = false;
  }

 private:
  const bool quiet_;
  const bool terminal_;
  bool open_ = false;
};

// Every failure while the groups are set up is a setup error (kExitUsage); the Status's message
// is what the command prints.
Status SetupError(std::string message) { return Status::InvalidArgument(std::move(message)); }

// The paths grouped by (endpoint, bucket, ledger), in the order first named. A path under a mount
// uses the endpoint it publishes unless --endpoint was given; s3:// URLs use --endpoint or
// AWS_ENDPOINT_URL.
Result<std::vector<Group>> GroupPaths(const TapeConfig& config,
                                      const std::string& global_endpoint) {
  std::string default_endpoint = global_endpoint;
  if (default_endpoint.empty()) {
    if (const char* env = std::getenv("AWS_ENDPOINT_URL")) default_endpoint = env;
  }
  std::vector<Group> groups;
  for (const std::string& path : config.paths) {
    auto resolved = ResolvePath(path, config.recursive);
    if (!resolved.ok()) return SetupError(std::string(resolved.status().message()));
    std::string endpoint = !global_endpoint.empty() ? global_endpoint
                           : resolved->under_mount  ? resolved->endpoint
                                                    : default_endpoint;
    std::string ledger_path = !config.ledger.empty()      ? config.ledger
                              : !resolved->ledger.empty() ? resolved->ledger
                                                          : hsm::Ledger::DefaultPath();
    Group* group = nullptr;
    for (Group& g : groups) {
      if (g.endpoint == endpoint && g.bucket == resolved->bucket && g.ledger_path == ledger_path &&
          g.cache_dir == resolved->cache) {
        group = &g;
      }
    }
    if (group == nullptr) {
      groups.push_back(Group{});
      group = &groups.back();
      group->endpoint = endpoint;
      group->bucket = resolved->bucket;
      group->ledger_path = ledger_path;
      group->cache_dir = resolved->cache;
    }
    // A path under a mount is shown as given; s3:// URLs show as s3://bucket/key.
    std::string display = resolved->under_mount ? path : "";
    if (resolved->under_mount && resolved->is_prefix && !display.empty() && display.back() != '/') {
      display += '/';
    }
    group->targets.push_back(hsm::StageTarget{resolved->key, resolved->is_prefix, display});
  }
  return groups;
}

// Each group's client, ledger and stager, and what its targets enumerate to.
Status OpenGroups(const EndpointStoreFactory& make_store, const hsm::StageOptions& options,
                  std::vector<Group>& groups) {
  for (Group& g : groups) {
    auto store = make_store(g.endpoint);
    if (!store.ok()) return SetupError("S3 client: " + store.status().ToString());
    g.store = std::move(*store);
    auto ledger = hsm::Ledger::Open(g.ledger_path);
    if (!ledger.ok()) {
      return SetupError("ledger " + g.ledger_path + ": " + ledger.status().ToString());
    }
    g.ledger = std::move(*ledger);
    g.stager = std::make_unique<hsm::Stager>(*g.store, *g.ledger, g.endpoint, g.bucket, RealClock(),
                                             options);
    auto objects = g.stager->Enumerate(g.targets);
    if (!objects.ok()) return SetupError(objects.status().ToString());
    g.objects = std::move(*objects);
    for (hsm::StageObject& o : g.objects) {
      if (o.display.empty()) o.display = "s3://" + g.bucket + "/" + o.key;
    }
  }
  return Status::Ok();
}

hsm::StageSummary SummaryOfAll(const std::vector<Group>& groups) {
  std::vector<hsm::StageObject> all;
  for (const Group& g : groups) all.insert(all.end(), g.objects.begin(), g.objects.end());
  return hsm::StageSummary::Of(all);
}

// The human-readable lines go to stderr when stdout carries the JSON document.
std::ostream& HumanOut(const TapeConfig& config) { return config.json ? std::cerr : std::cout; }

// What each group's mount holds in its local cache (docs/cache.md "Tape"). For stage and wait
// (unless stage --force) the objects held whole leave the list: they need no restore to be read
// on this host. A cache that cannot be read costs a warning, never the command.
void ApplyLocalCaches(const TapeConfig& config, std::vector<Group>& groups) {
  for (Group& g : groups) {
    if (g.cache_dir.empty()) continue;
    auto contents = cache::ReadCacheContents(g.cache_dir, g.bucket);
    if (!contents.ok()) {
      std::cerr << "reelfs: warning: the mount's cache " << g.cache_dir
                << " cannot be read: " << contents.status().message()
                << "; objects it may hold are treated as not cached\n";
      continue;
    }
    for (const hsm::StageObject& o : g.objects) {
      auto it = contents->find(o.key);
      if (it != contents->end() && it->second.etag == s3::BareEtag(o.etag)) {
        g.cached.emplace(o.key, it->second);
      }
    }
    const bool drop = config.command == TapeCommand::kWait ||
                      (config.command == TapeCommand::kStage && !config.force);
    if (!drop) continue;
    std::erase_if(g.objects, [&g](const hsm::StageObject& o) {
      auto it = g.cached.find(o.key);
      if (it == g.cached.end() || !it->second.whole) return false;
      ++g.cached_skipped;
      g.cached_skipped_bytes += o.size;
      return true;
    });
  }
}

// "N objects (X) held whole by the local cache, left out[ (--force ...)]" for stage and wait.
void PrintCachedSkipped(const TapeConfig& config, const std::vector<Group>& groups) {
  uint64_t n = 0, bytes = 0;
  for (const Group& g : groups) {
    n += g.cached_skipped;
    bytes += g.cached_skipped_bytes;
  }
  if (n == 0) return;
  HumanOut(config) << "cached: " << n << " objects (" << FormatByteSize(bytes)
                   << ") held whole by the mount's local cache: readable here, left out"
                   << (config.command == TapeCommand::kStage ? " (--force stages them too)" : "")
                   << "\n";
}

// `reelfs status`: one line (or JSON object) per object and the totals.
int RunStatus(const TapeConfig& config, const std::vector<Group>& groups) {
  uint64_t cached_objects = 0, cached_bytes = 0;
  for (const Group& g : groups) {
    for (const auto& [key, v] : g.cached) {
      cached_objects += v.whole ? 1 : 0;
      cached_bytes += v.cached_bytes;
    }
  }
  if (config.json) {
    Json objects = Json::array();
    for (const Group& g : groups) {
      for (const hsm::StageObject& o : g.objects) {
        Json j = ObjectJson(o, g.bucket);
        if (!g.cache_dir.empty()) {
          auto it = g.cached.find(o.key);
          j["cached_bytes"] = it == g.cached.end() ? 0 : it->second.cached_bytes;
        }
        objects.push_back(std::move(j));
      }
    }
    Json doc{{"objects", std::move(objects)}, {"summary", SummaryJson(SummaryOfAll(groups))}};
    doc["cached"] = Json{{"objects", cached_objects}, {"bytes", cached_bytes}};
    std::cout << DumpJson(doc) << "\n";
    return kExitDone;
  }
  for (const Group& g : groups) {
    for (const hsm::StageObject& o : g.objects) {
      // Not readable at the server, but whole in this host's cache: "cached", as the mount's
      // user.hsm.state says.
      auto it = g.cached.find(o.key);
      const bool whole = it != g.cached.end() && it->second.whole;
      std::cout << (whole && !hsm::IsReadable(o.state) ? "cached" : hsm::StateName(o.state)) << "\t"
                << o.size << "\t" << (o.hint ? o.hint->cartridge : "-") << "\t" << o.display;
      if (!o.error.empty()) std::cout << "\t" << o.error;
      std::cout << "\n";
    }
  }
  std::cout << "total: " << ProgressText(SummaryOfAll(groups), std::nullopt) << "\n";
  if (cached_bytes != 0) {
    std::cout << "cached on this host: " << cached_objects << " whole objects, "
              << FormatByteSize(cached_bytes) << "\n";
  }
  return kExitDone;
}

// The stage plan's one line: what will be requested, on how many cartridges, what is readable or
// staging already.
void PrintPlan(const TapeConfig& config, const std::vector<Group>& groups,
               const hsm::StageSummary& before) {
  uint64_t plan_objects = 0, plan_bytes = 0;
  std::map<std::string, uint64_t> cartridges;
  for (const Group& g : groups) {
    for (size_t i : hsm::Stager::Plan(g.objects)) {
      const hsm::StageObject& o = g.objects[i];
      plan_objects += 1;
      plan_bytes += o.size;
      if (o.hint) cartridges[o.hint->cartridge] += 1;
    }
  }
  std::ostream& human = HumanOut(config);
  human << "plan: " << plan_objects << " of " << before.total_objects << " objects to request ("
        << FormatByteSize(plan_bytes) << ")";
  if (!cartridges.empty()) human << " on " << cartridges.size() << " cartridges";
  human << "; " << (Count(before, State::kOnline) + Count(before, State::kRestored))
        << " readable, " << Count(before, State::kStaging) << " already staging\n";
}

// `stage --dry-run --json`: the plan as one document.
void PrintDryRunJson(const std::vector<Group>& groups, const hsm::StageSummary& before) {
  Json plan = Json::array();
  for (const Group& g : groups) {
    for (size_t i : hsm::Stager::Plan(g.objects)) plan.push_back(g.objects[i].display);
  }
  std::cout << DumpJson(Json{
                   {"dry_run", true}, {"plan", std::move(plan)}, {"summary", SummaryJson(before)}})
            << "\n";
}

// Submits every group's plan; the number of requests sent, or the exit code of a failure.
Result<uint64_t> SubmitAll(const TapeConfig& config, std::vector<Group>& groups) {
  uint64_t requested = 0;
  ProgressPrinter printer(config.json);
  for (Group& g : groups) {
    auto sent = g.stager->Submit(g.objects, [&](const hsm::StageProgress& p) {
      printer.Show("requested: ", std::to_string(p.requests_sent) + " requests sent; " +
                                      ProgressText(p.summary, std::nullopt));
    });
    printer.End();
    if (!sent.ok()) return sent.status();
    requested += *sent;
  }
  return requested;
}

// Waits for every group until its objects are readable or `deadline`; whether any timed out.
Result<bool> WaitAll(const TapeConfig& config, Clock::TimePoint deadline,
                     std::vector<Group>& groups) {
  bool timed_out = false;
  ProgressPrinter printer(config.json);
  for (Group& g : groups) {
    auto end = g.stager->Wait(g.objects, deadline, [&](const hsm::StageProgress& p) {
      printer.Show(groups.size() > 1 ? "s3://" + g.bucket + ": " : "",
                   ProgressText(p.summary, p.eta));
    });
    printer.End();
    if (!end.ok()) return end.status();
    if (*end == hsm::WaitEnd::kTimedOut) timed_out = true;
  }
  return timed_out;
}

// The closing report of stage and wait (a JSON document, or the failures and one summary line)
// and the exit code: failed objects, else a timeout, else done.
int Finish(const TapeConfig& config, const std::vector<Group>& groups, uint64_t requested,
           bool timed_out) {
  const bool stage = config.command == TapeCommand::kStage;
  const hsm::StageSummary after = SummaryOfAll(groups);
  const int code = after.failed != 0 ? kExitFailed : timed_out ? kExitTimedOut : kExitDone;
  const char* result = code == kExitFailed     ? "failed"
                       : code == kExitTimedOut ? "timed_out"
                       : config.wait           ? "done"
                                               : "submitted";
  if (config.json) {
    Json failed = Json::array();
    for (const Group& g : groups) {
      for (const hsm::StageObject& o : g.objects) {
        if (o.error.empty()) continue;
        failed.push_back(Json{{"path", o.display}, {"key", o.key}, {"error", o.error}});
      }
    }
    std::cout << DumpJson(Json{{"result", result},
                               {"exit_code", code},
                               {"requested", requested},
                               {"summary", SummaryJson(after)},
                               {"failed", std::move(failed)}})
              << "\n";
    return code;
  }
  std::ostream& human = HumanOut(config);
  for (const Group& g : groups) {
    for (const hsm::StageObject& o : g.objects) {
      if (!o.error.empty()) human << "failed: " << o.display << ": " << o.error << "\n";
    }
  }
  human << result << ": " << (stage ? std::to_string(requested) + " requested; " : "")
        << ProgressText(after, std::nullopt) << "\n";
  return code;
}

// Tells each mount a path was named under that its tape state there is old news
// (user.hsm.request=refresh), so a mount in --offline=eagain reads the restored objects now, not
// once its cached "offline" expires. A mount that does not take it (an older reelfs) is told in
// a warning; the objects are readable anyway.
void RefreshMounts(const std::vector<Group>& groups) {
  static constexpr char kRefresh[] = "refresh";
  for (const Group& g : groups) {
    for (const hsm::StageTarget& t : g.targets) {
      if (t.display.empty()) continue;  // an s3:// URL: no mount to tell
      if (::setxattr(t.display.c_str(), "user.hsm.request", kRefresh, sizeof kRefresh - 1, 0) !=
          0) {
        std::cerr << "reelfs: warning: " << t.display << ": the mount did not take "
                  << "user.hsm.request=refresh (" << std::strerror(errno)
                  << "); it may answer from its cached tape state for a few seconds\n";
      }
    }
  }
}

// `reelfs wait` and the waiting half of `stage --wait`: until readable or --timeout.
int WaitAndFinish(const TapeConfig& config, Clock::TimePoint started, std::vector<Group>& groups,
                  uint64_t requested) {
  bool timed_out = false;
  if (config.wait) {
    const Clock::TimePoint deadline =
        config.timeout ? started + *config.timeout : Clock::TimePoint::max();
    auto waited = WaitAll(config, deadline, groups);
    if (!waited.ok()) {
      std::cerr << "reelfs " << TapeCommandName(config.command) << ": "
                << waited.status().ToString() << "\n";
      return kExitUsage;
    }
    timed_out = *waited;
    RefreshMounts(groups);
  }
  return Finish(config, groups, requested, timed_out);
}

// `reelfs stage`: the plan, then (unless --dry-run) every RestoreObject, then with --wait the
// wait.
int RunStage(const TapeConfig& config, Clock::TimePoint started, std::vector<Group>& groups) {
  const hsm::StageSummary before = SummaryOfAll(groups);
  PrintCachedSkipped(config, groups);
  PrintPlan(config, groups, before);
  if (config.dry_run) {
    if (config.json) PrintDryRunJson(groups, before);
    return kExitDone;
  }
  auto requested = SubmitAll(config, groups);
  if (!requested.ok()) {
    std::cerr << "reelfs stage: " << requested.status().ToString() << "\n";
    return kExitUsage;
  }
  return WaitAndFinish(config, started, groups, *requested);
}

}  // namespace

void TapeCommands::Register(CLI::App& app) {
  auto common = [this](CLI::App* cmd, bool recursive_flag) {
    // The global options (--endpoint, --log-level, ...) may follow the subcommand's arguments.
    cmd->fallthrough();
    cmd->add_option("paths", args_.paths, "files or directories under a mount, or s3:// URLs");
    if (recursive_flag) {
      cmd->add_flag("-r,--recursive", args_.recursive,
                    "s3:// URLs name prefixes (directories under a mount always are)");
    }
    cmd->add_option("--from-file", args_.from_file,
                    "read more paths from LIST, one a line (- = stdin)");
    cmd->add_option("--ledger", args_.ledger,
                    "restore ledger file (default: the mount's, else ~/.local/state/reelfs/"
                    "ledger.sqlite or $REELFS_LEDGER)");
  };
  stage_ = app.add_subcommand("stage", "request restores of offline objects, in tape order");
  common(stage_, true);
  stage_->add_flag("--wait", args_.wait, "wait until every object is readable");
  stage_->add_option("--timeout", args_.timeout, "with --wait: give up after T (e.g. 30m)");
  // Values are checked in Run, so that a bad one exits with kExitUsage like every setup error.
  stage_->add_option("--tier", args_.tier, "standard (default), bulk or expedited");
  stage_->add_option("--days", args_.days, "days the restored copies stay (default 7)");
  stage_->add_flag("--json", args_.json, "one JSON document on stdout at the end");
  stage_->add_flag("--dry-run", args_.dry_run, "print the plan, request nothing");
  stage_->add_flag("--force", args_.force,
                   "also request objects the mount's local cache (--cache) holds whole");
  stage_->add_option("--rate", args_.rate, "RestoreObject requests per second (default 200)");
  stage_->add_option("--poll", args_.poll, "first HEAD poll interval with --wait (default 1s)");
  stage_->add_option("--poll-max", args_.poll_max, "longest poll interval (default 60s)");

  status_ = app.add_subcommand("status", "show the tape state of objects");
  common(status_, true);
  status_->add_flag("--json", args_.json, "one JSON document on stdout");

  wait_ = app.add_subcommand("wait", "wait until objects are readable (requesting nothing new)");
  common(wait_, true);
  wait_->add_option("--timeout", args_.timeout, "give up after T (e.g. 30m)");
  wait_->add_flag("--json", args_.json, "one JSON document on stdout at the end");
  wait_->add_option("--poll", args_.poll, "first HEAD poll interval (default 1s)");
  wait_->add_option("--poll-max", args_.poll_max, "longest poll interval (default 60s)");
}

bool TapeCommands::Selected() const {
  return (stage_ != nullptr && stage_->parsed()) || (status_ != nullptr && status_->parsed()) ||
         (wait_ != nullptr && wait_->parsed());
}

int TapeCommands::Run(const EndpointStoreFactory& make_store, const std::string& global_endpoint) {
  const TapeCommand command = stage_->parsed()  ? TapeCommand::kStage
                              : wait_->parsed() ? TapeCommand::kWait
                                                : TapeCommand::kStatus;
  auto usage = [&](std::string_view message) {
    std::cerr << "reelfs " << TapeCommandName(command) << ": " << message << "\n";
    return kExitUsage;
  };
  // --timeout counts from the start of the command, submission included.
  const Clock::TimePoint started = RealClock().Now();
  auto config = ParseTapeFlags(command, args_, std::cin);
  if (!config.ok()) return usage(config.status().message());
  config->stage.batch =
      "stage-" + std::to_string(std::time(nullptr)) + "-" + std::to_string(::getpid());

  auto groups = GroupPaths(*config, global_endpoint);
  if (!groups.ok()) return usage(groups.status().message());
  if (Status opened = OpenGroups(make_store, config->stage, *groups); !opened.ok()) {
    return usage(opened.message());
  }
  ApplyLocalCaches(*config, *groups);
  switch (command) {
    case TapeCommand::kStatus:
      return RunStatus(*config, *groups);
    case TapeCommand::kStage:
      return RunStage(*config, started, *groups);
    case TapeCommand::kWait:
      PrintCachedSkipped(*config, *groups);
      return WaitAndFinish(*config, started, *groups, /*requested=*/0);
  }
  return kExitUsage;
}

}  // namespace reelfs::cli

#include "gateway/config_loader.h"

#include <fstream>
#include <sstream>

#include <yaml-cpp/yaml.h>

#include "common/log.h"
#include "common/units.h"
#include "gateway/archive/personality.h"
#include "gateway/store/key_validation.h"

namespace reelfs::gateway {
namespace {

Status Error(std::string_view origin, const YAML::Node& node, const std::string& key,
             const std::string& what) {
  return Status::InvalidArgument(std::string(origin) + ":" + std::to_string(node.Mark().line + 1) +
                                 ": " + key + ": " + what);
}

Status ExpectMap(std::string_view origin, const YAML::Node& node, const std::string& key) {
  if (!node.IsMap()) return Error(origin, node, key, "expected a mapping");
  return Status::Ok();
}

Status Bytes(std::string_view origin, const YAML::Node& value, const std::string& key,
             uint64_t* out) {
  auto v = ParseByteSize(value.as<std::string>());
  if (!v.ok()) return Error(origin, value, key, std::string(v.status().message()));
  *out = *v;
  return Status::Ok();
}

Result<std::chrono::nanoseconds> Duration(std::string_view origin, const YAML::Node& value,
                                          const std::string& key) {
  auto d = ParseDuration(value.as<std::string>());
  if (!d.ok()) return Error(origin, value, key, std::string(d.status().message()));
  return *d;
}

// `faults:` (inline, or the whole of a scenario file).
Status ParseFaults(std::string_view origin, const YAML::Node& node, FaultScenario* out) {
  REELFS_RETURN_IF_ERROR(ExpectMap(origin, node, "faults"));
  for (const auto& item : node) {
    const std::string key = item.first.as<std::string>();
    const YAML::Node& value = item.second;
    if (key == "seed") {
      out->seed = value.as<uint64_t>();
    } else if (key == "http") {
      if (!value.IsSequence()) return Error(origin, value, "faults.http", "expected a list");
      for (const auto& rule : value) {
        REELFS_RETURN_IF_ERROR(ExpectMap(origin, rule, "faults.http[]"));
        HttpFault f;
        int triggers = 0;
        int actions = 0;
        for (const auto& kv : rule) {
          const std::string k = kv.first.as<std::string>();
          const std::string path = "faults.http[]." + k;
          const YAML::Node& v = kv.second;
          if (k == "op") {
            f.op = v.as<std::string>();
          } else if (k == "percent") {
            f.percent = v.as<double>();
            if (f.percent <= 0 || f.percent > 100)
              return Error(origin, v, path, "must be (0, 100]");
            ++triggers;
          } else if (k == "nth") {
            f.nth = v.as<uint64_t>();
            if (f.nth == 0) return Error(origin, v, path, "must be >= 1");
            ++triggers;
          } else if (k == "every") {
            f.every = v.as<uint64_t>();
            if (f.every == 0) return Error(origin, v, path, "must be >= 1");
            ++triggers;
          } else if (k == "error") {
            f.error = v.as<std::string>();
            ++actions;
          } else if (k == "delay") {
            REELFS_ASSIGN_OR_RETURN(auto d, Duration(origin, v, path));
            f.delay = std::chrono::duration_cast<std::chrono::milliseconds>(d);
            ++actions;
          } else if (k == "reset_after") {
            uint64_t n = 0;
            REELFS_RETURN_IF_ERROR(Bytes(origin, v, path, &n));
            f.reset_after = n;
            ++actions;
          } else {
            return Error(origin, kv.first, path, "unknown key");
          }
        }
        if (triggers != 1) {
          return Error(origin, rule, "faults.http[]", "needs exactly one of percent, nth, every");
        }
        if (actions == 0) {
          return Error(origin, rule, "faults.http[]", "needs error, delay or reset_after");
        }
        out->http.push_back(std::move(f));
      }
    } else if (key == "library") {
      if (!value.IsSequence()) return Error(origin, value, "faults.library", "expected a list");
      for (const auto& rule : value) {
        REELFS_RETURN_IF_ERROR(ExpectMap(origin, rule, "faults.library[]"));
        LibraryFault f;
        bool has_kind = false;
        for (const auto& kv : rule) {
          const std::string k = kv.first.as<std::string>();
          const std::string path = "faults.library[]." + k;
          const YAML::Node& v = kv.second;
          if (k == "kind") {
            const std::string kind = v.as<std::string>();
            using K = tape::Fault::Kind;
            if (kind == "media_error") {
              f.fault.kind = K::kMediaError;
            } else if (kind == "drive_down") {
              f.fault.kind = K::kDriveDown;
            } else if (kind == "drive_up") {
              f.fault.kind = K::kDriveUp;
            } else if (kind == "robot_stall") {
              f.fault.kind = K::kRobotStall;
            } else if (kind == "stage_fail") {
              f.fault.kind = K::kStageFail;
            } else {
              return Error(origin, v, path,
                           "must be media_error, drive_down, drive_up, robot_stall or stage_fail");
            }
            has_kind = true;
          } else if (k == "target") {
            f.fault.target = v.as<std::string>();
          } else if (k == "at") {
            REELFS_ASSIGN_OR_RETURN(auto d, Duration(origin, v, path));
            f.at = std::chrono::duration<double>(d);
          } else if (k == "duration") {
            REELFS_ASSIGN_OR_RETURN(auto d, Duration(origin, v, path));
            f.fault.duration = std::chrono::duration<double>(d);
          } else if (k == "probability") {
            f.fault.probability = v.as<double>();
            if (f.fault.probability < 0 || f.fault.probability > 1) {
              return Error(origin, v, path, "must be 0..1");
            }
          } else {
            return Error(origin, kv.first, path, "unknown key");
          }
        }
        if (!has_kind) return Error(origin, rule, "faults.library[]", "kind is required");
        out->library.push_back(std::move(f));
      }
    } else {
      return Error(origin, item.first, "faults." + key, "unknown key");
    }
  }
  return Status::Ok();
}

// A path in the config is relative to the config file's directory.
std::string Resolve(std::string_view origin, const std::string& path) {
  if (path.empty() || path.front() == '/') return path;
  size_t slash = origin.rfind('/');
  if (slash == std::string_view::npos) return path;
  return std::string(origin.substr(0, slash + 1)) + path;
}

// ---- archive policy: `archive: policy:` (a list of archive sets) and `archive: scan_interval:`
// (docs/gateway.md "Archive policy") ----

// A cartridge name as tape::Library::AddCartridge accepts it (checked here, at load).
bool ValidCartridgeName(const std::string& vsn) {
  if (vsn.empty() || vsn.size() > 64) return false;
  for (char c : vsn) {
    if (static_cast<unsigned char>(c) < 0x21 || c == 0x7f) return false;
  }
  return true;
}

Status ParseArchiveSet(std::string_view origin, const YAML::Node& node, ArchiveSet* set) {
  REELFS_RETURN_IF_ERROR(ExpectMap(origin, node, "archive.policy[]"));
  bool has_bucket = false;
  for (const auto& kv : node) {
    const std::string k = kv.first.as<std::string>();
    const std::string path = "archive.policy[]." + k;
    const YAML::Node& v = kv.second;
    if (k == "cartridges") {
      set->cartridges.clear();
      if (v.IsScalar()) {
        set->cartridges.push_back(v.as<std::string>());
      } else if (v.IsSequence()) {
        for (const auto& c : v) {
          if (!c.IsScalar()) return Error(origin, c, path, "expected a volume serial");
          set->cartridges.push_back(c.as<std::string>());
        }
      } else {
        return Error(origin, v, path, "expected a list of volume serials");
      }
      if (set->cartridges.empty()) return Error(origin, v, path, "must name a cartridge");
      for (const std::string& vsn : set->cartridges) {
        if (!ValidCartridgeName(vsn)) {
          return Error(origin, v, path,
                       "'" + vsn + "' is not a volume serial (1..64 printable ASCII, no spaces)");
        }
      }
      continue;
    }
    if (!v.IsScalar()) return Error(origin, v, path, "expected a scalar");
    const std::string text = v.as<std::string>();
    if (k == "name") {
      set->name = text;
    } else if (k == "bucket") {
      if (Status st = ValidateBucketName(text); !st.ok()) {
        return Error(origin, v, path,
                     "'" + text + "' is not a bucket name (" + std::string(st.message()) + ")");
      }
      set->bucket = text;
      has_bucket = true;
    } else if (k == "prefix") {
      if (text.starts_with("/") || text.starts_with(".reelfs-gateway")) {
        return Error(origin, v, path, "a key prefix must not start with '/' or .reelfs-gateway");
      }
      set->prefix = text;
    } else if (k == "after") {
      REELFS_ASSIGN_OR_RETURN(set->after, Duration(origin, v, path));
      if (set->after.count() < 0) return Error(origin, v, path, "must be >= 0s");
    } else if (k == "order") {
      if (text == "key") {
        set->order_by_size = false;
      } else if (text == "size") {
        set->order_by_size = true;
      } else {
        return Error(origin, v, path, "must be key or size");
      }
    } else if (k == "batch_bytes") {
      REELFS_RETURN_IF_ERROR(Bytes(origin, v, path, &set->batch_bytes));
      if (set->batch_bytes == 0) return Error(origin, v, path, "must be > 0");
    } else if (k == "batch_objects") {
      set->batch_objects = v.as<uint64_t>();
      if (set->batch_objects == 0) return Error(origin, v, path, "must be >= 1");
    } else if (k == "release_after") {
      REELFS_ASSIGN_OR_RETURN(set->release_after, Duration(origin, v, path));
      if (set->release_after.count() < 0) return Error(origin, v, path, "must be >= 0s");
    } else {
      return Error(origin, kv.first, path, "unknown key");
    }
  }
  if (!has_bucket) return Error(origin, node, "archive.policy[].bucket", "is required");
  if (set->name.empty()) set->name = set->bucket + "/" + set->prefix;
  return Status::Ok();
}

Status ParseArchivePolicy(std::string_view origin, const YAML::Node& node,
                          ArchivePolicyOptions* out) {
  if (!node.IsSequence()) {
    return Error(origin, node, "archive.policy", "expected a list of archive sets");
  }
  out->sets.clear();
  for (const auto& item : node) {
    ArchiveSet set;
    REELFS_RETURN_IF_ERROR(ParseArchiveSet(origin, item, &set));
    // An object in two sets would be archived by whichever scanned first: refuse the overlap.
    for (const ArchiveSet& other : out->sets) {
      const bool overlap = other.bucket == set.bucket && (set.prefix.starts_with(other.prefix) ||
                                                          other.prefix.starts_with(set.prefix));
      if (overlap) {
        return Error(origin, item, "archive.policy[]",
                     "set '" + set.name + "' overlaps set '" + other.name + "'");
      }
      if (other.name == set.name) {
        return Error(origin, item, "archive.policy[].name", "'" + set.name + "' is used twice");
      }
    }
    out->sets.push_back(std::move(set));
  }
  return Status::Ok();
}

// The keys of ParseArchive that belong to the policy; false when `key` is not one of them.
Result<bool> ParseArchivePolicyKey(std::string_view origin, const std::string& key,
                                   const YAML::Node& value, ArchivePolicyOptions* out) {
  if (key == "policy") {
    REELFS_RETURN_IF_ERROR(ParseArchivePolicy(origin, value, out));
    return true;
  }
  if (key == "scan_interval") {
    if (!value.IsScalar())
      return Error(origin, value, "archive.scan_interval", "expected a scalar");
    REELFS_ASSIGN_OR_RETURN(out->scan_interval, Duration(origin, value, "archive.scan_interval"));
    if (out->scan_interval < std::chrono::milliseconds(100)) {
      return Error(origin, value, "archive.scan_interval", "must be >= 100ms");
    }
    return true;
  }
  return false;
}

// ---- end of the archive policy ----

Status ParseArchive(std::string_view origin, const YAML::Node& node, Options* options) {
  REELFS_RETURN_IF_ERROR(ExpectMap(origin, node, "archive"));
  ArchiveOptions& a = options->archive;
  for (const auto& item : node) {
    const std::string key = item.first.as<std::string>();
    const std::string path = "archive." + key;
    const YAML::Node& value = item.second;
    REELFS_ASSIGN_OR_RETURN(bool policy_key, ParseArchivePolicyKey(origin, key, value, &a.policy));
    if (policy_key) continue;
    if (!value.IsScalar()) return Error(origin, value, path, "expected a scalar");
    const std::string text = value.as<std::string>();
    if (key == "personality") {
      auto p = ParsePersonality(text);
      if (!p.ok()) return Error(origin, value, path, std::string(p.status().message()));
      a.personality = *p;
    } else if (key == "versitygw_restore_header") {
      auto g = ParseRestoreHeaderGeneration(text);
      if (!g.ok()) return Error(origin, value, path, std::string(g.status().message()));
      a.versitygw_restore_header = *g;
    } else if (key == "hints") {
      a.hints = value.as<bool>();
    } else if (key == "release_high_watermark") {
      REELFS_RETURN_IF_ERROR(Bytes(origin, value, path, &a.release_high_bytes));
    } else if (key == "release_low_watermark") {
      REELFS_RETURN_IF_ERROR(Bytes(origin, value, path, &a.release_low_bytes));
    } else if (key == "expedited_unavailable") {
      a.expedited_unavailable = value.as<bool>();
    } else if (key == "copy_threads") {
      a.copy_threads = value.as<int>();
      if (a.copy_threads < 1 || a.copy_threads > 64) return Error(origin, value, path, "1..64");
    } else if (key == "faults") {
      REELFS_RETURN_IF_ERROR(LoadFaultScenarioFile(Resolve(origin, text), &options->faults));
    } else {
      return Error(origin, item.first, path, "unknown key");
    }
  }
  if (a.release_low_bytes > a.release_high_bytes) {
    return Error(origin, node, "archive.release_low_watermark",
                 "must not exceed release_high_watermark");
  }
  return Status::Ok();
}

}  // namespace

Status LoadFaultScenarioFile(const std::string& path, FaultScenario* out) {
  std::ifstream in(path);
  if (!in) return Status::NotFound("cannot read fault scenario file " + path);
  std::stringstream ss;
  ss << in.rdbuf();
  try {
    YAML::Node root = YAML::Load(ss.str());
    if (root.IsNull()) return Status::Ok();
    // A scenario file is either the `faults:` mapping itself or a document holding one.
    if (root.IsMap() && root["faults"]) return ParseFaults(path, root["faults"], out);
    return ParseFaults(path, root, out);
  } catch (const YAML::Exception& e) {
    return Status::InvalidArgument(path + ":" + std::to_string(e.mark.line + 1) + ": " + e.msg);
  }
}

Status LoadConfigString(std::string_view yaml, std::string_view origin, Options* options) {
  YAML::Node root;
  try {
    root = YAML::Load(std::string(yaml));
  } catch (const YAML::Exception& e) {
    return Status::InvalidArgument(std::string(origin) + ":" + std::to_string(e.mark.line + 1) +
                                   ": " + e.msg);
  }
  if (root.IsNull()) return Status::Ok();
  if (!root.IsMap()) return Status::InvalidArgument(std::string(origin) + ": expected a mapping");
  try {
    for (const auto& item : root) {
      const std::string key = item.first.as<std::string>();
      const YAML::Node& value = item.second;
      if (key == "archive") {
        REELFS_RETURN_IF_ERROR(ParseArchive(origin, value, options));
        continue;
      }
      if (key == "faults") {
        REELFS_RETURN_IF_ERROR(ParseFaults(origin, value, &options->faults));
        continue;
      }
      if (key == "tape") {
        // The tape section belongs to the simulator's own loader (gateway/tape/config.h).
        REELFS_RETURN_IF_ERROR(ExpectMap(origin, value, "tape"));
        auto tape = tape::LoadLibraryConfigYaml(YAML::Dump(value));
        if (!tape.ok()) return Error(origin, value, key, std::string(tape.status().message()));
        options->tape = std::move(*tape);
        continue;
      }
      if (!value.IsScalar()) return Error(origin, value, key, "expected a scalar");
      const std::string text = value.as<std::string>();
      auto bytes = [&](uint64_t* out) -> Status {
        auto v = ParseByteSize(text);
        if (!v.ok()) return Error(origin, value, key, std::string(v.status().message()));
        *out = *v;
        return Status::Ok();
      };
      if (key == "root") {
        options->root = text;
      } else if (key == "create") {
        options->create_root = value.as<bool>();
      } else if (key == "front_end") {
        options->front_end = value.as<bool>();
      } else if (key == "listen") {
        options->listen = text;
      } else if (key == "allow_non_loopback") {
        options->allow_non_loopback = value.as<bool>();
      } else if (key == "access_key") {
        options->access_key = text;
      } else if (key == "secret_key") {
        options->secret_key = text;
      } else if (key == "region") {
        options->region = text;
      } else if (key == "threads") {
        options->threads = value.as<int>();
        if (options->threads < 1 || options->threads > 256) {
          return Error(origin, value, key, "must be 1..256");
        }
      } else if (key == "port_file") {
        options->port_file = text;
      } else if (key == "log_level") {
        options->log_level = text;
      } else if (key == "tls_cert") {
        options->tls_cert = text;
      } else if (key == "tls_key") {
        options->tls_key = text;
      } else if (key == "log_format") {
        if (!ParseLogFormat(text).ok()) return Error(origin, value, key, "must be text or json");
        options->log_format = text;
      } else if (key == "idle_timeout") {
        auto d = ParseDuration(text);
        if (!d.ok()) return Error(origin, value, key, std::string(d.status().message()));
        options->idle_timeout = std::chrono::duration_cast<std::chrono::seconds>(*d);
        if (options->idle_timeout.count() < 1) return Error(origin, value, key, "must be >= 1s");
      } else if (key == "virtual_host_domain") {
        options->virtual_host_domain = text;
      } else if (key == "max_put_size") {
        REELFS_RETURN_IF_ERROR(bytes(&options->max_put_size));
      } else if (key == "min_part_size") {
        REELFS_RETURN_IF_ERROR(bytes(&options->min_part_size));
      } else if (key == "multipart_expiry") {
        auto d = ParseDuration(text);
        if (!d.ok()) return Error(origin, value, key, std::string(d.status().message()));
        if (d->count() < 0) return Error(origin, value, key, "must be >= 0 (0: never)");
        options->multipart_expiry = *d;
      } else {
        return Error(origin, item.first, key, "unknown key");
      }
    }
  } catch (const YAML::Exception& e) {
    return Status::InvalidArgument(std::string(origin) + ":" + std::to_string(e.mark.line + 1) +
                                   ": " + e.msg);
  }
  return Status::Ok();
}

Status LoadConfigFile(const std::string& path, Options* options) {
  std::ifstream in(path);
  if (!in) return Status::NotFound("cannot read config file " + path);
  std::stringstream ss;
  ss << in.rdbuf();
  return LoadConfigString(ss.str(), path, options);
}

}  // namespace reelfs::gateway

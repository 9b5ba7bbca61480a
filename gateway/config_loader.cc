#include "gateway/config_loader.h"

#include <fstream>
#include <sstream>

#include <yaml-cpp/yaml.h>

#include "common/units.h"

namespace reelfs::gateway {
namespace {

Status Error(std::string_view origin, const YAML::Node& node, const std::string& key,
             const std::string& what) {
  return Status::InvalidArgument(std::string(origin) + ":" + std::to_string(node.Mark().line + 1) +
                                 ": " + key + ": " + what);
}

}  // namespace

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

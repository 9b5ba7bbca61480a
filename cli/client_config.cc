#include "cli/client_config.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <utility>

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

namespace reelfs::cli {
namespace {

std::string Where(std::string_view origin, const YAML::Node& node) {
  return fmt::format("{}:{}", origin, node.Mark().line + 1);
}

Status Error(std::string_view origin, const YAML::Node& node, std::string_view what) {
  return Status::InvalidArgument(fmt::format("{}: {}", Where(origin, node), what));
}

// A profile as read so far: key -> setting, so a later file replaces a key.
struct Partial {
  std::map<std::string, ConfigSetting> global;
  std::map<std::string, ConfigSetting> mount;
};

struct Parsed {
  std::optional<std::string> default_profile;
  std::map<std::string, Partial> profiles;
};

Status ReadSection(const YAML::Node& map, std::string_view origin, std::string_view profile,
                   std::map<std::string, ConfigSetting>& into, Partial* nested) {
  for (const auto& kv : map) {
    const std::string key = kv.first.as<std::string>();
    const YAML::Node& value = kv.second;
    if (key == "mount" && nested != nullptr) {
      if (!value.IsMap()) {
        return Error(origin, value,
                     fmt::format("profile '{}': mount must be a mapping of "
                                 "`reelfs mount` options",
                                 profile));
      }
      REELFS_RETURN_IF_ERROR(ReadSection(value, origin, profile, nested->mount, nullptr));
      continue;
    }
    if (key == "endpoint" && value.IsSequence()) {
      // Several front ends (docs/s3-client.md "Several endpoints"): the flag's comma list.
      std::string list;
      for (const auto& item : value) {
        if (!item.IsScalar()) {
          return Error(origin, item,
                       fmt::format("profile '{}': endpoint list items must be URLs", profile));
        }
        list += (list.empty() ? "" : ",") + item.Scalar();
      }
      into[key] = ConfigSetting{key, list, Where(origin, kv.first)};
      continue;
    }
    if (!value.IsScalar()) {
      return Error(origin, value,
                   fmt::format("profile '{}': {} must be a single value, not a {}", profile, key,
                               value.IsMap()        ? "mapping"
                               : value.IsSequence() ? "list"
                                                    : "null"));
    }
    into[key] = ConfigSetting{key, value.Scalar(), Where(origin, kv.first)};
  }
  return Status::Ok();
}

Status ParseInto(std::string_view yaml, std::string_view origin, Parsed& out) {
  YAML::Node root;
  try {
    root = YAML::Load(std::string(yaml));
  } catch (const YAML::Exception& e) {
    return Status::InvalidArgument(
        fmt::format("{}:{}: not YAML: {}", origin, e.mark.line + 1, e.msg));
  }
  if (root.IsNull()) return Status::Ok();  // an empty file
  if (!root.IsMap()) return Error(origin, root, "the file must be a mapping (profiles: ...)");
  try {
    for (const auto& kv : root) {
      const std::string key = kv.first.as<std::string>();
      if (key == "default_profile") {
        if (!kv.second.IsScalar()) return Error(origin, kv.second, "default_profile: a name");
        out.default_profile = kv.second.Scalar();
      } else if (key == "profiles") {
        if (!kv.second.IsMap()) {
          return Error(origin, kv.second, "profiles must be a mapping of names to settings");
        }
        for (const auto& p : kv.second) {
          const std::string name = p.first.as<std::string>();
          if (!p.second.IsMap() && !p.second.IsNull()) {
            return Error(origin, p.second,
                         fmt::format("profile '{}' must be a mapping of settings", name));
          }
          Partial& partial = out.profiles[name];
          if (p.second.IsMap()) {
            REELFS_RETURN_IF_ERROR(ReadSection(p.second, origin, name, partial.global, &partial));
          }
        }
      } else {
        return Error(origin, kv.first,
                     fmt::format("unknown key '{}' (default_profile, profiles)", key));
      }
    }
  } catch (const YAML::Exception& e) {  // a key that is not a scalar, for one
    return Status::InvalidArgument(fmt::format("{}:{}: {}", origin, e.mark.line + 1, e.msg));
  }
  return Status::Ok();
}

Result<std::optional<ClientProfile>> Select(const Parsed& parsed, std::string_view asked,
                                            std::vector<std::string> files) {
  std::string name(asked);
  if (name.empty()) name = parsed.default_profile.value_or("default");
  auto it = parsed.profiles.find(name);
  if (it == parsed.profiles.end()) {
    if (asked.empty() && !parsed.default_profile) return std::optional<ClientProfile>();
    std::string known;
    for (const auto& [n, unused] : parsed.profiles) known += (known.empty() ? "" : ", ") + n;
    return Status::InvalidArgument(fmt::format(
        "no profile '{}' in {} (profiles: {})", name,
        files.empty() ? std::string("any config file") : fmt::format("{}", fmt::join(files, ", ")),
        known.empty() ? "none" : known));
  }
  ClientProfile profile{.name = name, .files = std::move(files), .global = {}, .mount = {}};
  for (const auto& [k, s] : it->second.global) profile.global.push_back(s);
  for (const auto& [k, s] : it->second.mount) profile.mount.push_back(s);
  return std::optional<ClientProfile>(std::move(profile));
}

}  // namespace

std::vector<std::string> DefaultConfigFiles() {
  std::vector<std::string> files = {"/etc/reelfs/config.yaml"};
  if (const char* xdg = std::getenv("XDG_CONFIG_HOME"); xdg != nullptr && xdg[0] == '/') {
    files.push_back(std::string(xdg) + "/reelfs/config.yaml");
  } else if (const char* home = std::getenv("HOME"); home != nullptr && home[0] != '\0') {
    files.push_back(std::string(home) + "/.config/reelfs/config.yaml");
  }
  return files;
}

Result<std::optional<ClientProfile>> LoadClientProfile(const std::vector<std::string>& files,
                                                       std::string_view name, bool required_files) {
  Parsed parsed;
  std::vector<std::string> read;
  for (const std::string& file : files) {
    std::ifstream in(file);
    if (!in) {
      if (!required_files && !std::filesystem::exists(file)) continue;
      return Status::InvalidArgument("cannot read config file " + file);
    }
    std::stringstream text;
    text << in.rdbuf();
    REELFS_RETURN_IF_ERROR(ParseInto(text.str(), file, parsed));
    read.push_back(file);
  }
  if (read.empty() && name.empty()) return std::optional<ClientProfile>();
  return Select(parsed, name, std::move(read));
}

Result<std::optional<ClientProfile>> ParseClientProfile(std::string_view yaml,
                                                        std::string_view origin,
                                                        std::string_view name) {
  Parsed parsed;
  REELFS_RETURN_IF_ERROR(ParseInto(yaml, origin, parsed));
  return Select(parsed, name, {std::string(origin)});
}

}  // namespace reelfs::cli

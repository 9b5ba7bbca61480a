// Loads gateway::Options from YAML (the only file that includes yaml-cpp). Unknown keys are
// rejected; errors name the file, the key and the line. Sizes and durations take units
// ("5GiB", "60s").
//
// Thread-safety: pure functions.
#pragma once

#include <string>
#include <string_view>

#include "common/status.h"
#include "gateway/options.h"

namespace reelfs::gateway {

// Overwrites the fields present in the file, leaves the others as they are.
Status LoadConfigFile(const std::string& path, Options* options);
// Same, from text (`origin` names it in errors). Sections: `archive:` (ArchiveOptions; its
// `faults: FILE` loads a scenario file relative to the config file), `tape:` (handed as YAML
// text to tape::LoadLibraryConfigYaml), `faults:` (FaultScenario).
Status LoadConfigString(std::string_view yaml, std::string_view origin, Options* options);
// A fault scenario file: the `faults:` mapping, at top level or under a `faults:` key.
Status LoadFaultScenarioFile(const std::string& path, FaultScenario* out);

}  // namespace reelfs::gateway

// XML text escaping for the timeline SVG (the metrics are JSON, built with common/json.h).
//
// Thread-safety: pure functions.
#pragma once

#include <string>
#include <string_view>

namespace reelfs::gateway::tape {

// Escapes &, <, >, " and ' for XML text and attribute values; drops control characters XML 1.0
// forbids.
std::string XmlEscape(std::string_view s);

}  // namespace reelfs::gateway::tape

// Tiny JSON and XML text helpers for the metrics and the timeline (no JSON library is a dependency
// of this module, and the documents are small and flat).
//
// Thread-safety: pure functions.
#pragma once

#include <string>
#include <string_view>

namespace reelfs::gateway::tape {

// A JSON string literal with quotes; control characters become \u00XX.
std::string JsonString(std::string_view s);
// A finite number in shortest round-trip form; NaN and infinities (never expected) become 0.
std::string JsonNumber(double v);
// Escapes &, <, >, " and ' for XML text and attribute values; drops control characters XML 1.0
// forbids.
std::string XmlEscape(std::string_view s);

}  // namespace reelfs::gateway::tape

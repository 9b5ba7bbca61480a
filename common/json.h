// JSON documents: built as nlohmann::ordered_json values (members stay in the order they were
// added, which is the order docs/ show and tests pin) and turned into text by DumpJson only, so
// the one policy for bytes that are not UTF-8 lives here.
//
// Thread-safety: pure functions.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace reelfs {

using Json = nlohmann::ordered_json;

// `doc` as one line of JSON. Bytes that are not valid UTF-8 (an S3 key, a file name or an error
// message may hold any) become U+FFFD: the error handler is `replace`, because the default
// throws, and this runs in FUSE callbacks and worker threads where an exception ends the process.
std::string DumpJson(const Json& doc);

// `v` as a JSON number; NaN and infinities, which JSON cannot write, become 0 (nlohmann would
// write null, which a reader expecting a number trips on).
Json JsonNumber(double v);

}  // namespace reelfs

// The version both binaries print for --version: the project's (CMakeLists.txt) and, when built
// from a git checkout, `git describe --always --dirty` ("0.1.0 (git 17071ee0a1b2-dirty)").
// Generated at build time (cmake/ReelfsVersion.cmake), so it follows commits without a
// reconfigure.
//
// Thread-safety: a constant.
#pragma once

#include <string_view>

namespace reelfs {

std::string_view VersionString();

}  // namespace reelfs

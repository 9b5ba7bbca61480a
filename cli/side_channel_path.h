// Where `reelfs mount` puts its side-channel socket (docs/protocols/side-channel.md section 2):
// `--side-channel=auto` (the default), `off`, or an absolute path.
//
// auto: <dir>/<id>.sock, where <dir> is /run/reelfs for root, else $XDG_RUNTIME_DIR/reelfs when
// that is set, else /tmp/reelfs-<uid>; <id> is a hash of the mountpoint, so a daemon that died
// leaves a socket the next mount at the same place replaces (the server replaces only sockets).
// The directory is created (0700; 0755 with allow_other, so other users can reach a 0666
// socket) and must be a real directory owned by the mounting user and writable by no one else,
// so nobody can plant a socket where clients look.
//
// Thread-safety: pure functions, except PrepareSocketDirectory (the file system).
#pragma once

#include <string>
#include <string_view>

#include <sys/types.h>

#include "common/result.h"

namespace reelfs::cli {

// The socket path for the flag's value: "" for off. An explicit path must be absolute; every
// path must fit sockaddr_un (at most 107 bytes). `xdg_runtime_dir` may be null.
Result<std::string> ResolveSideChannelPath(std::string_view flag, std::string_view mountpoint,
                                           uid_t euid, const char* xdg_runtime_dir);

// Creates the socket's directory when missing (only the last component) and checks it.
[[nodiscard]] Status PrepareSocketDirectory(const std::string& socket_path, bool allow_other);

}  // namespace reelfs::cli

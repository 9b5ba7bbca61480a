// LocalSources: what `reelfs cp LOCAL s3://...` uploads, and under which keys (cli/README.md,
// "Uploads").
//
//   cp FILE s3://b/key      one source, key "key"; a key that is empty or ends in '/' gets the
//                           file's name appended (s3://b/dir/ -> dir/FILE), as `aws s3 cp` does
//   cp - s3://b/key         stdin, streamed (size unknown); the key must name an object
//   cp -r DIR s3://b/pre    every regular file below DIR, key "pre/" + its path below DIR with
//                           '/' between components, in sorted order; empty directories upload
//                           nothing (S3 has no directories)
//
// Symbolic links are followed by default (as `aws s3 cp`, whose --follow-symlinks is the
// default): a link to a file uploads the file's bytes under the link's name, a link to a
// directory is walked, except where it leads back to a directory being walked (a cycle, an
// error). With follow_symlinks false every link is skipped with a note and is not an error.
// What cannot be uploaded is an error line (`problems`): a broken link, a directory that cannot
// be read, a special file (FIFO, socket, device), a name that is not valid UTF-8 (S3 keys are
// UTF-8). The rest of the tree is still uploaded; the command then exits 1.
//
// Thread-safety: pure functions over the file system; call from one thread.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/result.h"

namespace reelfs::cli {

struct LocalSource {
  std::string path;  // to open; "-" is stdin
  std::string key;   // the object's key
  uint64_t size = 0;
  bool size_known = true;  // false for stdin
};

struct LocalSourceList {
  std::vector<LocalSource> sources;
  std::vector<std::string> problems;  // one line each: not uploaded, an error
  std::vector<std::string> notes;     // one line each: skipped on request (symlinks)
};

struct LocalSourceOptions {
  bool recursive = false;
  bool follow_symlinks = true;
};

// `source` is a path or "-", `key` the destination key or prefix (from s3://bucket/KEY). A usage
// error (a directory without -r, -r on a file or stdin, stdin to a prefix, a missing source) is
// kInvalidArgument / the errno of the failed stat, with a message naming the path.
Result<LocalSourceList> ListLocalSources(const std::string& source, const std::string& key,
                                         const LocalSourceOptions& options);

// Whether `s` is valid UTF-8 (no overlongs, surrogates or code points past U+10FFFF).
bool IsValidUtf8(std::string_view s);

}  // namespace reelfs::cli

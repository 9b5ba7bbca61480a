// The `reelfs` subcommands that work on s3:// URLs (ls, cp, cat, stat): they give scripts and the
// demo a way to use the client library directly. The mount and the tape commands have headers of
// their own (mount_command.h, tape_commands.h).
//
// Each returns a process exit status after printing its own errors to stderr.
// Thread-safety: called once from main.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "cli/uploader.h"
#include "common/result.h"
#include "s3/object_store.h"

namespace reelfs::cli {

struct LsArgs {
  std::string url;
  bool recursive = false;
};
int RunLs(s3::ObjectStore& store, const LsArgs& args);

// `reelfs cp SOURCE DEST`: a download when SOURCE is s3://bucket/key (DEST a file or - for
// stdout), an upload when DEST is s3://bucket/key-or-prefix (SOURCE a file, - for stdin, or a
// directory with `recursive`). Exit status: 0 everything copied, 1 something was not (one line
// per file says why), 2 a usage error (nothing copied). cli/README.md has the rules.
struct CpArgs {
  std::string source;   // s3://bucket/key, a local path, or "-" for stdin
  std::string dest;     // a local path or "-" for stdout, or s3://bucket/key-or-prefix
  int concurrency = 8;  // ranged GETs in flight; for an upload, UploadParts in flight per file
  uint64_t part_size = 8 << 20;  // bytes per ranged GET; for an upload, the first part size
  // Uploads only.
  bool recursive = false;            // SOURCE is a directory: every regular file below it
  bool overwrite = false;            // replace existing objects (off: refuse each, exit 1)
  bool follow_symlinks = true;       // off: skip every symbolic link with a note
  int files_in_flight = 4;           // files uploaded at once
  uint64_t max_memory = 1ull << 30;  // part buffers of all files together
  bool progress = false;             // draw the progress bar (stderr is a tty, no --quiet)
  // --rdma (uploads only): opens the parts' transport (cli/rdma_open.h) once the upload is
  // known to happen; null without the flag. The counters of the paths the parts took end the
  // copy on stderr.
  std::function<Result<UploadTransport>()> open_rdma;
};
int RunCp(s3::ObjectStore& store, const CpArgs& args);
// Where a download of `key` to local `dest` writes: `dest` itself, or, when `dest` ends in '/' or
// is a directory, dest/ + the key's last component (as cp and `aws s3 cp` do); an error for a key
// with no last component ("dir/").
Result<std::string> DownloadPath(const std::string& dest, const std::string& key);

int RunStat(s3::ObjectStore& store, const std::string& url);

}  // namespace reelfs::cli

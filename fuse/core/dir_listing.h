// DirListing: one directory's children, built from every page of ListObjectsV2 with delimiter
// '/' under the directory's prefix (docs/semantics.md "Names and directories").
//
//  - A common prefix "p/name/" is a directory `name`, with or without a marker object.
//  - An object "p/name" is a file `name`. An object "p/" (the directory's own marker) is not a
//    child: it is recorded as `has_marker` and never becomes a file named "".
//  - A file "p/a" and a prefix "p/a/" together: the directory wins and the file is hidden,
//    logged once per key. (mountpoint-s3 makes the same choice: the directory is the only one
//    that can show the file's siblings.)
//  - Names that fail CheckName are skipped, logged once per key.
// Entries are sorted by name (byte order), which is also the READDIR order.
//
// ListDirectory fetches all pages asynchronously (1000 keys a page) and calls back once.
//
// Thread-safety: a DirListing is immutable once built and shared between readers;
// ListDirectory may be called from any thread.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "fuse/core/name_rules.h"
#include "fuse/core/types.h"
#include "s3/object_store.h"

namespace reelfs::fuse {

struct ListedEntry {
  std::string name;
  bool is_dir = false;
  s3::ObjectInfo info;  // files: the object as listed (size, etag, mtime); dirs: empty
};

struct DirListing {
  std::vector<ListedEntry> entries;  // sorted by name
  bool has_marker = false;           // an object named exactly the directory's prefix exists
  // The entry named `name`, or null.
  const ListedEntry* Find(std::string_view name) const;
};

// Builds a listing of `prefix` ("" or ending in '/') from its pages. Skips and conflicts are
// reported through `warn` (one log line per key per mount).
DirListing BuildDirListing(std::string_view prefix, const std::vector<s3::ListObjectsPage>& pages,
                           WarnOnce& warn);

// Lists `prefix` in `bucket` page by page; `on_request` runs before each ListObjects call (for
// counters). `done` runs exactly once, on the store's thread or the caller's.
void ListDirectory(std::shared_ptr<s3::ObjectStore> store, std::string bucket, std::string prefix,
                   std::shared_ptr<WarnOnce> warn, std::function<void()> on_request,
                   Callback<std::shared_ptr<const DirListing>> done);

// Lists `prefix` in `bucket` as ListDirectory does (same pages, names, warnings), but requests at
// most `max_pages` (>= 1) pages. `on_request` runs before each ListObjects call (for counters);
// `on_more(pages)` runs after each page that is neither the last one nor the budget's last, with
// the number of pages fetched so far. `done` runs exactly once: with the listing; with a null
// listing when the directory has more than `max_pages` pages (nothing more is requested and the
// pages are dropped); or with the error of the page that failed.
void ListDirectoryBounded(std::shared_ptr<s3::ObjectStore> store, std::string bucket,
                          std::string prefix, std::shared_ptr<WarnOnce> warn, uint32_t max_pages,
                          std::function<void()> on_request,
                          std::function<void(uint32_t pages)> on_more,
                          Callback<std::shared_ptr<const DirListing>> done);

// Every object under `prefix` (ListObjectsV2 without delimiter, with restore status and tape
// hints), page by page: `on_page` runs once per page, in key order, on the store's thread;
// `done` runs exactly once, after the last page or with the first failure. Directory markers
// (keys ending in '/') are passed along; callers skip them.
void ListSubtree(std::shared_ptr<s3::ObjectStore> store, std::string bucket, std::string prefix,
                 std::function<void()> on_request,
                 std::function<void(const std::vector<s3::ObjectInfo>&)> on_page,
                 std::function<void(Status)> done);

// `key` with control bytes escaped, for log lines.
std::string PrintableKey(std::string_view key);

}  // namespace reelfs::fuse

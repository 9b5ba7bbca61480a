#include <cstdio>
#include <iostream>
#include <string>
#include <utility>

#include "cli/commands.h"
#include "cli/explain.h"
#include "cli/s3_url.h"
#include "common/time_format.h"
#include "s3/await.h"
#include "s3/list_pages.h"

namespace reelfs::cli {

// Prints what `aws s3 ls` prints: "PRE name/" for common prefixes, "date time size key" for
// objects; recursive listings show full keys and no prefixes.
int RunLs(s3::ObjectStore& store, const LsArgs& args) {
  auto url = ParseS3Url(args.url);
  if (!url.ok()) {
    std::cerr << "reelfs ls: " << url.status().message() << "\n";
    return 2;
  }
  s3::ListObjectsRequest req{.bucket = url->bucket, .prefix = url->key};
  if (!args.recursive) req.delimiter = "/";
  // The one paging loop (s3/list_pages.h): a server repeating its continuation token fails the
  // listing instead of looping.
  Status status =
      s3::ListPagesBlocking(store, std::move(req), [&](s3::ListObjectsPage page, bool /*last*/) {
        for (const std::string& p : page.common_prefixes) {
          std::printf("%30s PRE %s\n", "", p.substr(url->key.size()).c_str());
        }
        for (const s3::ObjectInfo& o : page.objects) {
          std::string name = args.recursive ? o.key : o.key.substr(url->key.size());
          std::printf("%s %10llu %s\n", FormatDateTime(o.last_modified).c_str(),
                      static_cast<unsigned long long>(o.size), name.c_str());
        }
        return true;
      });
  if (!status.ok()) {
    std::cerr << "reelfs ls: " << Explain(status, {.bucket = url->bucket}) << "\n";
    return 1;
  }
  return 0;
}

int RunStat(s3::ObjectStore& store, const std::string& text) {
  auto url = ParseS3Url(text);
  if (!url.ok() || url->key.empty()) {
    std::cerr << "reelfs stat: expected s3://bucket/key, got '" << text << "'\n";
    return 2;
  }
  auto info = s3::Await<s3::ObjectInfo>(
      [&](auto cb) { store.HeadObject({.bucket = url->bucket, .key = url->key}, cb); });
  if (!info.ok()) {
    std::cerr << "reelfs stat: " << Explain(info.status(), {.bucket = url->bucket, .key = url->key})
              << "\n";
    return 1;
  }
  std::printf("key: %s\nsize: %llu\netag: %s\nlast-modified: %s\nstorage-class: %s\n",
              info->key.c_str(), static_cast<unsigned long long>(info->size), info->etag.c_str(),
              FormatDateTime(info->last_modified).c_str(), info->storage_class.c_str());
  if (!info->content_type.empty()) std::printf("content-type: %s\n", info->content_type.c_str());
  for (const auto& [k, v] : info->user_metadata) std::printf("meta.%s: %s\n", k.c_str(), v.c_str());
  return 0;
}

}  // namespace reelfs::cli

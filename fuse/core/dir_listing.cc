#include "fuse/core/dir_listing.h"

#include <algorithm>
#include <limits>
#include <map>

#include "common/log.h"
#include "s3/list_pages.h"

namespace reelfs::fuse {
namespace {

// S3's page size; asking for more is capped by the server anyway.
constexpr int kListPageKeys = 1000;

// Every listing here pages through s3::ListPages (s3/list_pages.h), the client's one paging loop,
// with the page size and the optional attributes of the mount's listings.
void PageThrough(std::shared_ptr<s3::ObjectStore> store, s3::ListObjectsRequest request,
                 std::function<void()> on_request,
                 std::function<bool(s3::ListObjectsPage page, bool last)> on_page,
                 std::function<void(Status)> done) {
  request.max_keys = kListPageKeys;
  // The tape state of every object comes with the listing where the server can tell it (AWS's
  // RestoreStatus, reelfs-gateway's <ReelfsTape>); others ignore both headers.
  request.fetch_restore_status = true;
  request.fetch_tape_hints = true;
  s3::ListPages(std::move(store), std::move(request),
                {.on_request = std::move(on_request),
                 .on_page = std::move(on_page),
                 .done = std::move(done)});
}

}  // namespace

const ListedEntry* DirListing::Find(std::string_view name) const {
  auto it = std::lower_bound(entries.begin(), entries.end(), name,
                             [](const ListedEntry& e, std::string_view n) { return e.name < n; });
  if (it == entries.end() || it->name != name) return nullptr;
  return &*it;
}

std::string PrintableKey(std::string_view key) {
  std::string out;
  out.reserve(key.size());
  for (unsigned char c : key) {
    if (c < 0x20 || c == 0x7f) {
      out += fmt::format("\\x{:02x}", c);
    } else {
      out += static_cast<char>(c);
    }
  }
  return out;
}

DirListing BuildDirListing(std::string_view prefix, const std::vector<s3::ListObjectsPage>& pages,
                           WarnOnce& warn) {
  auto skip = [&](std::string_view key, NameProblem problem) {
    if (warn.First(key)) {
      REELFS_LOG_WARN("fuse", "skipping key '{}': {}", PrintableKey(key), NameProblemText(problem));
    }
  };
  // Directories first, so a file of the same name can be recognised as shadowed.
  std::map<std::string, ListedEntry, std::less<>> by_name;
  DirListing listing;
  for (const auto& page : pages) {
    for (const auto& cp : page.common_prefixes) {
      if (cp.size() <= prefix.size() || cp.compare(0, prefix.size(), prefix) != 0 ||
          cp.back() != '/') {
        continue;  // not under our prefix: a server bug, ignore
      }
      std::string_view name(cp);
      name = name.substr(prefix.size(), name.size() - prefix.size() - 1);
      if (auto p = CheckName(name); p != NameProblem::kNone) {
        skip(cp, p);
        continue;
      }
      ListedEntry e;
      e.name = std::string(name);
      e.is_dir = true;
      by_name.insert_or_assign(e.name, std::move(e));
    }
  }
  for (const auto& page : pages) {
    for (const auto& obj : page.objects) {
      if (obj.key.size() < prefix.size() || obj.key.compare(0, prefix.size(), prefix) != 0) {
        continue;
      }
      std::string_view name(obj.key);
      name.remove_prefix(prefix.size());
      if (name.empty()) {
        listing.has_marker = true;  // the directory's own marker object
        continue;
      }
      if (auto p = CheckName(name); p != NameProblem::kNone) {
        skip(obj.key, p);
        continue;
      }
      auto it = by_name.find(name);
      if (it != by_name.end()) {
        if (it->second.is_dir && warn.First(obj.key)) {
          REELFS_LOG_WARN("fuse", "file '{}' is hidden by directory '{}/'", PrintableKey(obj.key),
                          PrintableKey(obj.key));
        }
        continue;
      }
      ListedEntry e;
      e.name = std::string(name);
      e.is_dir = false;
      e.info = obj;
      by_name.emplace(e.name, std::move(e));
    }
  }
  listing.entries.reserve(by_name.size());
  for (auto& [name, entry] : by_name) listing.entries.push_back(std::move(entry));
  return listing;
}

void ListDirectoryBounded(std::shared_ptr<s3::ObjectStore> store, std::string bucket,
                          std::string prefix, std::shared_ptr<WarnOnce> warn, uint32_t max_pages,
                          std::function<void()> on_request,
                          std::function<void(uint32_t pages)> on_more,
                          Callback<std::shared_ptr<const DirListing>> done) {
  struct Pages {
    std::vector<s3::ListObjectsPage> pages;
    std::shared_ptr<const DirListing> listing;  // set when the last page arrived in budget
  };
  auto acc = std::make_shared<Pages>();
  max_pages = std::max<uint32_t>(max_pages, 1);
  s3::ListObjectsRequest request;
  request.bucket = std::move(bucket);
  request.prefix = prefix;
  request.delimiter = "/";
  auto on_page = [acc, max_pages, prefix, warn = std::move(warn), on_more = std::move(on_more)](
                     s3::ListObjectsPage page, bool last) {
    acc->pages.push_back(std::move(page));
    if (last) {
      acc->listing = std::make_shared<const DirListing>(BuildDirListing(prefix, acc->pages, *warn));
      acc->pages.clear();
      return false;
    }
    const auto fetched = static_cast<uint32_t>(acc->pages.size());
    if (fetched >= max_pages) {
      acc->pages.clear();  // over budget: done with a null listing
      return false;
    }
    // Before the next request: the waiters it releases go to HEAD+LIST now, not a page later.
    if (on_more) on_more(fetched);
    return true;
  };
  PageThrough(std::move(store), std::move(request), std::move(on_request), std::move(on_page),
              [acc, done = std::move(done)](Status status) {
                if (!status.ok()) return done(std::move(status));
                done(std::move(acc->listing));
              });
}

void ListDirectory(std::shared_ptr<s3::ObjectStore> store, std::string bucket, std::string prefix,
                   std::shared_ptr<WarnOnce> warn, std::function<void()> on_request,
                   Callback<std::shared_ptr<const DirListing>> done) {
  ListDirectoryBounded(std::move(store), std::move(bucket), std::move(prefix), std::move(warn),
                       std::numeric_limits<uint32_t>::max(), std::move(on_request), nullptr,
                       std::move(done));
}

void ListSubtree(std::shared_ptr<s3::ObjectStore> store, std::string bucket, std::string prefix,
                 std::function<void()> on_request,
                 std::function<void(const std::vector<s3::ObjectInfo>&)> on_page,
                 std::function<void(Status)> done) {
  s3::ListObjectsRequest request;
  request.bucket = std::move(bucket);
  request.prefix = std::move(prefix);
  PageThrough(
      std::move(store), std::move(request), std::move(on_request),
      [on_page = std::move(on_page)](s3::ListObjectsPage page, bool /*last*/) {
        on_page(page.objects);
        return true;
      },
      std::move(done));
}

}  // namespace reelfs::fuse

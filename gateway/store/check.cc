// Store::Check: the catalog against the files, read-only (docs/gateway.md "Checking a root").
#include <algorithm>
#include <map>
#include <set>

#include "common/json.h"
#include "gateway/store/etag.h"
#include "gateway/store/key_validation.h"
#include "gateway/store/store.h"

namespace reelfs::gateway {
namespace {

constexpr std::string_view kEmptyMd5 = "d41d8cd98f00b204e9800998ecf8427e";

bool IsHex(std::string_view s) {
  return s.find_first_not_of("0123456789abcdef") == std::string_view::npos;
}

// A multipart ETag: 32 hex digits, '-', the part count (1..10000).
bool IsMultipartEtag(std::string_view etag) {
  const size_t dash = etag.find('-');
  if (dash != 32 || !IsHex(etag.substr(0, 32))) return false;
  const std::string_view n = etag.substr(33);
  if (n.empty() || n.size() > 5 || n.find_first_not_of("0123456789") != std::string_view::npos) {
    return false;
  }
  const int parts = std::stoi(std::string(n));
  return parts >= 1 && parts <= 10000;
}

}  // namespace

std::string Store::CheckReport::ToJson() const {
  return DumpJson(Json{{"buckets", buckets},
                       {"objects", objects},
                       {"files", files},
                       {"bytes", bytes},
                       {"contents_hashed", hashed},
                       {"uploads", uploads},
                       {"problems", problems}});
}

Result<Store::CheckReport> Store::Check() {
  CheckReport report;
  REELFS_ASSIGN_OR_RETURN(std::vector<std::string> dirs, fs_->ListBucketDirs());
  REELFS_ASSIGN_OR_RETURN(auto known, catalog_->Buckets());
  for (const auto& [name, created] : known) {
    if (!std::binary_search(dirs.begin(), dirs.end(), name)) {
      report.problems.push_back(name + ": bucket row without a directory");
    }
  }
  for (const std::string& bucket : dirs) {
    ++report.buckets;
    if (!known.count(bucket)) report.problems.push_back(bucket + ": directory without a row");
    std::map<std::string, FileStat> files;
    REELFS_RETURN_IF_ERROR(fs_->Walk(
        bucket, [&](const std::string& key, const FileStat& st) { files.emplace(key, st); }));
    report.files += files.size();
    std::set<std::string> rows;
    std::string after;
    bool first = true;
    while (true) {
      REELFS_ASSIGN_OR_RETURN(auto page, catalog_->ListObjects(bucket, after, first, "", 1000));
      first = false;
      if (page.empty()) break;
      for (const ObjectRecord& rec : page) {
        rows.insert(rec.key);
        ++report.objects;
        const std::string id = bucket + "/" + rec.key;
        auto it = files.find(rec.key);
        if (it == files.end()) {
          report.problems.push_back(id + ": catalog row without a file");
          continue;
        }
        const FileStat& st = it->second;
        const bool offline = rec.archive.has_value() &&
                             rec.archive->state == ArchiveState::kOffline && st.size == 0 &&
                             !st.is_dir;
        if (st.is_dir != IsDirectoryMarker(rec.key)) {
          report.problems.push_back(id +
                                    ": a directory and a key that is not a marker, or the "
                                    "reverse");
          continue;
        }
        if (st.is_dir) {
          if (rec.etag != kEmptyMd5 || rec.size != 0) {
            report.problems.push_back(id + ": directory marker row with size or ETag of data");
          }
          continue;
        }
        if (offline) continue;  // the placeholder: size and ETag are the tape copy's
        report.bytes += st.size;
        if (rec.size != st.size) {
          report.problems.push_back(id + ": size " + std::to_string(rec.size) +
                                    " in the catalog, " + std::to_string(st.size) + " on disk");
        }
        if (rec.mtime_ns != st.mtime_ns) {
          report.problems.push_back(id + ": mtime differs between catalog and file");
        }
        if (IsMultipartEtag(rec.etag)) continue;  // not a content hash; size checked above
        if (rec.etag.size() != 32 || !IsHex(rec.etag)) {
          report.problems.push_back(id + ": malformed ETag " + rec.etag);
          continue;
        }
        auto opened = fs_->OpenObject(bucket, rec.key);
        if (!opened.ok()) {
          report.problems.push_back(id + ": " + opened.status().ToString());
          continue;
        }
        REELFS_ASSIGN_OR_RETURN(std::string md5, Md5HexOfFd(opened->fd.get()));
        ++report.hashed;
        if (md5 != rec.etag) {
          report.problems.push_back(id + ": content MD5 " + md5 + ", catalog ETag " + rec.etag);
        }
      }
      after = page.back().key;
    }
    for (const auto& [key, st] : files) {
      if (!rows.count(key) && !(st.is_dir && !IsDirectoryMarker(key))) {
        report.problems.push_back(bucket + "/" + key + ": file without a catalog row");
      }
    }
  }
  // Multipart uploads: every row has its staging directory.
  REELFS_ASSIGN_OR_RETURN(std::vector<UploadRecord> uploads, catalog_->ListUploads(""));
  for (const UploadRecord& u : uploads) {
    ++report.uploads;
    if (!fs_->UploadSlot(u.id).ok()) {
      report.problems.push_back("upload " + u.id + " of " + u.bucket + "/" + u.key +
                                ": catalog row without a staging directory");
    }
  }
  return report;
}

}  // namespace reelfs::gateway

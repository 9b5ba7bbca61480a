#include "fuse/core/local_entries.h"

#include <algorithm>
#include <utility>

namespace reelfs::fuse {

const LocalEntry* LocalEntries::Find(InodeId dir, std::string_view name) const {
  auto d = dirs_.find(dir);
  if (d == dirs_.end()) return nullptr;
  auto e = d->second.find(name);
  return e == d->second.end() ? nullptr : &e->second;
}

LocalEntry* LocalEntries::FindMutable(InodeId dir, std::string_view name) {
  auto d = dirs_.find(dir);
  if (d == dirs_.end()) return nullptr;
  auto e = d->second.find(name);
  return e == d->second.end() ? nullptr : &e->second;
}

bool LocalEntries::Set(InodeId dir, std::string_view name, LocalEntry entry) {
  auto [d, first] = dirs_.try_emplace(dir);
  d->second.insert_or_assign(std::string(name), std::move(entry));
  return first;
}

bool LocalEntries::Erase(InodeId dir, std::string_view name) {
  auto d = dirs_.find(dir);
  if (d == dirs_.end()) return false;
  auto e = d->second.find(name);
  if (e == d->second.end()) return false;
  d->second.erase(e);
  if (!d->second.empty()) return false;
  dirs_.erase(d);
  return true;
}

size_t LocalEntries::LiveNames(InodeId dir) const {
  auto d = dirs_.find(dir);
  if (d == dirs_.end()) return 0;
  return static_cast<size_t>(std::count_if(d->second.begin(), d->second.end(), [](const auto& e) {
    return e.second.kind != LocalKind::kRemoved;
  }));
}

std::shared_ptr<const DirListing> LocalEntries::Merge(
    InodeId dir, std::shared_ptr<const DirListing> listing) const {
  auto d = dirs_.find(dir);
  if (d == dirs_.end()) return listing;
  auto merged = std::make_shared<DirListing>();
  if (listing != nullptr) merged->has_marker = listing->has_marker;
  const std::map<std::string, LocalEntry, std::less<>>& local = d->second;
  // Both sides are sorted by name: one merge pass, the local side winning a tie.
  auto l = local.begin();
  auto emit_local = [&merged](const std::string& name, const LocalEntry& e) {
    if (e.kind == LocalKind::kRemoved) return;
    ListedEntry out;
    out.name = name;
    out.is_dir = e.kind == LocalKind::kDir;
    if (!out.is_dir) out.info = e.info;
    merged->entries.push_back(std::move(out));
  };
  if (listing != nullptr) {
    merged->entries.reserve(listing->entries.size() + local.size());
    for (const ListedEntry& le : listing->entries) {
      while (l != local.end() && l->first < le.name) {
        emit_local(l->first, l->second);
        ++l;
      }
      if (l != local.end() && l->first == le.name) {
        emit_local(l->first, l->second);
        ++l;
        continue;
      }
      merged->entries.push_back(le);
    }
  }
  for (; l != local.end(); ++l) emit_local(l->first, l->second);
  return merged;
}

std::vector<InodeId> LocalEntries::Reconcile(InodeId dir, const DirListing& listing,
                                             Clock::TimePoint now, Clock::Duration max_age,
                                             bool* emptied) {
  std::vector<InodeId> now_remote;
  *emptied = false;
  auto d = dirs_.find(dir);
  if (d == dirs_.end()) return now_remote;
  auto& local = d->second;
  for (auto it = local.begin(); it != local.end();) {
    const LocalEntry& e = it->second;
    const ListedEntry* listed = listing.Find(it->first);
    const bool old = now - e.since > max_age;
    bool retire = false;
    switch (e.kind) {
      case LocalKind::kWriting:
        break;  // only its handle ends it
      case LocalKind::kDir:
        retire = listed != nullptr && listed->is_dir;
        if (retire) now_remote.push_back(e.ino);
        break;
      case LocalKind::kWritten:
        retire = old || (listed != nullptr && !listed->is_dir);
        break;
      case LocalKind::kRemoved:
        retire = old || listed == nullptr;
        break;
    }
    it = retire ? local.erase(it) : std::next(it);
  }
  if (local.empty()) {
    dirs_.erase(d);
    *emptied = true;
  }
  return now_remote;
}

size_t LocalEntries::size() const {
  size_t n = 0;
  for (const auto& [dir, names] : dirs_) n += names.size();
  return n;
}

}  // namespace reelfs::fuse

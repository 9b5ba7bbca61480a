#include "fuse/core/inode_table.h"

#include "common/log.h"

namespace reelfs::fuse {

InodeTable::InodeTable(InodeRecord root) {
  root.id.ino = kRootInode;
  root.id.parent = kRootInode;
  root.id.is_dir = true;
  inodes_.emplace(kRootInode, std::make_unique<InodeRecord>(std::move(root)));
}

std::vector<InodeRecord*> InodeTable::All() {
  std::vector<InodeRecord*> all;
  all.reserve(inodes_.size());
  for (auto& [ino, rec] : inodes_) all.push_back(rec.get());
  return all;
}

InodeRecord* InodeTable::Find(InodeId ino) {
  auto it = inodes_.find(ino);
  return it == inodes_.end() ? nullptr : it->second.get();
}

InodeRecord* InodeTable::FindChild(InodeId parent, std::string_view name) {
  auto it = by_name_.find(std::make_pair(parent, std::string(name)));
  return it == by_name_.end() ? nullptr : Find(it->second);
}

InodeRecord* InodeTable::FindOrCreateChild(InodeId parent, std::string_view name, bool is_dir,
                                           std::string key) {
  auto name_key = std::make_pair(parent, std::string(name));
  auto it = by_name_.find(name_key);
  if (it != by_name_.end()) {
    InodeRecord* existing = Find(it->second);
    if (existing != nullptr && existing->id.is_dir == is_dir) return existing;
  }
  auto record = std::make_unique<InodeRecord>();
  record->id.ino = next_ino_++;
  record->id.parent = parent;
  record->id.name = std::string(name);
  record->id.key = std::move(key);
  record->id.is_dir = is_dir;
  InodeRecord* raw = record.get();
  inodes_.emplace(raw->id.ino, std::move(record));
  by_name_.insert_or_assign(std::move(name_key), raw->id.ino);
  return raw;
}

void InodeTable::RemoveName(InodeId parent, std::string_view name, InodeId ino) {
  auto it = by_name_.find(std::make_pair(parent, std::string(name)));
  if (it != by_name_.end() && it->second == ino) by_name_.erase(it);
}

bool InodeTable::Move(InodeId ino, InodeId new_parent, std::string_view new_name,
                      std::string new_key) {
  InodeRecord* record = Find(ino);
  if (record == nullptr) return false;
  RemoveName(record->id.parent, record->id.name, ino);
  record->id.parent = new_parent;
  record->id.name = std::string(new_name);
  record->id.key = std::move(new_key);
  by_name_.insert_or_assign(std::make_pair(new_parent, std::string(new_name)), ino);
  return true;
}

bool InodeTable::Forget(InodeId ino, uint64_t n) {
  InodeRecord* record = Find(ino);
  if (record == nullptr) return false;
  if (n > record->id.lookups) {
    // The kernel never forgets more than it looked up; if it did, our count was wrong.
    REELFS_LOG_ERROR("fuse", "forget({}, {}) exceeds lookup count {}", ino, n, record->id.lookups);
    n = record->id.lookups;
  }
  record->id.lookups -= n;
  DropIfUnused(ino);
  return true;
}

void InodeTable::Unpin(InodeId ino) {
  InodeRecord* record = Find(ino);
  if (record == nullptr) return;
  if (record->id.pins > 0) --record->id.pins;
  DropIfUnused(ino);
}

void InodeTable::DropIfUnused(InodeId ino) {
  if (ino == kRootInode) return;
  auto it = inodes_.find(ino);
  if (it == inodes_.end()) return;
  const InodeIdentity& record = it->second->id;
  if (record.lookups > 0 || record.pins > 0) return;
  auto name_it = by_name_.find(std::make_pair(record.parent, record.name));
  if (name_it != by_name_.end() && name_it->second == ino) by_name_.erase(name_it);
  inodes_.erase(it);
}

}  // namespace reelfs::fuse

// reelfs-api-bench: reads files of a reelfs mount through its side channel (api/client), for
// bench/api/run.sh. Two cases, each printing one JSON line:
//
//   reelfs-api-bench large FILE [--read-mib 8] [--depth 4] [--checksum]
//       one reader: the whole file in READs of --read-mib into one registered memfd, --depth in
//       flight. With --checksum the bytes' crc32 is folded in file order and printed, so the
//       script compares it with the source's; without, nothing is computed (curl -o /dev/null
//       computes nothing either), which is the timed run.
//   reelfs-api-bench small MOUNT MANIFEST [--threads 2] [--depth 4] [--seed 1] [--by-fd]
//       every file of bench.py's manifest ("key size crc32" lines) in a seeded random order, one
//       READ_PATH each (open by path, read, close in one request: no FUSE round trip); with
//       --by-fd open(2) through the mount, OPEN_FILE, one READ, CLOSE_FILE, close(2) instead;
//       --threads connections with --depth requests in flight each; size and crc32 checked.
//
// The socket is the mount's (its root's user.reelfs.mount "side_channel"). Exit status 1 when a
// byte is wrong or a request fails (the first error is in the JSON), 2 on bad arguments.
#include <fcntl.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <fstream>
#include <iostream>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <sys/stat.h>
#include <sys/xattr.h>

#include "api/client/side_channel_client.h"
#include "common/json.h"
#include "common/unique_fd.h"

namespace reelfs::api {
namespace {

using Clock = std::chrono::steady_clock;

double Seconds(Clock::time_point since) {
  return std::chrono::duration<double>(Clock::now() - since).count();
}

// The side channel socket of the mount at `root` (the mount's root directory).
Result<std::string> SocketOf(const std::string& root) {
  char value[4096];
  const ssize_t n = getxattr(root.c_str(), "user.reelfs.mount", value, sizeof value);
  if (n < 0) return ErrnoToStatus(errno, root + ": user.reelfs.mount");
  Json mount = Json::parse(std::string(value, static_cast<size_t>(n)), nullptr, false);
  if (!mount.is_object() || !mount.contains("side_channel") || !mount["side_channel"].is_string()) {
    return Status::FailedPrecondition(root + ": the mount announces no side channel");
  }
  return mount["side_channel"].get<std::string>();
}

// The mount root of `path`: the topmost ancestor on the same device.
std::string RootOf(const std::string& path) {
  char resolved[PATH_MAX];
  if (realpath(path.c_str(), resolved) == nullptr) return path;
  std::string root = resolved;
  struct stat st {};
  if (stat(root.c_str(), &st) != 0) return root;
  while (root != "/") {
    const size_t slash = root.find_last_of('/');
    const std::string parent = slash == 0 ? "/" : root.substr(0, slash);
    struct stat p {};
    if (stat(parent.c_str(), &p) != 0 || p.st_dev != st.st_dev) break;
    root = parent;
  }
  return root;
}

int Fail(const std::string& what, const Status& s) {
  std::cout << DumpJson(Json{{"ok", false}, {"error", what + ": " + s.ToString()}}) << "\n";
  return 1;
}

int RunLarge(const std::string& file, size_t read_mib, size_t depth, bool checksum) {
  auto socket = SocketOf(RootOf(file));
  if (!socket.ok()) return Fail("socket", socket.status());
  auto client = SideChannelClient::Connect(*socket);
  if (!client.ok()) return Fail("connect", client.status());
  auto fd = UniqueFd::Open(file, O_RDONLY);
  if (!fd.ok()) return Fail("open", fd.status());
  struct stat st {};
  if (fstat(fd->get(), &st) != 0) return Fail("fstat", ErrnoToStatus(errno, file));
  const uint64_t size = static_cast<uint64_t>(st.st_size);
  const size_t read_size = read_mib << 20;
  auto buffer = MemfdBuffer::Create(read_size * depth);
  if (!buffer.ok()) return Fail("memfd", buffer.status());
  auto buffer_id = (*client)->RegisterMemfd(*buffer);
  if (!buffer_id.ok()) return Fail("register", buffer_id.status());
  auto file_id = (*client)->OpenFile(fd->get());
  if (!file_id.ok()) return Fail("OPEN_FILE", file_id.status());

  // One pass over the whole file. Slot i of the memfd holds the READ at offset
  // `slot_offset[i]`; with `fold`, crc32 is folded in file order (completions that arrive early
  // wait in their slot), without it a slot is reused as soon as its READ is done.
  struct PassResult {
    double seconds = 0;
    uLong crc = 0;
  };
  auto pass = [&](bool fold) -> Result<PassResult> {
    std::vector<uint64_t> slot_offset(depth, UINT64_MAX);
    std::vector<int64_t> slot_result(depth, -1);
    std::vector<uint64_t> tag_slot;  // tag -> slot, tags are small and dense
    uint64_t next_offset = 0;
    uint64_t done_offset = 0;  // with fold: bytes folded, in file order; else bytes completed
    uLong crc = crc32(0L, Z_NULL, 0);
    const auto t0 = Clock::now();
    auto submit = [&](size_t slot) -> Status {
      const uint64_t length = std::min<uint64_t>(read_size, size - next_offset);
      REELFS_ASSIGN_OR_RETURN(uint64_t tag,
                              (*client)->SubmitRead(protocol::Read{*file_id, next_offset, length,
                                                                   *buffer_id, slot * read_size}));
      if (tag_slot.size() <= tag) tag_slot.resize(tag + 1);
      tag_slot[tag] = slot;
      slot_offset[slot] = next_offset;
      slot_result[slot] = -1;
      next_offset += length;
      return Status::Ok();
    };
    for (size_t s = 0; s < depth && next_offset < size; ++s) REELFS_RETURN_IF_ERROR(submit(s));
    while (done_offset < size) {
      REELFS_ASSIGN_OR_RETURN(auto c, (*client)->NextCompletion());
      if (c.result <= 0) {
        return c.result < 0 ? ErrnoToStatus(static_cast<int>(-c.result), "READ")
                            : Status::DataLoss("READ: 0 bytes before the end");
      }
      const size_t slot = tag_slot[c.tag];
      if (!fold) {
        done_offset += static_cast<uint64_t>(c.result);
        if (next_offset < size) REELFS_RETURN_IF_ERROR(submit(slot));
        continue;
      }
      slot_result[slot] = c.result;
      // Fold every slot that is next in file order, and reuse it.
      bool progressed = true;
      while (progressed) {
        progressed = false;
        for (size_t s = 0; s < depth; ++s) {
          if (slot_offset[s] != done_offset || slot_result[s] < 0) continue;
          const auto* bytes =
              reinterpret_cast<const Bytef*>(buffer->bytes().data() + s * read_size);
          crc = crc32(crc, bytes, static_cast<uInt>(slot_result[s]));
          done_offset += static_cast<uint64_t>(slot_result[s]);
          slot_offset[s] = UINT64_MAX;
          if (next_offset < size) REELFS_RETURN_IF_ERROR(submit(s));
          progressed = true;
        }
      }
    }
    return PassResult{Seconds(t0), crc};
  };
  auto r = pass(checksum);
  if (!r.ok()) return Fail("READ", r.status());
  Json out{{"ok", true},
           {"bytes", size},
           {"seconds", r->seconds},
           {"mib_per_s", static_cast<double>(size) / r->seconds / 1048576.0}};
  if (checksum) out["crc32"] = static_cast<uint64_t>(r->crc);
  std::cout << DumpJson(out) << "\n";
  return 0;
}

struct Item {
  std::string key;
  uint64_t size = 0;
  uint64_t crc = 0;
};

int RunSmall(const std::string& mount, const std::string& manifest, size_t threads, size_t depth,
             uint32_t seed, bool by_fd) {
  std::vector<Item> items;
  std::ifstream in(manifest);
  for (Item it; in >> it.key >> it.size >> it.crc;) items.push_back(it);
  if (items.empty()) return Fail("manifest", Status::InvalidArgument(manifest + ": no entries"));
  std::shuffle(items.begin(), items.end(), std::mt19937(seed));
  const std::string root = RootOf(mount);
  auto socket = SocketOf(root);
  if (!socket.ok()) return Fail("socket", socket.status());
  // READ_PATH names files relative to the mount root.
  std::string below_root;
  {
    char resolved[PATH_MAX];
    if (realpath(mount.c_str(), resolved) != nullptr &&
        std::string(resolved).size() > root.size()) {
      below_root = std::string(resolved).substr(root.size() + 1) + "/";
    }
  }
  uint64_t max_size = 0;
  for (const Item& it : items) max_size = std::max(max_size, it.size);

  std::atomic<size_t> next{0};
  std::atomic<uint64_t> ok{0};
  std::atomic<uint64_t> bytes{0};
  std::mutex error_mutex;
  std::string first_error;
  auto note_error = [&](std::string e) {
    std::lock_guard lock(error_mutex);
    if (first_error.empty()) first_error = std::move(e);
  };
  auto worker = [&] {
    auto client = SideChannelClient::Connect(*socket);
    if (!client.ok()) return note_error("connect: " + client.status().ToString());
    // One slot per READ in flight, each big enough for the largest file (and one byte more,
    // so a file larger than its manifest says shows up as a wrong size).
    const uint64_t slot_size = max_size + 1;
    auto buffer = MemfdBuffer::Create(slot_size * depth);
    if (!buffer.ok()) return note_error("memfd: " + buffer.status().ToString());
    auto buffer_id = (*client)->RegisterMemfd(*buffer);
    if (!buffer_id.ok()) return note_error("register: " + buffer_id.status().ToString());
    struct Slot {
      const Item* item = nullptr;
      uint64_t file_id = 0;
      UniqueFd fd;
    };
    std::vector<Slot> slots(depth);
    std::vector<size_t> free_slots;
    for (size_t s = 0; s < depth; ++s) free_slots.push_back(s);
    std::vector<size_t> tag_slot;
    auto finish = [&](size_t s, int64_t result) {
      Slot& slot = slots[s];
      const auto* data = reinterpret_cast<const Bytef*>(buffer->bytes().data() + s * slot_size);
      if (result < 0) {
        note_error(slot.item->key + ": " + ErrnoToStatus(static_cast<int>(-result), "").ToString());
      } else if (static_cast<uint64_t>(result) != slot.item->size) {
        note_error(
            fmt::format("{}: {} bytes, expected {}", slot.item->key, result, slot.item->size));
      } else if (crc32(crc32(0L, Z_NULL, 0), data, static_cast<uInt>(result)) != slot.item->crc) {
        note_error(slot.item->key + ": content differs");
      } else {
        ok.fetch_add(1);
        bytes.fetch_add(static_cast<uint64_t>(result));
      }
      if (by_fd) {
        if (Status c = (*client)->CloseFile(slot.file_id); !c.ok()) note_error(c.ToString());
      }
      slot.fd.Reset();
      free_slots.push_back(s);
    };
    for (;;) {
      if (!free_slots.empty()) {
        const size_t i = next.fetch_add(1);
        if (i < items.size()) {
          const size_t s = free_slots.back();
          free_slots.pop_back();
          Slot& slot = slots[s];
          slot.item = &items[i];
          if (!by_fd) {
            // One request: open by path, read, close; no FUSE request at all.
            auto tag = (*client)->SubmitReadPath(protocol::ReadPath{
                0, slot_size, *buffer_id, s * slot_size, below_root + items[i].key});
            if (!tag.ok()) return note_error(tag.status().ToString());
            if (tag_slot.size() <= *tag) tag_slot.resize(*tag + 1);
            tag_slot[*tag] = s;
            continue;
          }
          auto fd = UniqueFd::Open(mount + "/" + items[i].key, O_RDONLY);
          if (!fd.ok()) {
            note_error(fd.status().ToString());
            free_slots.push_back(s);
            continue;
          }
          slot.fd = std::move(*fd);
          auto id = (*client)->OpenFile(slot.fd.get());
          if (!id.ok()) {
            note_error(items[i].key + ": " + id.status().ToString());
            slot.fd.Reset();
            free_slots.push_back(s);
            continue;
          }
          slot.file_id = *id;
          auto tag =
              (*client)->SubmitRead(protocol::Read{*id, 0, slot_size, *buffer_id, s * slot_size});
          if (!tag.ok()) return note_error(tag.status().ToString());
          if (tag_slot.size() <= *tag) tag_slot.resize(*tag + 1);
          tag_slot[*tag] = s;
          continue;
        }
      }
      if ((*client)->in_flight() == 0) return;
      auto c = (*client)->NextCompletion();
      if (!c.ok()) return note_error(c.status().ToString());
      finish(tag_slot[c->tag], c->result);
    }
  };
  const auto t0 = Clock::now();
  std::vector<std::thread> pool;
  for (size_t t = 0; t < threads; ++t) pool.emplace_back(worker);
  for (auto& t : pool) t.join();
  const double dt = Seconds(t0);
  const uint64_t n = ok.load();
  Json out = {{"ok", first_error.empty() && n == items.size()},
              {"files", items.size()},
              {"verified", n},
              {"bytes", bytes.load()},
              {"seconds", dt},
              {"files_per_s", static_cast<double>(n) / dt},
              {"mib_per_s", static_cast<double>(bytes.load()) / dt / 1048576.0}};
  if (!first_error.empty()) out["first_error"] = first_error;
  std::cout << DumpJson(out) << "\n";
  return out["ok"].get<bool>() ? 0 : 1;
}

}  // namespace
}  // namespace reelfs::api

int main(int argc, char** argv) {
  CLI::App app{"reads files of a reelfs mount through its side channel (bench/api)"};
  app.require_subcommand(1);
  std::string file, mount, manifest;
  size_t read_mib = 8, depth = 4, threads = 2;
  uint32_t seed = 1;
  auto* large = app.add_subcommand("large", "one file, one reader");
  large->add_option("FILE", file)->required();
  large->add_option("--read-mib", read_mib, "bytes per READ, MiB (1..64)")
      ->check(CLI::Range(1, 64));
  large->add_option("--depth", depth, "READs in flight")->check(CLI::Range(1, 64));
  bool checksum = false;
  large->add_flag("--checksum", checksum, "fold and print the bytes' crc32 (not the timed run)");
  auto* small = app.add_subcommand("small", "every file of a manifest, random order");
  small->add_option("MOUNT", mount)->required();
  small->add_option("MANIFEST", manifest)->required();
  small->add_option("--threads", threads, "connections")->check(CLI::Range(1, 64));
  small->add_option("--depth", depth, "READs in flight per connection")->check(CLI::Range(1, 256));
  small->add_option("--seed", seed, "shuffle seed");
  bool by_fd = false;
  small->add_flag("--by-fd", by_fd,
                  "per file open(2) through the mount + OPEN_FILE + READ + CLOSE_FILE instead of "
                  "one READ_PATH");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  if (large->parsed()) return reelfs::api::RunLarge(file, read_mib, depth, checksum);
  return reelfs::api::RunSmall(mount, manifest, threads, depth, seed, by_fd);
}

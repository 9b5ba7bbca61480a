// Uploads through a DataChannel (`reelfs mount --rdma`, part_sender.h) with a fake channel and a
// fake registrar: part buffers come from a registered pool (registered once, reused by the next
// file), each part is "RDMA-read" by the fake channel out of its window and stored in the fake
// store, and COMPLETE must name the ETags the channel answered (the fake store checks them, as S3
// does). Per part the channel may answer over RDMA, fall back to HTTP by itself (a declined
// endpoint, a qp error), refuse the window (the sender then sends the same bytes through the
// store and retires the buffer), not upload at all (DataChannel's default: a DC channel), or fail
// hard (the upload fails and is aborted). Every stored object is compared byte for byte, every
// part number is checked to have been stored exactly once, and the counters are exact.
#include <fcntl.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <functional>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include <doctest/doctest.h>

#include "fuse/core/buffer_pool.h"
#include "fuse/core/filesystem.h"
#include "fuse/core/memory_budget.h"
#include "fuse/core/part_sender.h"
#include "fuse/core/upload.h"
#include "rdmaio/data_channel.h"
#include "rdmaio/registered_memory.h"
#include "s3/await.h"
#include "s3/fake/fake_object_store.h"
#include "tests/fakes/fake_clock.h"
#include "tests/fakes/forwarding_store.h"
#include "tests/fakes/host_region.h"
#include "tests/fakes/store_calls.h"

namespace reelfs::fuse {
namespace {

using s3::FakeObjectStore;
using s3::Operation;
using namespace std::chrono_literals;

constexpr uint64_t kMiB = 1ull << 20;
constexpr auto kPatience = 20s;

// Registers page-aligned host memory, or refuses everything (a memlock limit).
class FakeRegistrar final : public rdmaio::MemoryRegistrar {
 public:
  Result<std::shared_ptr<rdmaio::RegisteredRegion>> Register(
      const rdmaio::MemorySource& source) override {
    const auto* host = std::get_if<rdmaio::HostMemory>(&source);
    if (host == nullptr) return Status::Unimplemented("host memory only");
    if (refuse) return Status::ResourceExhausted("memlock limit (test)");
    if (reinterpret_cast<uintptr_t>(host->bytes.data()) % 4096 != 0 ||
        host->bytes.size() % 4096 != 0) {
      return Status::InvalidArgument("misaligned");
    }
    ++registrations;
    return std::shared_ptr<rdmaio::RegisteredRegion>(
        std::make_shared<testing::FakeHostRegion>(host->bytes));
  }
  std::atomic<bool> refuse{false};
  std::atomic<int> registrations{0};
};

// What the fake channel does with a put.
enum class Answer {
  kRdma,          // the server reads the window: stored, via kRdma
  kHttpFallback,  // the channel falls back by itself (declined endpoint, qp error): via kHttp
  kRefuseWindow,  // the window is quarantined: refused before anything is sent
  kFail,          // a hard error (the server refused the request): nothing stored
};

// Stores every payload straight into the fake store from the window's bytes (what the gateway
// reads over RDMA, or what the channel's own HTTP fallback sends), on its worker thread.
class FakePutChannel final : public rdmaio::DataChannel {
 public:
  FakePutChannel(std::shared_ptr<FakeObjectStore> store, std::shared_ptr<FakeRegistrar> registrar)
      : store_(std::move(store)), registrar_(std::move(registrar)) {}

  void Fetch(rdmaio::FetchRequest, rdmaio::FetchCallback done) override {
    done(Status::Unimplemented("no fetches in these tests"));
  }
  rdmaio::MemoryRegistrar& registrar() override { return *registrar_; }

  void Put(rdmaio::PutRequest request, rdmaio::PutCallback done) override {
    const rdmaio::RegisteredWindow& w = request.window;
    if (w.region == nullptr || w.length == 0 || w.offset + w.length > w.region->length()) {
      done(Status::InvalidArgument("window outside its region"));
      return;
    }
    Answer answer = Answer::kRdma;
    {
      std::lock_guard lock(mutex_);
      ++puts_;
      if (refused_.contains(w.region)) ++refused_reused_;
      auto it = script_.find(request.part_number);
      if (it != script_.end()) answer = it->second;
      // Kept alive so that no later region can take its address.
      if (answer == Answer::kRefuseWindow) refused_.insert(w.region);
    }
    if (answer == Answer::kRefuseWindow) {
      done(Status(StatusCode::kFailedPrecondition, StatusReason::kWindowQuarantined,
                  "window is quarantined until fenced (test)"));
      return;
    }
    if (answer == Answer::kFail) {
      done(Status(StatusCode::kPermissionDenied, StatusReason::kNone,
                  "AccessDenied (403) for the part (test)"));
      return;
    }
    const rdmaio::DataPath via =
        answer == Answer::kRdma ? rdmaio::DataPath::kRdma : rdmaio::DataPath::kHttp;
    // The server's copy of the window, taken now: the caller may reuse the buffer after `done`.
    auto body = std::make_shared<std::vector<std::byte>>(
        w.region->host_bytes().begin() + static_cast<ptrdiff_t>(w.offset),
        w.region->host_bytes().begin() + static_cast<ptrdiff_t>(w.offset + w.length));
    auto answered = [done = std::move(done), body, via](Result<std::string> etag) {
      if (!etag.ok()) return done(std::move(etag).status());
      done(rdmaio::PutResult{.etag = std::move(*etag), .bytes = body->size(), .via = via});
    };
    if (request.part_number == 0) {
      s3::PutObjectRequest req;
      req.bucket = request.bucket;
      req.key = request.key;
      req.body = *body;
      req.content_type = request.content_type;
      store_->PutObject(req, std::move(answered));
    } else {
      s3::UploadPartRequest req;
      req.bucket = request.bucket;
      req.key = request.key;
      req.upload_id = request.upload_id;
      req.part_number = request.part_number;
      req.body = *body;
      store_->UploadPart(req, std::move(answered));
    }
  }

  // How the put of part `number` (0: the PutObject) is answered; kRdma unless set.
  void Script(int number, Answer answer) {
    std::lock_guard lock(mutex_);
    script_[number] = answer;
  }
  int puts() {
    std::lock_guard lock(mutex_);
    return puts_;
  }
  // Puts whose window lay in a region this channel had refused before.
  int refused_reused() {
    std::lock_guard lock(mutex_);
    return refused_reused_;
  }

 private:
  const std::shared_ptr<FakeObjectStore> store_;
  const std::shared_ptr<FakeRegistrar> registrar_;
  std::mutex mutex_;
  std::map<int, Answer> script_;
  std::set<std::shared_ptr<rdmaio::RegisteredRegion>> refused_;
  int puts_ = 0;
  int refused_reused_ = 0;
};

// A DataChannel whose transport cannot upload (DcChannel): DataChannel's own Put.
class FetchOnlyChannel final : public rdmaio::DataChannel {
 public:
  explicit FetchOnlyChannel(std::shared_ptr<FakeRegistrar> registrar)
      : registrar_(std::move(registrar)) {}
  void Fetch(rdmaio::FetchRequest, rdmaio::FetchCallback done) override {
    done(Status::Unimplemented("no fetches in these tests"));
  }
  rdmaio::MemoryRegistrar& registrar() override { return *registrar_; }

 private:
  const std::shared_ptr<FakeRegistrar> registrar_;
};

// Counts the payloads the Upload's side sends through the store itself (the sender's HTTP path),
// per part number (0: PutObject).
class CountingStore final : public testing::ForwardingStore {
 public:
  using ForwardingStore::ForwardingStore;
  void UploadPart(const s3::UploadPartRequest& req, s3::Callback<std::string> done) override {
    Note(req.part_number);
    inner_->UploadPart(req, std::move(done));
  }
  void PutObject(const s3::PutObjectRequest& req, s3::Callback<std::string> done) override {
    Note(0);
    inner_->PutObject(req, std::move(done));
  }
  std::map<int, int> sent() {
    std::lock_guard lock(mutex_);
    return sent_;
  }

 private:
  void Note(int number) {
    std::lock_guard lock(mutex_);
    ++sent_[number];
  }
  std::mutex mutex_;
  std::map<int, int> sent_;
};

std::vector<std::byte> Pattern(uint64_t size, unsigned seed) {
  std::vector<std::byte> out(size);
  for (uint64_t i = 0; i < size; ++i) out[i] = std::byte((i * 131 + i / 4099 + seed) & 0xff);
  return out;
}

struct Fixture {
  Fixture()
      : fake(std::make_shared<FakeObjectStore>(
            s3::FakeObjectStoreOptions{.min_part_size = s3::kS3MinPartSize})),
        store(std::make_shared<CountingStore>(fake)),
        registrar(std::make_shared<FakeRegistrar>()),
        channel(std::make_shared<FakePutChannel>(fake, registrar)),
        pool(CreateRegisteredBufferPool(registrar, 256 * kMiB)),
        budget(std::make_shared<MemoryBudget>(256 * kMiB)),
        sender(CreateChannelPartSender(channel, store)) {
    fake->CreateBucketForTest("b");
  }
  ~Fixture() { fake->WaitIdle(); }

  std::shared_ptr<Upload> Make(const std::string& key) {
    Upload::Options options;
    options.part_size = kMinPartSize;
    options.max_in_flight = 2;
    return Upload::Create(store, budget, "b", key, options, clock,
                          {.pool = pool, .sender = sender});
  }

  // Writes `data` in odd-sized writes and finishes.
  Result<s3::ObjectInfo> WriteFile(const std::string& key, const std::vector<std::byte>& data) {
    std::shared_ptr<Upload> up = Make(key);
    constexpr uint64_t kChunk = 1 * kMiB + 4097;
    for (uint64_t at = 0; at < data.size(); at += kChunk) {
      const uint64_t n = std::min<uint64_t>(kChunk, data.size() - at);
      auto promise = std::make_shared<std::promise<Status>>();
      auto future = promise->get_future();
      up->Write(at, std::span(data).subspan(at, n),
                [promise](Status s) { promise->set_value(std::move(s)); });
      REQUIRE(future.wait_for(kPatience) == std::future_status::ready);
      Status s = future.get();
      if (!s.ok()) break;  // Finish answers the sticky error
    }
    auto promise = std::make_shared<std::promise<Result<s3::ObjectInfo>>>();
    auto future = promise->get_future();
    up->Finish([promise](Result<s3::ObjectInfo> r) { promise->set_value(std::move(r)); });
    REQUIRE(future.wait_for(kPatience) == std::future_status::ready);
    return future.get();
  }

  Result<std::vector<std::byte>> Stored(const std::string& key) {
    return reelfs::testing::GetBytes(*fake, "b", key, std::nullopt, 64 * kMiB);
  }

  reelfs::testing::FakeClock clock;
  std::shared_ptr<FakeObjectStore> fake;
  std::shared_ptr<CountingStore> store;
  std::shared_ptr<FakeRegistrar> registrar;
  std::shared_ptr<FakePutChannel> channel;
  std::shared_ptr<BufferPool> pool;
  std::shared_ptr<MemoryBudget> budget;
  std::shared_ptr<PartSender> sender;
};

// 4 full 5 MiB parts and a short fifth.
constexpr uint64_t kBigSize = 23 * kMiB + 17;
constexpr int kBigParts = 5;

TEST_CASE("--rdma: every part and a small file's PUT go over RDMA; COMPLETE names their ETags") {
  Fixture f;
  const std::vector<std::byte> big = Pattern(kBigSize, 3);
  Result<s3::ObjectInfo> info = f.WriteFile("big", big);
  REQUIRE(info.ok());
  CHECK(info->size == big.size());
  Result<std::vector<std::byte>> stored = f.Stored("big");
  REQUIRE(stored.ok());
  CHECK(*stored == big);  // COMPLETE succeeded only with the ETags the channel answered
  CHECK(info->etag.ends_with("-5"));
  CHECK(f.channel->puts() == kBigParts);
  CHECK(f.store->sent().empty());  // nothing went through the store's body path
  CHECK(f.fake->CallCount(Operation::kUploadPart) == kBigParts);  // each part stored once
  CHECK(f.fake->CallCount(Operation::kAbortMultipartUpload) == 0);

  PutCounters c = f.sender->counters();
  CHECK(c.rdma_put_parts == kBigParts);
  CHECK(c.rdma_put_bytes == kBigSize);
  CHECK(c.http_put_parts == 0);
  CHECK(c.http_put_bytes == 0);
  CHECK(c.put_fallbacks == 0);
  CHECK(c.put_failures == 0);

  // Buffers are registered when the pool first allocates them, then reused: the next file of the
  // same shape registers nothing.
  const int registrations = f.registrar->registrations.load();
  CHECK(registrations >= 1);
  CHECK(registrations <= 3);  // max_in_flight 2 plus the one being filled
  const std::vector<std::byte> big2 = Pattern(kBigSize, 4);
  REQUIRE(f.WriteFile("big2", big2).ok());
  CHECK(f.registrar->registrations.load() == registrations);
  REQUIRE(f.Stored("big2").ok());
  CHECK(*f.Stored("big2") == big2);

  const std::vector<std::byte> small = Pattern(3000, 5);
  Result<s3::ObjectInfo> small_info = f.WriteFile("small", small);
  REQUIRE(small_info.ok());
  CHECK(*f.Stored("small") == small);
  CHECK(f.fake->CallCount(Operation::kPutObject) == 1);
  CHECK(f.fake->CallCount(Operation::kCreateMultipartUpload) == 2);
  c = f.sender->counters();
  CHECK(c.rdma_put_parts == 2 * kBigParts + 1);
  CHECK(c.rdma_put_bytes == 2 * kBigSize + 3000);
  CHECK(c.http_put_bytes == 0);
  CHECK(f.budget->used() == 0);
}

TEST_CASE("a declined endpoint: the channel sends every part over HTTP itself, counted as such") {
  Fixture f;
  for (int n = 0; n <= kBigParts; ++n) f.channel->Script(n, Answer::kHttpFallback);
  const std::vector<std::byte> big = Pattern(kBigSize, 6);
  REQUIRE(f.WriteFile("declined", big).ok());
  CHECK(*f.Stored("declined") == big);
  CHECK(f.store->sent().empty());  // the channel's fallback, not a second send of ours
  CHECK(f.fake->CallCount(Operation::kUploadPart) == kBigParts);
  const PutCounters c = f.sender->counters();
  CHECK(c.rdma_put_parts == 0);
  CHECK(c.rdma_put_bytes == 0);
  CHECK(c.http_put_parts == kBigParts);
  CHECK(c.http_put_bytes == kBigSize);
  CHECK(c.put_fallbacks == kBigParts);
}

TEST_CASE("one part falls back (qp error), one is refused: each stored once, ETags right") {
  Fixture f;
  f.channel->Script(2, Answer::kRefuseWindow);  // the sender sends it through the store
  f.channel->Script(3, Answer::kHttpFallback);  // the channel's own HTTP retry
  const std::vector<std::byte> big = Pattern(kBigSize, 7);
  Result<s3::ObjectInfo> info = f.WriteFile("mixed", big);
  REQUIRE(info.ok());
  Result<std::vector<std::byte>> stored = f.Stored("mixed");
  REQUIRE(stored.ok());
  CHECK(*stored == big);
  CHECK(f.store->sent() == std::map<int, int>{{2, 1}});  // only the refused part, once
  CHECK(f.channel->puts() == kBigParts);
  CHECK(f.fake->CallCount(Operation::kUploadPart) == kBigParts);  // never a doubled part
  const PutCounters c = f.sender->counters();
  CHECK(c.rdma_put_parts == 3);
  CHECK(c.rdma_put_bytes == kBigSize - 2 * 5 * kMiB);
  CHECK(c.http_put_parts == 2);
  CHECK(c.http_put_bytes == 2 * 5 * kMiB);
  CHECK(c.put_fallbacks == 2);
  CHECK(f.budget->used() == 0);
  // The refused buffer is retired, never reused: no later put comes from its region. (Counting
  // registrations instead is timing: how many buffers each file has at its peak varies.)
  REQUIRE(f.WriteFile("after", Pattern(kBigSize, 8)).ok());
  CHECK(f.channel->puts() > kBigParts);  // the next file went through the channel
  CHECK(f.channel->refused_reused() == 0);
  CHECK(*f.Stored("after") == Pattern(kBigSize, 8));
}

TEST_CASE("a channel that does not upload (DC): every payload through the store") {
  Fixture f;
  auto dc = std::make_shared<FetchOnlyChannel>(f.registrar);
  f.sender = CreateChannelPartSender(dc, f.store);
  const std::vector<std::byte> big = Pattern(kBigSize, 9);
  REQUIRE(f.WriteFile("dc", big).ok());
  CHECK(*f.Stored("dc") == big);
  const std::vector<std::byte> small = Pattern(100, 10);
  REQUIRE(f.WriteFile("dc-small", small).ok());
  CHECK(*f.Stored("dc-small") == small);
  CHECK(f.store->sent() == std::map<int, int>{{0, 1}, {1, 1}, {2, 1}, {3, 1}, {4, 1}, {5, 1}});
  const PutCounters c = f.sender->counters();
  CHECK(c.rdma_put_parts == 0);
  CHECK(c.http_put_parts == kBigParts + 1);
  CHECK(c.http_put_bytes == kBigSize + 100);
  CHECK(c.put_fallbacks == kBigParts + 1);
}

TEST_CASE("unregistered buffers (memlock): parts through the store, not counted as fallbacks") {
  Fixture f;
  f.registrar->refuse = true;
  const std::vector<std::byte> big = Pattern(kBigSize, 11);
  REQUIRE(f.WriteFile("unregistered", big).ok());
  CHECK(*f.Stored("unregistered") == big);
  CHECK(f.channel->puts() == 0);
  CHECK(f.store->sent().size() == kBigParts);
  const PutCounters c = f.sender->counters();
  CHECK(c.http_put_parts == kBigParts);
  CHECK(c.http_put_bytes == kBigSize);
  CHECK(c.put_fallbacks == 0);
}

TEST_CASE("an empty file is a PutObject through the store (RDMA carries 1 byte or more)") {
  Fixture f;
  REQUIRE(f.WriteFile("empty", {}).ok());
  Result<std::vector<std::byte>> stored = f.Stored("empty");
  REQUIRE(stored.ok());
  CHECK(stored->empty());
  CHECK(f.channel->puts() == 0);
  CHECK(f.store->sent() == std::map<int, int>{{0, 1}});
}

TEST_CASE("a hard failure of one part sticks: nothing visible, the upload aborted") {
  Fixture f;
  f.channel->Script(2, Answer::kFail);
  Result<s3::ObjectInfo> info = f.WriteFile("failed", Pattern(kBigSize, 12));
  REQUIRE_FALSE(info.ok());
  CHECK(info.status().code() == StatusCode::kPermissionDenied);
  CHECK(info.status().message().find("UploadPart 2") != std::string::npos);
  CHECK(f.Stored("failed").status().code() == StatusCode::kNotFound);
  CHECK(f.fake->CallCount(Operation::kAbortMultipartUpload) == 1);
  CHECK(f.fake->CallCount(Operation::kCompleteMultipartUpload) == 0);
  CHECK(f.store->sent().empty());  // not retried over HTTP: the server refused the request
  const PutCounters c = f.sender->counters();
  CHECK(c.put_failures == 1);
  CHECK(c.http_put_parts == 0);
  CHECK(f.budget->used() == 0);
}

TEST_CASE("the FileSystem with a data channel: parts through it, counters in user.reelfs.metrics") {
  Fixture f;
  MountOptions options;
  options.bucket = "b";
  options.write.part_size = kMinPartSize;
  std::unique_ptr<FileSystem> fs = CreateFileSystem(f.store, options, f.pool, f.budget, f.clock,
                                                    nullptr, DataPath{.channel = f.channel});
  auto created = s3::Await<FileSystem::CreatedFile>(
      [&](auto cb) { fs->Create(kRootInode, "ckpt.bin", O_WRONLY | O_CREAT, 0, cb); });
  REQUIRE(created.ok());
  const std::vector<std::byte> data = Pattern(11 * kMiB + 5, 13);
  for (uint64_t at = 0; at < data.size(); at += kMiB) {
    const uint64_t n = std::min<uint64_t>(kMiB, data.size() - at);
    auto wrote = s3::Await<size_t>([&](auto cb) {
      fs->Write(created->entry.attr.ino, created->file.fh, at, std::span(data).subspan(at, n), cb);
    });
    REQUIRE(wrote.ok());
  }
  REQUIRE(s3::AwaitStatus([&](auto cb) {
            fs->Flush(created->entry.attr.ino, created->file.fh, true, 0, cb);
          }).ok());
  CHECK(*f.Stored("ckpt.bin") == data);
  const FsCounters c = fs->counters();
  CHECK(c.rdma_put_parts == 3);
  CHECK(c.rdma_put_bytes == data.size());
  CHECK(c.http_put_bytes == 0);
  auto metrics =
      s3::Await<std::string>([&](auto cb) { fs->GetXattr(kRootInode, "user.reelfs.metrics", cb); });
  REQUIRE(metrics.ok());
  CHECK(metrics->find("\"rdma_put_bytes\":" + std::to_string(data.size())) != std::string::npos);
  CHECK(metrics->find("\"http_put_bytes\":0") != std::string::npos);
  fs->Release(created->file.fh);
}

}  // namespace
}  // namespace reelfs::fuse

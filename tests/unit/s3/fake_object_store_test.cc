#include "s3/fake/fake_object_store.h"

#include <atomic>
#include <cstring>
#include <future>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include <doctest/doctest.h>

#include "s3/await.h"

namespace reelfs::s3 {
namespace {

std::span<std::byte> Bytes(std::string& s) { return std::as_writable_bytes(std::span(s)); }
std::span<const std::byte> Bytes(const std::string& s) { return std::as_bytes(std::span(s)); }

Result<ListObjectsPage> List(FakeObjectStore& store, ListObjectsRequest req) {
  return Await<ListObjectsPage>([&](auto cb) { store.ListObjects(req, cb); });
}

Result<GetObjectResult> Get(FakeObjectStore& store, const GetObjectRequest& req) {
  return Await<GetObjectResult>([&](auto cb) { store.GetObject(req, cb); });
}

Result<std::string> GetString(FakeObjectStore& store, const std::string& bucket,
                              const std::string& key, std::optional<ByteRange> range = {}) {
  std::string out(1 << 16, '\0');
  GetObjectRequest req{.bucket = bucket, .key = key, .range = range, .buffer = Bytes(out)};
  Result<GetObjectResult> r = Get(store, req);
  if (!r.ok()) return r.status();
  out.resize(r->bytes);
  return out;
}

std::vector<std::string> Keys(const ListObjectsPage& page) {
  std::vector<std::string> keys;
  for (const ObjectInfo& o : page.objects) keys.push_back(o.key);
  return keys;
}

TEST_SUITE("s3") {
  TEST_CASE("FakeObjectStore: put, head, get and ranges") {
    FakeObjectStore store;
    REQUIRE(AwaitStatus([&](auto cb) { store.CreateBucket("b", cb); }).ok());
    std::string body = "hello, archive";
    Result<std::string> etag = Await<std::string>([&](auto cb) {
      store.PutObject({.bucket = "b", .key = "k", .body = Bytes(body), .content_type = "text/x"},
                      cb);
    });
    REQUIRE(etag.ok());
    CHECK(*etag == "930683ded7ebbccd52968f570bee64d1");  // md5("hello, archive")

    Result<ObjectInfo> info = Await<ObjectInfo>([&](auto cb) { store.HeadObject({"b", "k"}, cb); });
    REQUIRE(info.ok());
    CHECK(info->size == body.size());
    CHECK(info->etag == *etag);
    CHECK(info->content_type == "text/x");
    CHECK(info->storage_class == "STANDARD");
    CHECK_FALSE(info->restore.has_value());

    CHECK(GetString(store, "b", "k").value_or("") == body);
    CHECK(GetString(store, "b", "k", ByteRange{7, 4}).value_or("") == "arch");
    CHECK(GetString(store, "b", "k", ByteRange{7, 1000}).value_or("") == "archive");
    Result<std::string> past_end = GetString(store, "b", "k", ByteRange{14, 1});
    CHECK(past_end.status().code() == StatusCode::kOutOfRange);
    CHECK(past_end.status().detail().s3_code == "InvalidRange");
    CHECK(past_end.status().detail().http_status == 416);

    Result<std::string> missing = GetString(store, "b", "nope");
    CHECK(missing.status().code() == StatusCode::kNotFound);
    CHECK(missing.status().detail().s3_code == "NoSuchKey");
    CHECK(GetString(store, "nob", "k").status().detail().s3_code == "NoSuchBucket");
  }

  TEST_CASE("FakeObjectStore: buffer too small, sink, if_match, cancel") {
    FakeObjectStore store;
    std::string etag = store.PutObjectForTest("b", "k", std::string(1000, 'x'));
    std::string small(10, '\0');
    Result<GetObjectResult> too_small =
        Get(store, {.bucket = "b", .key = "k", .buffer = Bytes(small)});
    CHECK(too_small.status().code() == StatusCode::kOutOfRange);

    std::string sunk;
    Result<GetObjectResult> sink =
        Get(store, {.bucket = "b", .key = "k", .sink = [&](std::span<const std::byte> chunk) {
                      sunk.append(reinterpret_cast<const char*>(chunk.data()), chunk.size());
                      return Status::Ok();
                    }});
    REQUIRE(sink.ok());
    CHECK(sink->bytes == 1000);
    CHECK(sink->object_size == 1000);
    CHECK(sunk == std::string(1000, 'x'));

    Result<GetObjectResult> sink_error =
        Get(store, {.bucket = "b", .key = "k", .sink = [](std::span<const std::byte>) {
                      return Status::DataLoss("disk full");
                    }});
    CHECK(sink_error.status().code() == StatusCode::kDataLoss);

    std::string buf(1000, '\0');
    Result<GetObjectResult> wrong_etag =
        Get(store, {.bucket = "b", .key = "k", .buffer = Bytes(buf), .if_match = "other"});
    CHECK(wrong_etag.status().code() == StatusCode::kFailedPrecondition);
    CHECK(wrong_etag.status().detail().s3_code == "PreconditionFailed");
    CHECK(Get(store, {.bucket = "b", .key = "k", .buffer = Bytes(buf), .if_match = etag}).ok());
    // Quoted, as it appears in an ETag header, is the same tag (the real client accepts both).
    CHECK(Get(store,
              {.bucket = "b", .key = "k", .buffer = Bytes(buf), .if_match = "\"" + etag + "\""})
              .ok());
    CHECK(Get(store, {.bucket = "b", .key = "k", .buffer = Bytes(buf), .if_match = "\"other\""})
              .status()
              .code() == StatusCode::kFailedPrecondition);

    auto cancel = CancellationToken::Create();
    cancel->Cancel();
    Result<GetObjectResult> cancelled =
        Get(store, {.bucket = "b", .key = "k", .buffer = Bytes(buf), .cancel = cancel});
    CHECK(cancelled.status().code() == StatusCode::kCancelled);
  }

  TEST_CASE("FakeObjectStore: listing with prefix, delimiter and pages") {
    FakeObjectStore store;
    for (const char* key :
         {"a/1", "a/2", "a/b/3", "a/b/4", "a/c/5", "a/z", "b/1", "top", "a/\xc3\xa9", "a/~"}) {
      store.PutObjectForTest("bkt", key, "x");
    }
    Result<ListObjectsPage> all = List(store, {.bucket = "bkt"});
    REQUIRE(all.ok());
    // Byte order: '~' (0x7e) sorts before 0xc3.
    CHECK(Keys(*all) == std::vector<std::string>{"a/1", "a/2", "a/b/3", "a/b/4", "a/c/5", "a/z",
                                                 "a/~", "a/\xc3\xa9", "b/1", "top"});
    CHECK_FALSE(all->is_truncated);

    Result<ListObjectsPage> dir = List(store, {.bucket = "bkt", .prefix = "a/", .delimiter = "/"});
    REQUIRE(dir.ok());
    CHECK(Keys(*dir) == std::vector<std::string>{"a/1", "a/2", "a/z", "a/~", "a/\xc3\xa9"});
    CHECK(dir->common_prefixes == std::vector<std::string>{"a/b/", "a/c/"});

    Result<ListObjectsPage> root = List(store, {.bucket = "bkt", .delimiter = "/"});
    REQUIRE(root.ok());
    CHECK(Keys(*root) == std::vector<std::string>{"top"});
    CHECK(root->common_prefixes == std::vector<std::string>{"a/", "b/"});

    // Page through "a/" two entries at a time: prefixes count and are never repeated.
    std::vector<std::string> seen;
    ListObjectsRequest req{.bucket = "bkt", .prefix = "a/", .delimiter = "/", .max_keys = 2};
    int pages = 0;
    while (true) {
      Result<ListObjectsPage> page = List(store, req);
      REQUIRE(page.ok());
      ++pages;
      for (const auto& o : page->objects) seen.push_back(o.key);
      for (const auto& p : page->common_prefixes) seen.push_back(p);
      CHECK(page->objects.size() + page->common_prefixes.size() <= 2);
      if (!page->is_truncated) break;
      CHECK_FALSE(page->next_continuation_token.empty());
      req.continuation_token = page->next_continuation_token;
      REQUIRE(pages < 10);
    }
    CHECK(pages == 4);
    std::sort(seen.begin(), seen.end());
    CHECK(seen ==
          std::vector<std::string>{"a/1", "a/2", "a/b/", "a/c/", "a/z", "a/~", "a/\xc3\xa9"});

    Result<ListObjectsPage> after = List(store, {.bucket = "bkt", .start_after = "a/z"});
    REQUIRE(after.ok());
    CHECK(Keys(*after) == std::vector<std::string>{"a/~", "a/\xc3\xa9", "b/1", "top"});

    CHECK(List(store, {.bucket = "bkt", .continuation_token = "garbage"}).status().code() ==
          StatusCode::kInvalidArgument);
    CHECK(List(store, {.bucket = "missing"}).status().code() == StatusCode::kNotFound);
  }

  TEST_CASE("FakeObjectStore: archive and restore states") {
    FakeObjectStore store;
    store.PutObjectForTest("b", "cold", "frozen bytes", "GLACIER");
    store.PutObjectForTest("b", "warm", "online");

    Result<std::string> denied = GetString(store, "b", "cold");
    CHECK(denied.status().code() == StatusCode::kFailedPrecondition);
    CHECK(denied.status().detail().s3_code == "InvalidObjectState");
    CHECK(denied.status().detail().http_status == 403);

    auto restore = [&](const std::string& key) {
      return Await<RestoreOutcome>(
          [&](auto cb) { store.RestoreObject({.bucket = "b", .key = key, .days = 3}, cb); });
    };
    auto head = [&](const std::string& key) {
      return Await<ObjectInfo>([&](auto cb) { store.HeadObject({"b", key}, cb); });
    };
    CHECK_FALSE(head("cold")->restore.has_value());
    CHECK(restore("cold").value_or(RestoreOutcome::kOk) == RestoreOutcome::kAccepted);
    REQUIRE(head("cold")->restore.has_value());
    CHECK(head("cold")->restore->ongoing);
    CHECK(restore("cold").value_or(RestoreOutcome::kAccepted) ==
          RestoreOutcome::kAlreadyInProgress);
    CHECK(GetString(store, "b", "cold").status().code() == StatusCode::kFailedPrecondition);

    // Listing shows restore state only when asked.
    Result<ListObjectsPage> plain = List(store, {.bucket = "b"});
    REQUIRE(plain.ok());
    CHECK_FALSE(plain->objects[0].restore.has_value());
    Result<ListObjectsPage> with = List(store, {.bucket = "b", .fetch_restore_status = true});
    REQUIRE(with.ok());
    REQUIRE(with->objects[0].restore.has_value());
    CHECK(with->objects[0].storage_class == "GLACIER");

    REQUIRE(store.CompleteRestore("b", "cold").ok());
    Result<ObjectInfo> restored = head("cold");
    REQUIRE(restored->restore.has_value());
    CHECK_FALSE(restored->restore->ongoing);
    REQUIRE(restored->restore->expiry.has_value());
    CHECK(*restored->restore->expiry > std::chrono::system_clock::now() + std::chrono::hours(70));
    CHECK(GetString(store, "b", "cold").value_or("") == "frozen bytes");
    CHECK(restore("cold").value_or(RestoreOutcome::kAccepted) == RestoreOutcome::kOk);

    REQUIRE(store.ExpireRestore("b", "cold").ok());
    CHECK(GetString(store, "b", "cold").status().code() == StatusCode::kFailedPrecondition);

    Result<RestoreOutcome> online = restore("warm");
    CHECK(online.status().detail().s3_code == "InvalidObjectState");
    CHECK(store.CallCount(Operation::kRestoreObject) == 4);
    CHECK(store.CompleteRestore("b", "missing").code() == StatusCode::kNotFound);
  }

  TEST_CASE("FakeObjectStore: x-amz-restore text on HEAD, tape hints on HEAD and on request") {
    FakeObjectStore store;
    store.PutObjectForTest("b", "cold", "frozen", "GLACIER");
    const std::map<std::string, std::string> hints = {{"x-reelfs-tape-cartridge", "RL0001L9"},
                                                      {"x-reelfs-tape-block", "7"}};
    REQUIRE(store.SetHintsForTest("b", "cold", hints).ok());
    CHECK(store.SetHintsForTest("b", "missing", hints).code() == StatusCode::kNotFound);
    auto head = [&] {
      return Await<ObjectInfo>([&](auto cb) { store.HeadObject({"b", "cold"}, cb); });
    };
    CHECK(head()->restore_header.empty());
    CHECK(head()->hints == hints);
    REQUIRE(Await<RestoreOutcome>([&](auto cb) {
              store.RestoreObject({.bucket = "b", .key = "cold"}, cb);
            }).ok());
    CHECK(head()->restore_header == "ongoing-request=\"true\"");
    REQUIRE(store.CompleteRestore("b", "cold").ok());
    CHECK(head()->restore_header.starts_with("ongoing-request=\"false\", expiry-date=\""));
    Result<GetObjectResult> got =
        Get(store, {.bucket = "b", .key = "cold", .sink = [](auto) { return Status::Ok(); }});
    REQUIRE(got.ok());
    CHECK(got->info.hints == hints);

    Result<ListObjectsPage> plain = List(store, {.bucket = "b", .fetch_restore_status = true});
    REQUIRE(plain.ok());
    CHECK(plain->objects[0].hints.empty());
    CHECK(plain->objects[0].restore_header.empty());  // a header, not a listing field
    CHECK(plain->objects[0].restore.has_value());
    Result<ListObjectsPage> hinted = List(store, {.bucket = "b", .fetch_tape_hints = true});
    REQUIRE(hinted.ok());
    CHECK(hinted->objects[0].hints == hints);
    CHECK_FALSE(hinted->objects[0].restore.has_value());
  }

  TEST_CASE("FakeObjectStore: restore_completes_immediately, inline callbacks") {
    FakeObjectStore store({.callback_mode = FakeObjectStoreOptions::CallbackMode::kInline,
                           .restore_completes_immediately = true});
    store.PutObjectForTest("b", "k", "data", "DEEP_ARCHIVE");
    bool called = false;
    store.RestoreObject({.bucket = "b", .key = "k"}, [&](Result<RestoreOutcome> r) {
      CHECK(r.value_or(RestoreOutcome::kAlreadyInProgress) == RestoreOutcome::kAccepted);
      called = true;
    });
    CHECK(called);  // inline: ran before RestoreObject returned
    CHECK(GetString(store, "b", "k").value_or("") == "data");
  }

  TEST_CASE("FakeObjectStore: callbacks run on the worker thread") {
    FakeObjectStore store;
    store.PutObjectForTest("b", "k", "v");
    std::thread::id callback_thread;
    REQUIRE(Await<ObjectInfo>([&](auto cb) {
              store.HeadObject({"b", "k"}, [&, cb](Result<ObjectInfo> r) {
                callback_thread = std::this_thread::get_id();
                cb(std::move(r));
              });
            }).ok());
    CHECK(callback_thread != std::this_thread::get_id());
  }

  TEST_CASE("FakeObjectStore: a callback may destroy the store (its last owner)") {
    auto store = std::make_unique<FakeObjectStore>();
    store->PutObjectForTest("b", "k", "v");
    std::promise<std::thread::id> destroyed_on;
    std::atomic<int> second{0};
    FakeObjectStore* raw = store.get();
    // A second call queued behind the first still gets its one callback.
    std::promise<void> both_posted;
    auto posted = both_posted.get_future();
    raw->HeadObject({"b", "k"}, [&](Result<ObjectInfo>) {
      posted.wait();  // the second call must be queued before the store goes away
      store.reset();  // the owner lets go: ~FakeObjectStore runs here, on the worker thread
      destroyed_on.set_value(std::this_thread::get_id());
    });
    raw->HeadObject({"b", "k"}, [&](Result<ObjectInfo>) { ++second; });
    both_posted.set_value();
    auto f = destroyed_on.get_future();
    REQUIRE(f.wait_for(std::chrono::seconds(5)) == std::future_status::ready);
    CHECK(f.get() != std::this_thread::get_id());
    for (int i = 0; i < 500 && second.load() == 0; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    CHECK(second.load() == 1);
  }

  TEST_CASE("FakeObjectStore: generated objects are cheap and position-dependent") {
    FakeObjectStore store;
    constexpr uint64_t kSize = 8ull << 30;  // 8 GiB, never stored
    store.PutGeneratedObjectForTest("b", "big", kSize);
    Result<ObjectInfo> info = Await<ObjectInfo>([&](auto cb) {
      store.HeadObject({"b", "big"}, cb);
    });
    REQUIRE(info.ok());
    CHECK(info->size == kSize);
    CHECK(info->etag.size() == 32);

    std::vector<std::byte> got(4099), want(4099);
    const uint64_t offset = kSize - 5000 + 3;
    Result<GetObjectResult> r =
        Get(store,
            {.bucket = "b", .key = "big", .range = ByteRange{offset, got.size()}, .buffer = got});
    REQUIRE(r.ok());
    CHECK(r->bytes == got.size());
    FakeObjectStore::GeneratedContent("big", offset, want);
    CHECK(got == want);

    // Unaligned pieces agree with one whole read, and the content depends on key and offset.
    std::vector<std::byte> whole(64), a(13), b(51), other(64);
    FakeObjectStore::GeneratedContent("big", 100, whole);
    FakeObjectStore::GeneratedContent("big", 100, a);
    FakeObjectStore::GeneratedContent("big", 113, b);
    CHECK(std::memcmp(whole.data(), a.data(), a.size()) == 0);
    CHECK(std::memcmp(whole.data() + 13, b.data(), b.size()) == 0);
    FakeObjectStore::GeneratedContent("other", 100, other);
    CHECK(whole != other);
    FakeObjectStore::GeneratedContent("big", 101, other);
    CHECK(whole != other);
  }

  TEST_CASE("FakeObjectStore: multipart upload") {
    FakeObjectStore store;
    store.CreateBucketForTest("b");
    Result<std::string> id = Await<std::string>(
        [&](auto cb) { store.CreateMultipartUpload({.bucket = "b", .key = "mp"}, cb); });
    REQUIRE(id.ok());
    std::string p1(100, 'a'), p2(50, 'b');
    auto upload = [&](int n, const std::string& body) {
      return Await<std::string>([&](auto cb) {
        store.UploadPart(
            {.bucket = "b", .key = "mp", .upload_id = *id, .part_number = n, .body = Bytes(body)},
            cb);
      });
    };
    Result<std::string> e1 = upload(1, p1);
    Result<std::string> e2 = upload(2, p2);
    REQUIRE(e1.ok());
    REQUIRE(e2.ok());
    CHECK(upload(0, p1).status().code() == StatusCode::kInvalidArgument);

    auto complete = [&](std::vector<CompletedPart> parts) {
      return Await<std::string>([&](auto cb) {
        store.CompleteMultipartUpload(
            {.bucket = "b", .key = "mp", .upload_id = *id, .parts = parts}, cb);
      });
    };
    CHECK(complete({{2, *e2}, {1, *e1}}).status().detail().s3_code == "InvalidPartOrder");
    CHECK(complete({{1, "wrong"}, {2, *e2}}).status().detail().s3_code == "InvalidPart");
    Result<std::string> etag = complete({{1, *e1}, {2, *e2}});
    REQUIRE(etag.ok());
    CHECK(etag->size() == 34);
    CHECK(etag->ends_with("-2"));
    CHECK(GetString(store, "b", "mp").value_or("") == p1 + p2);
    // The upload is gone once completed.
    CHECK(complete({{1, *e1}}).status().detail().s3_code == "NoSuchUpload");
    CHECK(AwaitStatus([&](auto cb) {
            store.AbortMultipartUpload({.bucket = "b", .key = "mp", .upload_id = *id}, cb);
          }).code() == StatusCode::kNotFound);
  }

  TEST_CASE("FakeObjectStore: UploadPartCopy (ranges, If-Match, archived and missing sources)") {
    FakeObjectStore store;
    store.PutObjectForTest("b", "src", "0123456789abcdef");
    const std::string src_etag = store.PutObjectForTest("b", "other", "XYZ");
    store.PutObjectForTest("b", "cold", "zzz", "GLACIER");
    Result<std::string> id = Await<std::string>(
        [&](auto cb) { store.CreateMultipartUpload({.bucket = "b", .key = "dst"}, cb); });
    REQUIRE(id.ok());
    auto copy = [&](int n, const std::string& src, std::optional<ByteRange> range,
                    std::string if_match = "") {
      UploadPartCopyRequest r{.source_bucket = "b",
                              .source_key = src,
                              .source_range = range,
                              .source_if_match = std::move(if_match),
                              .bucket = "b",
                              .key = "dst",
                              .upload_id = *id,
                              .part_number = n};
      return Await<std::string>([&](auto cb) { store.UploadPartCopy(r, cb); });
    };
    Result<std::string> e1 = copy(1, "src", ByteRange{10, 6});
    Result<std::string> e2 = copy(2, "other", std::nullopt, "\"" + src_etag + "\"");
    REQUIRE(e1.ok());
    REQUIRE(e2.ok());
    CHECK(store.CallCount(Operation::kUploadPartCopy) == 2);
    // A range past the end or empty: InvalidArgument (400), as AWS answers UploadPartCopy.
    Result<std::string> past = copy(3, "src", ByteRange{10, 7});
    CHECK(past.status().code() == StatusCode::kInvalidArgument);
    CHECK(past.status().detail().s3_code == "InvalidArgument");
    CHECK(copy(3, "src", ByteRange{16, 1}).status().code() == StatusCode::kInvalidArgument);
    CHECK(copy(3, "src", ByteRange{0, 0}).status().code() == StatusCode::kInvalidArgument);
    CHECK(copy(3, "src", std::nullopt, "nope").status().detail().s3_code == "PreconditionFailed");
    CHECK(copy(3, "missing", std::nullopt).status().detail().s3_code == "NoSuchKey");
    Result<std::string> cold = copy(3, "cold", std::nullopt);
    CHECK(cold.status().reason() == StatusReason::kArchived);
    CHECK(copy(0, "src", std::nullopt).status().code() == StatusCode::kInvalidArgument);
    Result<std::string> etag = Await<std::string>([&](auto cb) {
      store.CompleteMultipartUpload(
          {.bucket = "b", .key = "dst", .upload_id = *id, .parts = {{1, *e1}, {2, *e2}}}, cb);
    });
    REQUIRE(etag.ok());
    CHECK(GetString(store, "b", "dst").value_or("") == "abcdefXYZ");
    // A generated source is materialised for the range copied.
    store.PutGeneratedObjectForTest("b", "gen", 1000);
    id = Await<std::string>(
        [&](auto cb) { store.CreateMultipartUpload({.bucket = "b", .key = "dst"}, cb); });
    REQUIRE(id.ok());
    Result<std::string> g = copy(1, "gen", ByteRange{100, 50});
    REQUIRE(g.ok());
    REQUIRE(Await<std::string>([&](auto cb) {
              store.CompleteMultipartUpload(
                  {.bucket = "b", .key = "dst", .upload_id = *id, .parts = {{1, *g}}}, cb);
            }).ok());
    std::string want(50, '\0');
    FakeObjectStore::GeneratedContent("gen", 100, Bytes(want));
    CHECK(GetString(store, "b", "dst").value_or("") == want);
  }

  TEST_CASE("FakeObjectStore: min_part_size") {
    FakeObjectStore store({.min_part_size = 10});
    store.CreateBucketForTest("b");
    std::string id = Await<std::string>([&](auto cb) {
                       store.CreateMultipartUpload({.bucket = "b", .key = "k"}, cb);
                     }).value_or("");
    std::string small = "tiny";
    std::vector<CompletedPart> parts;
    for (int n = 1; n <= 2; ++n) {
      parts.push_back({n, Await<std::string>([&](auto cb) {
                            store.UploadPart({.bucket = "b",
                                              .key = "k",
                                              .upload_id = id,
                                              .part_number = n,
                                              .body = Bytes(small)},
                                             cb);
                          }).value_or("")});
    }
    Result<std::string> r = Await<std::string>([&](auto cb) {
      store.CompleteMultipartUpload({.bucket = "b", .key = "k", .upload_id = id, .parts = parts},
                                    cb);
    });
    CHECK(r.status().detail().s3_code == "EntityTooSmall");
  }

  TEST_CASE("FakeObjectStore: delete, copy, buckets and counters") {
    FakeObjectStore store;
    store.PutObjectForTest("b", "k1", "one");
    store.PutObjectForTest("b", "k2", "two");
    store.PutObjectForTest("b", "cold", "ice", "GLACIER");
    store.CreateBucketForTest("dst");

    Result<std::string> copied = Await<std::string>([&](auto cb) {
      store.CopyObject({.source_bucket = "b",
                        .source_key = "k1",
                        .bucket = "dst",
                        .key = "c",
                        .replace_metadata = std::map<std::string, std::string>{{"m", "v"}}},
                       cb);
    });
    REQUIRE(copied.ok());
    CHECK(GetString(store, "dst", "c").value_or("") == "one");
    CHECK(Await<ObjectInfo>([&](auto cb) {
            store.HeadObject({"dst", "c"}, cb);
          })->user_metadata.at("m") == "v");
    Result<std::string> cold_copy = Await<std::string>([&](auto cb) {
      store.CopyObject({.source_bucket = "b", .source_key = "cold", .bucket = "dst", .key = "x"},
                       cb);
    });
    CHECK(cold_copy.status().code() == StatusCode::kFailedPrecondition);

    CHECK(AwaitStatus([&](auto cb) { store.DeleteObject({"b", "k1"}, cb); }).ok());
    CHECK(AwaitStatus([&](auto cb) { store.DeleteObject({"b", "never"}, cb); }).ok());
    Result<DeleteObjectsResult> many = Await<DeleteObjectsResult>([&](auto cb) {
      store.DeleteObjects({.bucket = "b", .keys = {"k2", "ghost"}}, cb);
    });
    REQUIRE(many.ok());
    CHECK(many->deleted == std::vector<std::string>{"k2", "ghost"});

    Status not_empty = AwaitStatus([&](auto cb) { store.DeleteBucket("b", cb); });
    CHECK(not_empty.code() == StatusCode::kFailedPrecondition);
    CHECK(not_empty.detail().s3_code == "BucketNotEmpty");
    CHECK(AwaitStatus([&](auto cb) { store.CreateBucket("dst", cb); }).code() ==
          StatusCode::kAlreadyExists);

    Result<std::vector<BucketInfo>> buckets =
        Await<std::vector<BucketInfo>>([&](auto cb) { store.ListBuckets(cb); });
    REQUIRE(buckets.ok());
    REQUIRE(buckets->size() == 2);
    CHECK((*buckets)[0].name == "b");

    CHECK(store.CallCount(Operation::kGetObject) == 1);
    CHECK(store.CallCount(Operation::kCopyObject) == 2);
    CHECK(store.CallCount(Operation::kDeleteObject) == 2);
    store.ResetCallCounts();
    CHECK(store.CallCount(Operation::kCopyObject) == 0);
  }

  TEST_CASE("FakeObjectStore: concurrent puts and gets") {
    FakeObjectStore store;
    store.CreateBucketForTest("b");
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t) {
      threads.emplace_back([&store, t] {
        for (int i = 0; i < 50; ++i) {
          std::string key = "t" + std::to_string(t) + "/" + std::to_string(i);
          std::string body = key + key;
          // CHECK, not REQUIRE: a failing REQUIRE throws, which would terminate this thread.
          CHECK(Await<std::string>([&](auto cb) {
                  store.PutObject({.bucket = "b", .key = key, .body = Bytes(body)}, cb);
                }).ok());
          CHECK(GetString(store, "b", key).value_or("") == body);
        }
      });
    }
    for (auto& thread : threads) thread.join();
    Result<ListObjectsPage> page = List(store, {.bucket = "b"});
    REQUIRE(page.ok());
    CHECK(page->objects.size() == 200);
  }
}

}  // namespace
}  // namespace reelfs::s3

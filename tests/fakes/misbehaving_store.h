// MisbehavingStore: an ObjectStore decorator that breaks the S3 protocol in one chosen way, in
// front of any store (the in-memory fake in unit tests); everything else is forwarded. For the
// clients' defences against a broken server: listings that never end, an ignored If-Match.
//
// Thread-safety: the fault may be switched while requests run (atomics); calls go to the inner
// store as they come.
#pragma once

#include <atomic>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "tests/fakes/forwarding_store.h"

namespace reelfs::testing {

class MisbehavingStore final : public ForwardingStore {
 public:
  enum class Fault {
    kNone,
    kRepeatToken,       // every ListObjects page: IsTruncated, the same token
    kTokenCycle,        // tokens A, B, A, ...: a cycle, not a plain repeat
    kTruncatedNoToken,  // IsTruncated with no token
    kIgnoreIfMatch,     // GetObject drops If-Match and reports the object's current ETag
  };
  explicit MisbehavingStore(std::shared_ptr<s3::ObjectStore> inner)
      : ForwardingStore(std::move(inner)) {}
  std::atomic<Fault> fault{Fault::kNone};
  std::atomic<int> list_calls{0};

  void ListObjects(const s3::ListObjectsRequest& req,
                   s3::Callback<s3::ListObjectsPage> done) override {
    const int call = ++list_calls;
    const Fault f = fault.load();
    if (f == Fault::kNone || f == Fault::kIgnoreIfMatch) return inner_->ListObjects(req, done);
    s3::ListObjectsRequest first_page = req;  // the fake knows none of these tokens
    first_page.continuation_token.clear();
    inner_->ListObjects(
        first_page, [f, call, done = std::move(done)](Result<s3::ListObjectsPage> page) {
          if (!page.ok()) return done(std::move(page));
          page->is_truncated = true;
          page->next_continuation_token = f == Fault::kRepeatToken  ? "same"
                                          : f == Fault::kTokenCycle ? (call % 2 == 0 ? "A" : "B")
                                                                    : "";
          done(std::move(page));
        });
  }
  void GetObject(const s3::GetObjectRequest& req, s3::Callback<s3::GetObjectResult> done) override {
    if (fault.load() != Fault::kIgnoreIfMatch) return inner_->GetObject(req, std::move(done));
    s3::GetObjectRequest copy = req;
    copy.if_match.clear();
    inner_->GetObject(copy, std::move(done));
  }
};

}  // namespace reelfs::testing

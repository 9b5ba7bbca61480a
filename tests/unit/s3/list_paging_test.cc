// ListPaging: the continuation-token rules every paging loop over ListObjectsV2 follows.
#include "s3/protocol/list_paging.h"

#include <string>

#include <doctest/doctest.h>

namespace reelfs::s3 {
namespace {

ListObjectsPage Page(bool truncated, std::string token) {
  ListObjectsPage page;
  page.is_truncated = truncated;
  page.next_continuation_token = std::move(token);
  return page;
}

TEST_SUITE("s3") {
  TEST_CASE("ListPaging: an honest listing is followed to its last page") {
    ListPaging paging;
    auto a = paging.Next(Page(true, "t1"));
    REQUIRE(a.ok());
    CHECK(*a == std::optional<std::string>("t1"));
    auto b = paging.Next(Page(true, "t2"));
    REQUIRE(b.ok());
    CHECK(*b == std::optional<std::string>("t2"));
    auto c = paging.Next(Page(false, ""));
    REQUIRE(c.ok());
    CHECK_FALSE(c->has_value());
    CHECK(paging.pages() == 3);
    // A last page may repeat a token: nothing follows it anyway.
    ListPaging one;
    auto d = one.Next(Page(false, "t1"));
    REQUIRE(d.ok());
    CHECK_FALSE(d->has_value());
  }

  TEST_CASE("ListPaging: a repeated or cycling token is refused (kDataLoss) at its first repeat") {
    ListPaging same;
    REQUIRE(same.Next(Page(true, "same")).ok());
    auto again = same.Next(Page(true, "same"));
    REQUIRE_FALSE(again.ok());
    CHECK(again.status().code() == StatusCode::kDataLoss);
    CHECK(again.status().message().find("repeated the continuation token 'same'") !=
          std::string::npos);

    ListPaging cycle;
    REQUIRE(cycle.Next(Page(true, "A")).ok());
    REQUIRE(cycle.Next(Page(true, "B")).ok());
    auto back = cycle.Next(Page(true, "A"));
    REQUIRE_FALSE(back.ok());
    CHECK(back.status().code() == StatusCode::kDataLoss);
    CHECK(cycle.pages() == 3);
  }

  TEST_CASE("ListPaging: IsTruncated without a token is refused, not a short listing") {
    ListPaging paging;
    auto r = paging.Next(Page(true, ""));
    REQUIRE_FALSE(r.ok());
    CHECK(r.status().code() == StatusCode::kDataLoss);
  }

  TEST_CASE("ListPaging: fresh tokens for ever stop at max_pages") {
    ListPaging paging(/*max_pages=*/50);
    int followed = 0;
    for (int i = 0; i < 1000; ++i) {
      auto r = paging.Next(Page(true, "token-" + std::to_string(i)));
      if (!r.ok()) {
        CHECK(r.status().code() == StatusCode::kDataLoss);
        break;
      }
      ++followed;
    }
    CHECK(followed == 49);  // the 50th page is the last one a listing may take
    CHECK(paging.pages() == 50);
  }

  TEST_CASE("ListPaging: control bytes of a repeated token are not printed") {
    ListPaging paging;
    const std::string token = std::string("a\nb\x01", 4) + std::string(100, 'z');
    REQUIRE(paging.Next(Page(true, token)).ok());
    auto r = paging.Next(Page(true, token));
    REQUIRE_FALSE(r.ok());
    const std::string message(r.status().message());
    CHECK(message.find('\n') == std::string::npos);
    CHECK(message.find('\x01') == std::string::npos);
    CHECK(message.size() < 160);
  }
}

}  // namespace
}  // namespace reelfs::s3

// TapeOrder: the one restore order of `reelfs stage` and `setfattr user.hsm.request=stage`, row
// by row (docs/tape.md "Tape order").

#include "hsm/tape_order.h"

#include <optional>
#include <string>
#include <vector>

#include <doctest/doctest.h>

namespace reelfs::hsm {
namespace {

// One input object: key, and a hint "cartridge" with an optional block ("" = no hint).
struct In {
  std::string key;
  std::string cartridge;
  std::optional<uint64_t> block;
};

std::vector<std::string> Order(const std::vector<In>& in) {
  std::vector<TapeHint> hints(in.size());
  std::vector<TapeOrderItem> items;
  for (size_t i = 0; i < in.size(); ++i) {
    hints[i] = TapeHint{.cartridge = in[i].cartridge, .block = in[i].block};
    items.push_back({in[i].key, in[i].cartridge.empty() ? nullptr : &hints[i]});
  }
  std::vector<std::string> out;
  for (size_t i : TapeOrder(items)) out.push_back(in[i].key);
  return out;
}

struct Row {
  const char* name;
  std::vector<In> in;
  std::vector<std::string> want;
};

TEST_CASE("tape order: table") {
  const std::vector<Row> rows = {
      {"empty", {}, {}},
      {"no hints: by key", {{"c", ""}, {"a", ""}, {"b", ""}}, {"a", "b", "c"}},
      {"one cartridge: by block",
       {{"a", "T1", 30}, {"b", "T1", 10}, {"c", "T1", 20}},
       {"b", "c", "a"}},
      {"cartridges in the order of their first key, not their name",
       {{"k1", "B", 5}, {"k2", "A", 900}, {"k3", "A", 10}, {"k5", "B", 1}},
       {"k5", "k1", "k3", "k2"}},
      {"the input order does not matter",
       {{"k5", "B", 1}, {"k3", "A", 10}, {"k2", "A", 900}, {"k1", "B", 5}},
       {"k5", "k1", "k3", "k2"}},
      {"no block: after the blocks of its cartridge, then by key",
       {{"a", "T1"}, {"b", "T1", 7}, {"c", "T1"}, {"d", "T2", 1}},
       {"b", "a", "c", "d"}},
      {"unhinted last, by key",
       {{"z", ""}, {"m", "T9", 4}, {"a", ""}, {"n", "T9", 2}},
       {"n", "m", "a", "z"}},
      {"equal block: by key", {{"b", "T1", 5}, {"a", "T1", 5}}, {"a", "b"}},
  };
  for (const Row& row : rows) {
    CAPTURE(row.name);
    CHECK(Order(row.in) == row.want);
  }
}

}  // namespace
}  // namespace reelfs::hsm

#include "hsm/tape_order.h"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <map>
#include <numeric>
#include <string>
#include <tuple>

namespace reelfs::hsm {

std::vector<size_t> TapeOrder(const std::vector<TapeOrderItem>& items) {
  // Each cartridge's smallest key decides its rank.
  std::map<std::string_view, std::string_view> first_key;  // cartridge -> smallest key
  for (const TapeOrderItem& item : items) {
    if (item.hint == nullptr) continue;
    auto [it, inserted] = first_key.try_emplace(item.hint->cartridge, item.key);
    if (!inserted && item.key < it->second) it->second = item.key;
  }
  // Ties of first key (two cartridges sharing the smallest key cannot happen for distinct
  // objects, but duplicate keys may be passed) fall back to the cartridge name.
  std::vector<std::pair<std::string_view, std::string_view>> by_first;  // (first key, cartridge)
  by_first.reserve(first_key.size());
  for (const auto& [cartridge, key] : first_key) by_first.emplace_back(key, cartridge);
  std::sort(by_first.begin(), by_first.end());
  std::map<std::string_view, size_t> rank;
  for (size_t i = 0; i < by_first.size(); ++i) rank.emplace(by_first[i].second, i);

  constexpr uint64_t kNoBlock = std::numeric_limits<uint64_t>::max();
  auto order_key = [&](size_t i) {
    const TapeOrderItem& item = items[i];
    if (item.hint == nullptr) return std::make_tuple(rank.size(), uint64_t{0}, item.key);
    return std::make_tuple(rank.at(item.hint->cartridge), item.hint->block.value_or(kNoBlock),
                           item.key);
  };
  std::vector<size_t> order(items.size());
  std::iota(order.begin(), order.end(), size_t{0});
  // Stable: equal keys keep their input order.
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return order_key(a) < order_key(b); });
  return order;
}

}  // namespace reelfs::hsm

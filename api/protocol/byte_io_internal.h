// Little-endian fixed-width loads and stores for the side-channel codec, byte by byte so they
// are independent of host order and alignment; and a bounds-checked reader over a body.
//
// Thread-safety: pure functions; a BodyReader is used by one thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <type_traits>
#include <vector>

namespace reelfs::api::protocol::internal {

template <class T>
void StoreLe(uint8_t* out, T value) {
  static_assert(std::is_unsigned_v<T>);
  for (size_t i = 0; i < sizeof(T); ++i) out[i] = static_cast<uint8_t>(value >> (8 * i));
}

template <class T>
T LoadLe(const uint8_t* in) {
  static_assert(std::is_unsigned_v<T>);
  T value = 0;
  for (size_t i = 0; i < sizeof(T); ++i) value |= static_cast<T>(in[i]) << (8 * i);
  return value;
}

template <class T>
void AppendLe(std::vector<uint8_t>* out, T value) {
  size_t at = out->size();
  out->resize(at + sizeof(T));
  StoreLe(out->data() + at, value);
}

// Reads fields front to back; a read past the end fails and leaves the reader failed, so a
// decoder reads every field and checks ok() once.
class BodyReader {
 public:
  explicit BodyReader(std::span<const uint8_t> body) : body_(body) {}

  template <class T>
  T Take() {
    if (!Has(sizeof(T))) return 0;
    T value = LoadLe<T>(body_.data() + at_);
    at_ += sizeof(T);
    return value;
  }
  std::span<const uint8_t> TakeBytes(size_t n) {
    if (!Has(n)) return {};
    auto bytes = body_.subspan(at_, n);
    at_ += n;
    return bytes;
  }
  bool ok() const { return !short_; }
  size_t remaining() const { return body_.size() - at_; }

 private:
  bool Has(size_t n) {
    if (short_ || body_.size() - at_ < n) short_ = true;
    return !short_;
  }

  std::span<const uint8_t> body_;
  size_t at_ = 0;
  bool short_ = false;
};

}  // namespace reelfs::api::protocol::internal

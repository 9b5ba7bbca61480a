// api/protocol: the side channel's codec (docs/protocols/side-channel.md section 5).
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include <doctest/doctest.h>

#include "api/protocol/codec.h"

namespace reelfs::api::protocol {
namespace {

using Bytes = std::vector<uint8_t>;

std::array<uint8_t, kCudaIpcHandleSize> Handle() {
  std::array<uint8_t, kCudaIpcHandleSize> h{};
  for (size_t i = 0; i < h.size(); ++i) h[i] = static_cast<uint8_t>(0xa0 + i);
  return h;
}

// One of every message, with values that use every byte of their fields.
std::vector<Frame> EveryMessage() {
  return {
      {.tag = 1, .message = Hello{.version = 1, .capabilities = capability::kRdma}},
      {.tag = 2, .message = Hello{.version = 7, .capabilities = 0xffffffffu}},
      {.tag = 3, .message = OpenFile{}},
      {.tag = 4, .message = CloseFile{.file_id = 0x0102030405060708ull}},
      {.tag = 5, .message = RegisterBuffer{.kind = BufferKind::kMemfd, .length = 1ull << 30}},
      {.tag = 6, .message = RegisterBuffer{.kind = BufferKind::kDmaBuf, .length = 4096}},
      {.tag = 7,
       .message =
           RegisterBuffer{
               .kind = BufferKind::kCudaIpc, .length = 8ull << 20, .cuda_ipc_handle = Handle()}},
      {.tag = 8, .message = ReleaseBuffer{.buffer_id = 42}},
      {.tag = 9,
       .message = Read{.file_id = 11,
                       .offset = 0xfffffffff8000000ull,
                       .length = kMaxReadLength,
                       .buffer_id = 12,
                       .buffer_offset = 0xfffffffff8000000ull}},
      {.tag = 10, .message = Read{.file_id = 1, .offset = 0, .length = 1, .buffer_id = 2}},
      {.tag = 11, .message = Done{.result = 1 << 20, .path = DonePath::kRdma}},
      {.tag = 12, .message = Done{.result = -5, .path = DonePath::kNone}},
      {.tag = 13, .message = Done{.result = 0, .path = DonePath::kHttp}},
      {.tag = 14, .message = Done{.result = INT64_MAX, .path = DonePath::kCache}},
      {.tag = 15, .message = Error{.error = 71, .message = "frame longer than 4 KiB"}},
      {.tag = 0, .message = Error{.error = 22, .message = ""}},
      {.tag = UINT64_MAX,
       .message = Error{.error = 90, .message = std::string(kMaxErrorMessage, 'x')}},
      {.tag = 16, .message = OpenPath{.path = "small/000123.bin"}},
      {.tag = 17, .message = OpenPath{.path = std::string(kMaxOpenPath, 'p')}},
      {.tag = 18,
       .message = ReadPath{.offset = 0x0102030405060708ull,
                           .length = kMaxReadLength,
                           .buffer_id = 3,
                           .buffer_offset = 0x1000,
                           .path = "a/b.bin"}},
      {.tag = 19,
       .message =
           ReadPath{
               .offset = 0, .length = 1, .buffer_id = 1, .path = std::string(kMaxReadPath, 'q')}},
  };
}

Bytes Encode(const Frame& f) {
  auto bytes = EncodeFrame(f);
  REQUIRE_MESSAGE(bytes.ok(), bytes.status().ToString());
  return *bytes;
}

Bytes Frame16(uint32_t length, uint16_t type, uint16_t flags, uint64_t tag, const Bytes& body) {
  Bytes out(16);
  for (int i = 0; i < 4; ++i) out[i] = static_cast<uint8_t>(length >> (8 * i));
  for (int i = 0; i < 2; ++i) out[4 + i] = static_cast<uint8_t>(type >> (8 * i));
  for (int i = 0; i < 2; ++i) out[6 + i] = static_cast<uint8_t>(flags >> (8 * i));
  for (int i = 0; i < 8; ++i) out[8 + i] = static_cast<uint8_t>(tag >> (8 * i));
  out.insert(out.end(), body.begin(), body.end());
  return out;
}
// A frame whose header states the body's true length.
Bytes WithBody(MessageType type, const Bytes& body, uint16_t flags = 0) {
  return Frame16(static_cast<uint32_t>(body.size()), static_cast<uint16_t>(type), flags, 77, body);
}

void Le(Bytes* out, uint64_t v, int n) {
  for (int i = 0; i < n; ++i) out->push_back(static_cast<uint8_t>(v >> (8 * i)));
}
Bytes ReadBody(uint64_t offset, uint64_t length, uint64_t buffer_offset) {
  Bytes b;
  Le(&b, 1, 8);
  Le(&b, offset, 8);
  Le(&b, length, 8);
  Le(&b, 2, 8);
  Le(&b, buffer_offset, 8);
  return b;
}

void CheckInvalid(const Result<Frame>& r, std::string_view needle) {
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().code() == StatusCode::kInvalidArgument);
  INFO(r.status().ToString());
  CHECK(std::string(r.status().message()).find(needle) != std::string::npos);
}

TEST_CASE("every message round-trips, and its body has the documented size") {
  // Body sizes from docs/protocols/side-channel.md section 5, by message index.
  const size_t kBodySize[] = {8, 0, 8, 9, 8, 40, 9};
  for (const Frame& f : EveryMessage()) {
    CAPTURE(f.tag);
    Bytes bytes = Encode(f);
    size_t index = f.message.index();
    size_t expected_body =
        index == 7   ? 6 + std::get<Error>(f.message).message.size()
        : index == 8 ? 2 + std::get<OpenPath>(f.message).path.size()
        : index == 9 ? 34 + std::get<ReadPath>(f.message).path.size()
        : index == 3 && std::get<RegisterBuffer>(f.message).kind == BufferKind::kCudaIpc
            ? 9 + kCudaIpcHandleSize
            : kBodySize[index];
    CHECK(bytes.size() == kFrameHeaderSize + expected_body);
    auto decoded = DecodeFrame(bytes);
    REQUIRE_MESSAGE(decoded.ok(), decoded.status().ToString());
    CHECK(*decoded == f);
    CHECK(Encode(*decoded) == bytes);
  }
}

TEST_CASE("the wire bytes are the documented little-endian layout") {
  Frame read{
      .tag = 0x1122334455667788ull,
      .message = Read{
          .file_id = 1, .offset = 0x0a0b, .length = 0x1000, .buffer_id = 2, .buffer_offset = 0x20}};
  CHECK(Encode(read) == Frame16(40, 6, 0, 0x1122334455667788ull, ReadBody(0x0a0b, 0x1000, 0x20)));

  Bytes done_body;
  Le(&done_body, static_cast<uint64_t>(int64_t{-2}), 8);
  done_body.push_back(3);
  CHECK(Encode({.tag = 5, .message = Done{.result = -2, .path = DonePath::kCache}}) ==
        Frame16(9, 7, 0, 5, done_body));

  Bytes hello_body;
  Le(&hello_body, 1, 4);
  Le(&hello_body, capability::kDmaBuf | capability::kCudaIpc, 4);
  CHECK(Encode({.tag = 1,
                .message = Hello{.version = 1,
                                 .capabilities = capability::kDmaBuf | capability::kCudaIpc}}) ==
        Frame16(8, 1, 0, 1, hello_body));

  Bytes error_body;
  Le(&error_body, 71, 4);
  Le(&error_body, 2, 2);
  error_body.push_back('h');
  error_body.push_back('i');
  CHECK(Encode({.tag = 0, .message = Error{.error = 71, .message = "hi"}}) ==
        Frame16(8, 8, 0, 0, error_body));

  Bytes open_path_body;
  Le(&open_path_body, 3, 2);
  for (char c : std::string("a/b")) open_path_body.push_back(static_cast<uint8_t>(c));
  CHECK(Encode({.tag = 9, .message = OpenPath{.path = "a/b"}}) ==
        Frame16(5, 9, 0, 9, open_path_body));

  Bytes read_path_body;
  Le(&read_path_body, 0x0a0b, 8);
  Le(&read_path_body, 0x1000, 8);
  Le(&read_path_body, 2, 8);
  Le(&read_path_body, 0x20, 8);
  Le(&read_path_body, 3, 2);
  for (char c : std::string("a/b")) read_path_body.push_back(static_cast<uint8_t>(c));
  CHECK(Encode({.tag = 10,
                .message = ReadPath{.offset = 0x0a0b,
                                    .length = 0x1000,
                                    .buffer_id = 2,
                                    .buffer_offset = 0x20,
                                    .path = "a/b"}}) == Frame16(37, 10, 0, 10, read_path_body));
}

TEST_CASE("READ_PATH: READ's range rules and OPEN_PATH's path rules") {
  auto body = [](uint64_t offset, uint64_t length, uint64_t buffer_offset, std::string path) {
    Bytes b;
    Le(&b, offset, 8);
    Le(&b, length, 8);
    Le(&b, 1, 8);
    Le(&b, buffer_offset, 8);
    Le(&b, path.size(), 2);
    for (char c : path) b.push_back(static_cast<uint8_t>(c));
    return WithBody(MessageType::kReadPath, b);
  };
  CHECK(DecodeFrame(body(0, 10, 0, "f")).ok());
  CheckInvalid(DecodeFrame(body(0, 0, 0, "f")), "length is 0");
  CheckInvalid(DecodeFrame(body(0, kMaxReadLength + 1, 0, "f")), "above the cap");
  CheckInvalid(DecodeFrame(body(UINT64_MAX, 2, 0, "f")), "offset + length overflows");
  CheckInvalid(DecodeFrame(body(0, 2, UINT64_MAX, "f")), "buffer_offset + length overflows");
  CheckInvalid(DecodeFrame(body(0, 2, 0, "")), "empty path");
  CheckInvalid(DecodeFrame(body(0, 2, 0, std::string("a\0", 2))), "NUL byte");
  CHECK_FALSE(
      EncodeFrame(
          {.tag = 1, .message = ReadPath{.length = 1, .path = std::string(kMaxReadPath + 1, 'x')}})
          .ok());
}

TEST_CASE("OPEN_PATH: empty, over-long or NUL-carrying paths are refused both ways") {
  Bytes empty;
  Le(&empty, 0, 2);
  CheckInvalid(DecodeFrame(WithBody(MessageType::kOpenPath, empty)), "empty path");
  Bytes nul;
  Le(&nul, 3, 2);
  nul.push_back('a');
  nul.push_back(0);
  nul.push_back('b');
  CheckInvalid(DecodeFrame(WithBody(MessageType::kOpenPath, nul)), "NUL byte");
  Bytes lying;  // says 10 bytes, carries 2
  Le(&lying, 10, 2);
  lying.push_back('a');
  lying.push_back('b');
  CheckInvalid(DecodeFrame(WithBody(MessageType::kOpenPath, lying)), "truncated");
  Bytes trailing;
  Le(&trailing, 1, 2);
  trailing.push_back('a');
  trailing.push_back('b');
  CheckInvalid(DecodeFrame(WithBody(MessageType::kOpenPath, trailing)), "trailing");
  for (const std::string& bad :
       {std::string(), std::string("a\0b", 3), std::string(kMaxOpenPath + 1, 'p')}) {
    auto r = EncodeFrame({.tag = 1, .message = OpenPath{.path = bad}});
    CHECK_FALSE(r.ok());
  }
}

TEST_CASE("framing errors: body length above 4 KiB, unknown type") {
  SUBCASE("a body length of 4 KiB + 1 is refused from the header alone") {
    Bytes header = Frame16(kMaxBodyLength + 1, 6, 0, 1, {});
    auto step = DecodeNext(header);
    REQUIRE_FALSE(step.ok());
    CHECK(step.status().code() == StatusCode::kInvalidArgument);
    CHECK(std::string(step.status().message()).find("above the limit") != std::string::npos);
    CheckInvalid(DecodeFrame(header), "above the limit");
    CheckInvalid(DecodeFrame(Frame16(UINT32_MAX, 6, 0, 1, {})), "above the limit");
  }
  SUBCASE("a body of exactly 4 KiB frames (and then fails as an ERROR of the wrong length)") {
    auto step = DecodeNext(Frame16(kMaxBodyLength, 8, 0, 1, Bytes(kMaxBodyLength, 0)));
    REQUIRE(step.ok());
    CHECK(step->frame_size == kFrameHeaderSize + kMaxBodyLength);
    CHECK_FALSE(step->body_status.ok());
  }
  for (uint16_t type : {uint16_t{0}, uint16_t{11}, uint16_t{0x100}, uint16_t{0xffff}}) {
    CAPTURE(type);
    auto step = DecodeNext(Frame16(0, type, 0, 1, {}));
    REQUIRE_FALSE(step.ok());
    CHECK(std::string(step.status().message()).find("unknown message type") != std::string::npos);
  }
}

TEST_CASE("request errors keep the stream in step and name the rule") {
  struct Row {
    const char* name;
    Bytes frame;
    const char* needle;
  };
  Bytes handle_short = {3};
  Le(&handle_short, 4096, 8);
  handle_short.resize(handle_short.size() + kCudaIpcHandleSize - 1);
  Bytes kind_unknown = {4};
  Le(&kind_unknown, 4096, 8);
  Bytes done_path = {};
  Le(&done_path, 0, 8);
  done_path.push_back(4);
  Bytes error_long = {};
  Le(&error_long, 5, 4);
  Le(&error_long, 3, 2);
  error_long.push_back('a');
  error_long.push_back('b');
  Bytes error_short = error_long;
  error_short.push_back('c');
  error_short.push_back('d');
  const Row rows[] = {
      {"unknown flag bit 0", WithBody(MessageType::kOpenFile, {}, 1), "unknown flag bits"},
      {"unknown flag bit 15", WithBody(MessageType::kRead, ReadBody(0, 1, 0), 0x8000),
       "unknown flag bits"},
      {"HELLO truncated", WithBody(MessageType::kHello, Bytes(7)), "truncated"},
      {"HELLO trailing", WithBody(MessageType::kHello, Bytes(9)), "trailing"},
      {"OPEN_FILE trailing", WithBody(MessageType::kOpenFile, Bytes(1)), "trailing"},
      {"CLOSE_FILE truncated", WithBody(MessageType::kCloseFile, Bytes(7)), "truncated"},
      {"CLOSE_FILE trailing", WithBody(MessageType::kCloseFile, Bytes(16)), "trailing"},
      {"REGISTER_BUFFER empty", WithBody(MessageType::kRegisterBuffer, {}), "truncated"},
      {"REGISTER_BUFFER truncated", WithBody(MessageType::kRegisterBuffer, {1, 0, 0}), "truncated"},
      {"REGISTER_BUFFER memfd trailing",
       WithBody(MessageType::kRegisterBuffer, {1, 0, 0, 0, 0, 0, 0, 0, 0, 0}), "trailing"},
      {"REGISTER_BUFFER cuda_ipc handle short",
       WithBody(MessageType::kRegisterBuffer, handle_short), "truncated"},
      {"REGISTER_BUFFER unknown kind", WithBody(MessageType::kRegisterBuffer, kind_unknown),
       "unknown buffer kind"},
      {"REGISTER_BUFFER kind 0",
       WithBody(MessageType::kRegisterBuffer, {0, 0, 0, 0, 0, 0, 0, 0, 0}), "unknown buffer kind"},
      {"RELEASE_BUFFER truncated", WithBody(MessageType::kReleaseBuffer, Bytes(4)), "truncated"},
      {"RELEASE_BUFFER trailing", WithBody(MessageType::kReleaseBuffer, Bytes(9)), "trailing"},
      {"READ truncated", WithBody(MessageType::kRead, Bytes(39)), "truncated"},
      {"READ trailing", WithBody(MessageType::kRead, Bytes(41, 1)), "trailing"},
      {"READ length 0", WithBody(MessageType::kRead, ReadBody(0, 0, 0)), "length is 0"},
      {"READ length 64 MiB + 1", WithBody(MessageType::kRead, ReadBody(0, kMaxReadLength + 1, 0)),
       "above the cap"},
      {"READ length u64 max", WithBody(MessageType::kRead, ReadBody(0, UINT64_MAX, 0)),
       "above the cap"},
      {"READ buffer_offset + length overflows",
       WithBody(MessageType::kRead, ReadBody(0, 2, UINT64_MAX - 1)),
       "buffer_offset + length overflows"},
      {"READ offset + length overflows", WithBody(MessageType::kRead, ReadBody(UINT64_MAX, 1, 0)),
       "offset + length overflows"},
      {"DONE truncated", WithBody(MessageType::kDone, Bytes(8)), "truncated"},
      {"DONE trailing", WithBody(MessageType::kDone, Bytes(10)), "trailing"},
      {"DONE unknown path", WithBody(MessageType::kDone, done_path), "unknown path"},
      {"ERROR truncated header", WithBody(MessageType::kError, Bytes(5)), "truncated"},
      {"ERROR text shorter than stated", WithBody(MessageType::kError, error_long), "truncated"},
      {"ERROR text longer than stated", WithBody(MessageType::kError, error_short), "trailing"},
  };
  for (const Row& row : rows) {
    CAPTURE(row.name);
    auto step = DecodeNext(row.frame);
    REQUIRE(step.ok());
    CHECK(step->need_more == 0);
    CHECK(step->frame_size == row.frame.size());
    CHECK(step->header.tag == 77);
    CHECK_FALSE(step->frame.has_value());
    CHECK(step->body_status.code() == StatusCode::kInvalidArgument);
    CHECK(std::string(step->body_status.message()).find(row.needle) != std::string::npos);
    CheckInvalid(DecodeFrame(row.frame), row.needle);
  }
}

TEST_CASE("the limits themselves decode: READ of 64 MiB ending exactly at u64 max") {
  auto f =
      DecodeFrame(WithBody(MessageType::kRead, ReadBody(UINT64_MAX - kMaxReadLength, kMaxReadLength,
                                                        UINT64_MAX - kMaxReadLength)));
  REQUIRE_MESSAGE(f.ok(), f.status().ToString());
  CHECK(std::get<Read>(f->message).length == kMaxReadLength);
}

TEST_CASE("DecodeFrame: a truncated frame or bytes after it are refused") {
  Bytes bytes = Encode({.tag = 3, .message = CloseFile{.file_id = 9}});
  for (size_t cut = 0; cut < bytes.size(); ++cut) {
    CAPTURE(cut);
    CheckInvalid(DecodeFrame(std::span(bytes).first(cut)), "truncated");
  }
  Bytes longer = bytes;
  longer.push_back(0);
  CheckInvalid(DecodeFrame(longer), "trailing bytes after");
}

TEST_CASE("the encoder refuses what the decoder refuses") {
  const Frame bad[] = {
      {.message = Read{.length = 0}},
      {.message = Read{.length = kMaxReadLength + 1}},
      {.message = Read{.length = 2, .buffer_offset = UINT64_MAX - 1}},
      {.message = Read{.offset = UINT64_MAX, .length = 1}},
      {.message = RegisterBuffer{.kind = static_cast<BufferKind>(9)}},
      {.message = RegisterBuffer{.kind = BufferKind::kMemfd, .cuda_ipc_handle = Handle()}},
      {.message = Done{.path = static_cast<DonePath>(4)}},
      {.message = Error{.message = std::string(kMaxErrorMessage + 1, 'x')}},
  };
  for (const Frame& f : bad) {
    CAPTURE(f.message.index());
    auto r = EncodeFrame(f);
    REQUIRE_FALSE(r.ok());
    CHECK(r.status().code() == StatusCode::kInvalidArgument);
  }
}

// A server's read loop: append what arrived, take whole frames off the front.
class StreamReader {
 public:
  void Feed(std::span<const uint8_t> bytes) {
    buffer_.insert(buffer_.end(), bytes.begin(), bytes.end());
    for (;;) {
      auto step = DecodeNext(buffer_);
      REQUIRE_MESSAGE(step.ok(), step.status().ToString());
      if (step->need_more > 0) {
        CHECK(step->frame_size == 0);
        last_need_ = step->need_more;
        return;
      }
      REQUIRE_MESSAGE(step->body_status.ok(), step->body_status.ToString());
      frames_.push_back(*step->frame);
      buffer_.erase(buffer_.begin(), buffer_.begin() + static_cast<ptrdiff_t>(step->frame_size));
    }
  }
  const std::vector<Frame>& frames() const { return frames_; }
  size_t buffered() const { return buffer_.size(); }
  size_t last_need() const { return last_need_; }

 private:
  Bytes buffer_;
  std::vector<Frame> frames_;
  size_t last_need_ = 0;
};

TEST_CASE("a stream split at every byte boundary decodes to the same frames") {
  std::vector<Frame> frames = EveryMessage();
  Bytes stream;
  for (const Frame& f : frames) {
    Bytes b = Encode(f);
    stream.insert(stream.end(), b.begin(), b.end());
  }
  for (size_t split = 0; split <= stream.size(); ++split) {
    CAPTURE(split);
    StreamReader reader;
    reader.Feed(std::span(stream).first(split));
    reader.Feed(std::span(stream).subspan(split));
    REQUIRE(reader.frames().size() == frames.size());
    CHECK(reader.frames() == frames);
    CHECK(reader.buffered() == 0);
  }
}

TEST_CASE("a stream fed one byte at a time: need_more counts down to each frame") {
  std::vector<Frame> frames = EveryMessage();
  Bytes stream;
  std::vector<size_t> ends;
  for (const Frame& f : frames) {
    Bytes b = Encode(f);
    stream.insert(stream.end(), b.begin(), b.end());
    ends.push_back(stream.size());
  }
  StreamReader reader;
  size_t frame_start = 0;
  size_t next = 0;
  for (size_t i = 0; i < stream.size(); ++i) {
    reader.Feed(std::span(stream).subspan(i, 1));
    if (i + 1 == ends[next]) {
      CHECK(reader.frames().size() == next + 1);
      frame_start = ends[next++];
      continue;
    }
    size_t have = i + 1 - frame_start;
    // Until the header is in, the header's missing bytes; then the rest of the frame.
    size_t want = have < kFrameHeaderSize ? kFrameHeaderSize - have : ends[next] - (i + 1);
    CHECK(reader.last_need() == want);
  }
  CHECK(reader.frames() == frames);
}

TEST_CASE("a bad request in the middle of a stream costs only itself") {
  Bytes stream = Encode({.tag = 1, .message = CloseFile{.file_id = 1}});
  Bytes bad = WithBody(MessageType::kRead, ReadBody(0, 0, 0));
  Bytes good = Encode({.tag = 2, .message = ReleaseBuffer{.buffer_id = 3}});
  stream.insert(stream.end(), bad.begin(), bad.end());
  stream.insert(stream.end(), good.begin(), good.end());

  std::span<const uint8_t> rest(stream);
  std::vector<uint64_t> good_tags;
  std::vector<uint64_t> bad_tags;
  while (!rest.empty()) {
    auto step = DecodeNext(rest);
    REQUIRE(step.ok());
    REQUIRE(step->frame_size > 0);
    (step->body_status.ok() ? good_tags : bad_tags).push_back(step->header.tag);
    rest = rest.subspan(step->frame_size);
  }
  CHECK(good_tags == std::vector<uint64_t>{1, 2});
  CHECK(bad_tags == std::vector<uint64_t>{77});
}

}  // namespace
}  // namespace reelfs::api::protocol

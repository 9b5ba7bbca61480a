// Where a request goes: endpoint parsing and URL building for path-style and virtual-host-style
// addressing, with S3's key encoding (every byte outside A-Z a-z 0-9 - . _ ~ is %XX, '/' kept).
//
//   path style     http://host:port/bucket/a%20key?list-type=2      Host: host:port
//   virtual host   http://bucket.host:port/a%20key?list-type=2      Host: bucket.host:port
//
// The encoded path and query built here are exactly what is sent and what is signed.
// Thread-safety: pure functions.
#pragma once

#include <string>
#include <string_view>

#include "common/result.h"
#include "s3/protocol/uri.h"

namespace reelfs::s3 {

enum class Addressing { kPath, kVirtualHost };

struct Endpoint {
  std::string scheme;     // "http" | "https"
  std::string host;       // "127.0.0.1", "s3.eu-west-1.amazonaws.com", "[::1]"
  int port = 0;           // 0: the scheme's default
  std::string base_path;  // "" or "/prefix" (no trailing slash), for gateways behind a path
};

// Accepts "http(s)://host[:port][/path]". Anything else is kInvalidArgument.
Result<Endpoint> ParseEndpoint(std::string_view url);
// The endpoint AWS itself uses for a region.
std::string AwsEndpointForRegion(std::string_view region);

struct RequestTarget {
  std::string url;           // full URL handed to libcurl
  std::string host_header;   // "host[:port]" (port only when not the scheme default)
  std::string encoded_path;  // "/bucket/a%20key", as sent and signed
  std::string raw_query;     // canonical (sorted, encoded) query without '?', as sent and signed
};

// `bucket` empty: service-level request (ListBuckets). `key` empty: bucket-level request.
RequestTarget BuildRequestTarget(const Endpoint& endpoint, Addressing addressing,
                                 std::string_view bucket, std::string_view key,
                                 const QueryParams& query);

}  // namespace reelfs::s3

#include "s3/client/request_target.h"

#include <charconv>

#include "common/strings.h"
#include "fmt/format.h"

namespace reelfs::s3 {

Result<Endpoint> ParseEndpoint(std::string_view url) {
  Endpoint ep;
  const auto sep = url.find("://");
  if (sep == std::string_view::npos) {
    return Status::InvalidArgument(
        fmt::format("endpoint '{}' lacks a scheme (http:// or https://)", url));
  }
  ep.scheme = Lower(url.substr(0, sep));
  if (ep.scheme != "http" && ep.scheme != "https") {
    return Status::InvalidArgument(fmt::format("endpoint '{}': scheme must be http or https", url));
  }
  std::string_view rest = url.substr(sep + 3);
  const auto slash = rest.find('/');
  std::string_view authority = rest.substr(0, slash);
  if (slash != std::string_view::npos) {
    std::string_view path = rest.substr(slash);
    while (!path.empty() && path.back() == '/') path.remove_suffix(1);
    ep.base_path = std::string(path);
  }
  if (authority.find('@') != std::string_view::npos) {
    return Status::InvalidArgument("endpoint must not carry user:password@");
  }
  std::string_view port_text;
  if (!authority.empty() && authority.front() == '[') {  // IPv6 literal
    const auto close = authority.find(']');
    if (close == std::string_view::npos) return Status::InvalidArgument("endpoint: bad IPv6 host");
    ep.host = std::string(authority.substr(0, close + 1));
    if (close + 1 < authority.size()) {
      if (authority[close + 1] != ':') return Status::InvalidArgument("endpoint: bad port");
      port_text = authority.substr(close + 2);
    }
  } else {
    const auto colon = authority.rfind(':');
    ep.host = std::string(authority.substr(0, colon));
    if (colon != std::string_view::npos) port_text = authority.substr(colon + 1);
  }
  if (ep.host.empty()) return Status::InvalidArgument(fmt::format("endpoint '{}': no host", url));
  if (!port_text.empty()) {
    int port = 0;
    auto [end, ec] = std::from_chars(port_text.data(), port_text.data() + port_text.size(), port);
    if (ec != std::errc() || end != port_text.data() + port_text.size() || port <= 0 ||
        port > 65535) {
      return Status::InvalidArgument(fmt::format("endpoint '{}': bad port", url));
    }
    ep.port = port;
  }
  return ep;
}

std::string AwsEndpointForRegion(std::string_view region) {
  return fmt::format("https://s3.{}.amazonaws.com", region);
}

RequestTarget BuildRequestTarget(const Endpoint& endpoint, Addressing addressing,
                                 std::string_view bucket, std::string_view key,
                                 const QueryParams& query) {
  RequestTarget t;
  const bool default_port = endpoint.port == 0 ||
                            (endpoint.scheme == "http" && endpoint.port == 80) ||
                            (endpoint.scheme == "https" && endpoint.port == 443);
  std::string host = endpoint.host;
  if (addressing == Addressing::kVirtualHost && !bucket.empty()) {
    host = fmt::format("{}.{}", bucket, endpoint.host);
  }
  t.host_header = default_port ? host : fmt::format("{}:{}", host, endpoint.port);

  t.encoded_path = endpoint.base_path;
  if (addressing == Addressing::kPath && !bucket.empty()) {
    t.encoded_path += "/" + UriEncode(bucket, /*keep_slash=*/false);
  }
  if (!key.empty()) {
    t.encoded_path += "/" + UriEncode(key, /*keep_slash=*/true);
  } else if (addressing == Addressing::kPath && !bucket.empty()) {
    // Bucket-level requests: "/bucket" is what the AWS SDKs send in path style.
  } else {
    t.encoded_path += "/";
  }
  if (t.encoded_path.empty()) t.encoded_path = "/";
  t.raw_query = CanonicalQueryString(query);
  t.url = fmt::format("{}://{}{}", endpoint.scheme, t.host_header, t.encoded_path);
  if (!t.raw_query.empty()) t.url += "?" + t.raw_query;
  return t;
}

}  // namespace reelfs::s3

// Helpers shared by the pugixml codecs (error_codec.cc, list_codec.cc, request_codecs.cc). Only
// those .cc files include this: pugixml is a private dependency of reelfs_s3.
//
// Why these exist instead of calling pugixml directly:
//  - S3 documents come with xmlns="http://s3.amazonaws.com/doc/2006-03-01/", without it, or (rare)
//    with a prefix ("s3:Key"). pugixml does not process namespaces, so elements are matched by
//    local name, ignoring any prefix.
//  - Numbers arrive as text and may be hostile ("abc", "-1", 2^64): they are parsed with
//    std::from_chars, never with std::stoull (which throws).
//  - Keys must round-trip byte for byte: whitespace-only text and carriage returns are kept
//    (parse_ws_pcdata_single, no parse_eol), and encoding is unindented (format_raw).
//
// Thread-safety: pure functions.
#pragma once

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <limits>
#include <sstream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <pugixml.hpp>

#include "common/result.h"
#include "common/strings.h"
#include "s3/protocol/time_format.h"
#include "s3/protocol/uri.h"
#include "s3/types.h"

namespace reelfs::s3::xml_internal {

// parse_default without parse_eol (keeps "\r" in keys), plus whitespace-only text when it is
// the only content of an element (a key of " " is a valid key).
inline constexpr unsigned kParseOptions = pugi::parse_cdata | pugi::parse_escapes |
                                          pugi::parse_wconv_attribute |
                                          pugi::parse_ws_pcdata_single;

inline std::string_view LocalName(const pugi::xml_node& node) {
  std::string_view name = node.name();
  size_t colon = name.find(':');
  return colon == std::string_view::npos ? name : name.substr(colon + 1);
}

// Parses `xml` into `doc` and returns its root element, which must be named `root_name`
// (ignoring any namespace prefix). `what` names the document in error messages.
inline Result<pugi::xml_node> ParseDocument(std::string_view xml, std::string_view root_name,
                                            pugi::xml_document& doc) {
  if (xml.find_first_not_of(" \t\r\n") == std::string_view::npos) {
    return Status::InvalidArgument("malformed XML: empty body, expected <" +
                                   std::string(root_name) + ">");
  }
  pugi::xml_parse_result parsed =
      doc.load_buffer(xml.data(), xml.size(), kParseOptions, pugi::encoding_utf8);
  if (!parsed) {
    return Status::InvalidArgument("malformed XML (expected <" + std::string(root_name) +
                                   ">): " + parsed.description() + " at offset " +
                                   std::to_string(parsed.offset));
  }
  pugi::xml_node root = doc.document_element();
  // pugixml accepts fragments; XML (and S3) allow exactly one root element.
  int roots = 0;
  for (pugi::xml_node child = doc.first_child(); child; child = child.next_sibling()) {
    if (child.type() == pugi::node_element) ++roots;
  }
  if (roots > 1) {
    return Status::InvalidArgument("malformed XML: more than one root element, expected <" +
                                   std::string(root_name) + ">");
  }
  if (!root || LocalName(root) != root_name) {
    return Status::InvalidArgument("malformed XML: root element is <" +
                                   std::string(root ? root.name() : "") + ">, expected <" +
                                   std::string(root_name) + ">");
  }
  return root;
}

// First element child whose local name is `name`; a null node when there is none.
inline pugi::xml_node Child(const pugi::xml_node& parent, std::string_view name) {
  for (pugi::xml_node child = parent.first_child(); child; child = child.next_sibling()) {
    if (child.type() == pugi::node_element && LocalName(child) == name) return child;
  }
  return {};
}

// Calls `fn(child)` for every element child named `name`, in document order.
template <class Fn>
void ForEachChild(const pugi::xml_node& parent, std::string_view name, Fn&& fn) {
  for (pugi::xml_node child = parent.first_child(); child; child = child.next_sibling()) {
    if (child.type() == pugi::node_element && LocalName(child) == name) fn(child);
  }
}

// The element's text: all its text and CDATA children concatenated (a server may split a value
// into several CDATA sections).
inline std::string Text(const pugi::xml_node& node) {
  std::string out;
  for (pugi::xml_node child = node.first_child(); child; child = child.next_sibling()) {
    if (child.type() == pugi::node_pcdata || child.type() == pugi::node_cdata) {
      out += child.value();
    }
  }
  return out;
}

inline std::string ChildText(const pugi::xml_node& parent, std::string_view name) {
  return Text(Child(parent, name));
}

// Strict decimal: optional surrounding whitespace, digits only (no sign), no overflow.
inline Result<uint64_t> ParseUint64(std::string_view text, std::string_view field) {
  std::string_view t = Trim(text, kWhitespace);
  uint64_t value = 0;
  auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), value);
  if (t.empty() || ec != std::errc() || end != t.data() + t.size()) {
    // Cap the echoed text: a hostile body may put megabytes in a number.
    return Status::InvalidArgument("malformed XML: <" + std::string(field) +
                                   "> is not an unsigned integer: '" +
                                   std::string(t.substr(0, 64)) + "'");
  }
  return value;
}

inline Result<int64_t> ParseIntInRange(std::string_view text, std::string_view field, int64_t min,
                                       int64_t max) {
  std::string_view t = Trim(text, kWhitespace);
  int64_t value = 0;
  auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), value);
  if (t.empty() || ec != std::errc() || end != t.data() + t.size() || value < min || value > max) {
    return Status::InvalidArgument("malformed XML: <" + std::string(field) +
                                   "> must be an integer in [" + std::to_string(min) + ", " +
                                   std::to_string(max) + "], got '" + std::string(t.substr(0, 64)) +
                                   "'");
  }
  return value;
}

// "true"/"false" in any case (S3 writes lowercase; some servers capitalise).
inline Result<bool> ParseBool(std::string_view text, std::string_view field) {
  const std::string t = Lower(Trim(text, kWhitespace));
  if (t == "true") return true;
  if (t == "false") return false;
  return Status::InvalidArgument("malformed XML: <" + std::string(field) +
                                 "> is not true/false: '" + t.substr(0, 64) + "'");
}

// EncodingType=url values. AWS form-encodes them (a space arrives as '+', a literal '+' as
// "%2B"; botocore decodes with unquote_plus), so '+' becomes a space before percent-decoding.
// Our encoder (UriEncode) never emits a bare '+', so it round-trips too.
inline Result<std::string> DecodeListValue(std::string value, bool url_encoded,
                                           std::string_view field) {
  if (!url_encoded) return value;
  std::replace(value.begin(), value.end(), '+', ' ');
  Result<std::string> decoded = UriDecode(value);
  if (!decoded.ok()) {
    return Status::InvalidArgument(
        "malformed XML: <" + std::string(field) +
        "> is not valid url encoding: " + std::string(decoded.status().message()));
  }
  return decoded;
}

// Every <CommonPrefixes><Prefix> of a listing (ListObjects, ListMultipartUploads), decoded, in
// document order. AWS puts one <Prefix> in each <CommonPrefixes>; some servers put several in one.
inline Status DecodeCommonPrefixes(const pugi::xml_node& root, bool url_encoded,
                                   std::vector<std::string>* out) {
  Status status;
  ForEachChild(root, "CommonPrefixes", [&](const pugi::xml_node& group) {
    ForEachChild(group, "Prefix", [&](const pugi::xml_node& node) {
      if (!status.ok()) return;
      Result<std::string> prefix = DecodeListValue(Text(node), url_encoded, "Prefix");
      if (!prefix.ok()) {
        status = std::move(prefix).status();
        return;
      }
      out->push_back(std::move(prefix).value());
    });
  });
  return status;
}

inline Result<WallTime> ParseTimeElement(const pugi::xml_node& node, std::string_view field) {
  std::string text(Trim(Text(node), kWhitespace));
  Result<WallTime> t = ParseIso8601(text);
  if (!t.ok()) {
    return Status::InvalidArgument("malformed XML: <" + std::string(field) +
                                   "> is not an ISO 8601 time: '" + text.substr(0, 64) + "'");
  }
  return t;
}

// ETags travel quoted ("\"abc\"", or &quot;abc&quot; which pugixml already decoded); some
// servers double-escape, leaving a literal "&quot;". Both are stripped.
inline std::string StripEtagQuotes(std::string_view etag) {
  etag = Trim(etag, kWhitespace);
  constexpr std::string_view kEntity = "&quot;";
  if (etag.size() >= 2 * kEntity.size() && etag.starts_with(kEntity) && etag.ends_with(kEntity)) {
    etag = etag.substr(kEntity.size(), etag.size() - 2 * kEntity.size());
  } else {
    etag = Unquote(etag);
  }
  return std::string(etag);
}

inline std::string QuoteEtag(std::string_view etag) {
  if (etag.size() >= 2 && etag.front() == '"' && etag.back() == '"') return std::string(etag);
  return "\"" + std::string(etag) + "\"";
}

// Appends <name>text</name>. pugixml escapes &, <, > and writes control characters as numeric
// references (&#1;), as AWS does; NUL cannot be represented in XML and ends the text.
inline pugi::xml_node AppendText(pugi::xml_node parent, const char* name, std::string_view text) {
  pugi::xml_node node = parent.append_child(name);
  if (!text.empty()) {
    node.append_child(pugi::node_pcdata).set_value(text.data(), text.size());
  }
  return node;
}

// A new document with the XML declaration and a root element; S3's namespace when `with_ns`.
inline pugi::xml_node NewDocument(pugi::xml_document& doc, const char* root_name, bool with_ns) {
  pugi::xml_node decl = doc.append_child(pugi::node_declaration);
  decl.append_attribute("version") = "1.0";
  decl.append_attribute("encoding") = "UTF-8";
  pugi::xml_node root = doc.append_child(root_name);
  if (with_ns) root.append_attribute("xmlns") = "http://s3.amazonaws.com/doc/2006-03-01/";
  return root;
}

inline std::string Serialize(const pugi::xml_document& doc) {
  std::ostringstream out;
  doc.save(out, "", pugi::format_raw, pugi::encoding_utf8);
  return out.str();
}

}  // namespace reelfs::s3::xml_internal

// UTC timestamps as text, in the forms S3, HTTP, SigV4 and our own files use. The parsers for the
// S3 forms are in s3/protocol/time_format.h.
//
// Names and digits do not depend on the process locale: fmt's chrono formatting uses the classic
// locale unless a format asks for 'L', so an HTTP date stays English under LC_TIME=de_DE (which
// strftime's %a and %b would follow).
//
// Thread-safety: pure functions.
#pragma once

#include <chrono>
#include <string>

namespace reelfs {

// "2009-10-12T17:50:30.000Z": ISO 8601 with milliseconds, as S3 writes times in XML.
std::string FormatIso8601(std::chrono::system_clock::time_point t);
// "2009-10-12T17:50:30Z": ISO 8601 to the second.
std::string FormatIso8601Seconds(std::chrono::system_clock::time_point t);
// "20091012T175030Z": ISO 8601 basic format (SigV4's X-Amz-Date; tags in file names).
std::string FormatIso8601Basic(std::chrono::system_clock::time_point t);
// "2009-10-12 17:50:30": what `aws s3 ls` prints.
std::string FormatDateTime(std::chrono::system_clock::time_point t);
// "Mon, 12 Oct 2009 17:50:30 GMT": IMF-fixdate (RFC 9110 §5.6.7), for Date, Last-Modified and
// x-amz-restore's expiry-date.
std::string FormatHttpDate(std::chrono::system_clock::time_point t);

}  // namespace reelfs

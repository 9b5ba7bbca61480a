#include "s3/client/credential_process.h"

#include <stdio.h>

#include <cerrno>
#include <ctime>
#include <memory>

#include <fmt/format.h>
#include <sys/wait.h>

#include "common/json.h"

namespace reelfs::s3 {
namespace {

Status Bad(std::string_view command, std::string_view what) {
  return Status::InvalidArgument(fmt::format("credential_process '{}': {}", command, what));
}

// "2026-12-05T12:00:00Z" (or with +00:00 / fractional seconds): UTC seconds.
std::optional<std::chrono::system_clock::time_point> ParseRfc3339(std::string_view text) {
  std::tm tm{};
  const std::string s(text);
  const char* end = ::strptime(s.c_str(), "%Y-%m-%dT%H:%M:%S", &tm);
  if (end == nullptr) return std::nullopt;
  if (*end == '.') {
    ++end;
    while (*end >= '0' && *end <= '9') ++end;
  }
  long offset = 0;
  if (*end == 'Z' || *end == 'z') {
    ++end;
  } else if (*end == '+' || *end == '-') {
    int hh = 0, mm = 0;
    if (std::sscanf(end + 1, "%2d:%2d", &hh, &mm) != 2) return std::nullopt;
    offset = (*end == '+' ? 1 : -1) * (hh * 3600L + mm * 60L);
    end += 6;
  } else {
    return std::nullopt;
  }
  if (*end != '\0') return std::nullopt;
  const time_t t = ::timegm(&tm);
  if (t == static_cast<time_t>(-1)) return std::nullopt;
  return std::chrono::system_clock::from_time_t(t - offset);
}

struct PipeCloser {
  void operator()(FILE* f) const {
    if (f != nullptr) ::pclose(f);
  }
};

}  // namespace

Result<ProcessCredentials> ParseCredentialProcessOutput(std::string_view json,
                                                        std::string_view command) {
  Json doc = Json::parse(json, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded() || !doc.is_object())
    return Bad(command, "its output is not a JSON object");
  if (!doc.contains("Version") || !doc["Version"].is_number_integer() ||
      doc["Version"].get<int>() != 1) {
    return Bad(command, "\"Version\" must be 1");
  }
  auto text = [&](const char* key) -> std::optional<std::string> {
    if (!doc.contains(key) || !doc[key].is_string()) return std::nullopt;
    return doc[key].get<std::string>();
  };
  ProcessCredentials out;
  auto key = text("AccessKeyId");
  auto secret = text("SecretAccessKey");
  if (!key || key->empty()) return Bad(command, "no \"AccessKeyId\"");
  if (!secret || secret->empty()) return Bad(command, "no \"SecretAccessKey\"");
  out.credentials.access_key_id = *key;
  out.credentials.secret_access_key = *secret;
  out.credentials.session_token = text("SessionToken").value_or("");
  if (auto exp = text("Expiration")) {
    out.expiration = ParseRfc3339(*exp);
    if (!out.expiration)
      return Bad(command, fmt::format("\"Expiration\" '{}' is not RFC 3339", *exp));
  }
  return out;
}

Result<ProcessCredentials> RunCredentialProcess(const std::string& command) {
  std::unique_ptr<FILE, PipeCloser> pipe(::popen(command.c_str(), "re"));
  if (!pipe) return ErrnoToStatus(errno, fmt::format("credential_process '{}'", command));
  std::string output;
  char buf[4096];
  size_t n = 0;
  while ((n = std::fread(buf, 1, sizeof buf, pipe.get())) > 0) {
    output.append(buf, n);
    if (output.size() > (1u << 20)) return Bad(command, "more than 1 MiB of output");
  }
  const int status = ::pclose(pipe.release());
  if (status == -1) return ErrnoToStatus(errno, fmt::format("credential_process '{}'", command));
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    return Status(StatusCode::kUnauthenticated,
                  fmt::format("credential_process '{}' {} {}", command,
                              WIFEXITED(status) ? "exited with status" : "was killed by signal",
                              WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status)));
  }
  return ParseCredentialProcessOutput(output, command);
}

}  // namespace reelfs::s3

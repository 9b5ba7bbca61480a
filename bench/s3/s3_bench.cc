// reelfs-s3-bench: drives the reelfs S3 client for the GET throughput benchmark
// (bench/s3/get_throughput.sh), and prepares its inputs.
//
//   reelfs-s3-bench put     --endpoint URL --bucket B --key K --file PATH   (multipart upload)
//   reelfs-s3-bench presign --endpoint URL --bucket B --key K               (URL for curl)
//   reelfs-s3-bench get     --endpoint URL --bucket B --key K --concurrency N --part 8MiB
//
// `get` reads the whole object as ranged GETs of `--part` bytes with at most `--concurrency` in
// flight, each into its own reusable buffer (what the FUSE prefetcher does), and prints one JSON
// line: {"tool":"reelfs","concurrency":N,"part":P,"bytes":B,"seconds":S,"mib_per_s":R}.
// Credentials come from the AWS environment (AWS_ACCESS_KEY_ID, ...), like the AWS CLI.
#include <chrono>
#include <cmath>
#include <fstream>
#include <iostream>
#include <vector>

#include <CLI/CLI.hpp>

#include "cli/ranged_reader.h"
#include "common/json.h"
#include "common/units.h"
#include "s3/await.h"
#include "s3/client/request_target.h"
#include "s3/client/s3_client.h"
#include "s3/protocol/sigv4.h"

namespace reelfs::s3 {
namespace {

struct Args {
  std::string endpoint;
  std::string bucket;
  std::string key;
  std::string file;
  std::string part = "8MiB";
  int concurrency = 1;
  int expires = 3600;
  bool no_direct_get = false;
};

Result<std::unique_ptr<S3Client>> MakeClient(const Args& args) {
  REELFS_ASSIGN_OR_RETURN(ClientOptions options, ClientOptionsFromAwsEnvironment());
  options.endpoint = args.endpoint;
  options.max_connections = std::max(8, args.concurrency);
  // Bodies are hashed for the signature by default; the benchmark measures GETs, not uploads.
  options.unsigned_payload_min_bytes = 1;
  if (args.no_direct_get) options.direct_get_min_bytes = 0;
  return S3Client::Create(std::move(options));
}

Status Put(const Args& args) {
  REELFS_ASSIGN_OR_RETURN(auto client, MakeClient(args));
  REELFS_ASSIGN_OR_RETURN(uint64_t part_size, ParseByteSize(args.part));
  std::ifstream in(args.file, std::ios::binary);
  if (!in) return Status::NotFound("cannot open " + args.file);
  Status created = AwaitStatus([&](StatusCallback cb) { client->CreateBucket(args.bucket, cb); });
  if (!created.ok() && created.code() != StatusCode::kAlreadyExists) return created;
  REELFS_ASSIGN_OR_RETURN(std::string upload_id, Await<std::string>([&](auto cb) {
                            client->CreateMultipartUpload({.bucket = args.bucket, .key = args.key},
                                                          cb);
                          }));
  std::vector<std::byte> buf(part_size);
  std::vector<CompletedPart> parts;
  for (int n = 1;; ++n) {
    in.read(reinterpret_cast<char*>(buf.data()), static_cast<std::streamsize>(buf.size()));
    auto got = static_cast<size_t>(in.gcount());
    if (got == 0 && n > 1) break;
    UploadPartRequest req{.bucket = args.bucket,
                          .key = args.key,
                          .upload_id = upload_id,
                          .part_number = n,
                          .body = std::span<const std::byte>(buf.data(), got)};
    REELFS_ASSIGN_OR_RETURN(std::string etag,
                            Await<std::string>([&](auto cb) { client->UploadPart(req, cb); }));
    parts.push_back({n, etag});
    if (got < buf.size()) break;
  }
  CompleteMultipartUploadRequest done{
      .bucket = args.bucket, .key = args.key, .upload_id = upload_id, .parts = parts};
  return Await<std::string>([&](auto cb) { client->CompleteMultipartUpload(done, cb); }).status();
}

Status Presign(const Args& args) {
  REELFS_ASSIGN_OR_RETURN(ClientOptions options, ClientOptionsFromAwsEnvironment());
  REELFS_ASSIGN_OR_RETURN(Endpoint endpoint, ParseEndpoint(args.endpoint));
  RequestTarget target = BuildRequestTarget(endpoint, Addressing::kPath, args.bucket, args.key, {});
  SignableRequest req{.method = "GET",
                      .encoded_path = target.encoded_path,
                      .raw_query = "",
                      .headers = {{"host", target.host_header}},
                      .payload_hash = std::string(kUnsignedPayload)};
  SigV4Params params{.region = options.region, .time = std::chrono::system_clock::now()};
  REELFS_ASSIGN_OR_RETURN(std::string query, PresignQuery(req, options.credentials, params,
                                                          std::chrono::seconds(args.expires)));
  std::cout << target.url << "?" << query << "\n";
  return Status::Ok();
}

// Reads the object as ranged GETs, `concurrency` at a time, each slot reusing its buffer: the same
// reader `reelfs cp` uses (cli/ranged_reader.h), with the bytes dropped instead of written.
Status Get(const Args& args) {
  REELFS_ASSIGN_OR_RETURN(auto client, MakeClient(args));
  REELFS_ASSIGN_OR_RETURN(uint64_t part, ParseByteSize(args.part));
  REELFS_ASSIGN_OR_RETURN(ObjectInfo info, Await<ObjectInfo>([&](auto cb) {
                            client->HeadObject({.bucket = args.bucket, .key = args.key}, cb);
                          }));
  const int slots = std::max(1, args.concurrency);
  uint64_t bytes = 0;
  auto start = std::chrono::steady_clock::now();
  REELFS_RETURN_IF_ERROR(cli::ReadRanges(*client, args.bucket, args.key, info,
                                         {.concurrency = slots, .part_size = part},
                                         [&bytes](uint64_t, std::span<const std::byte> data) {
                                           bytes += data.size();
                                           return Status::Ok();
                                         }));
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (bytes != info.size) return Status::DataLoss("read fewer bytes than the object has");
  // Rounded as the line has always been written (4 and 1 decimals); bench scripts read it.
  auto round_to = [](double v, double per_unit) { return std::round(v * per_unit) / per_unit; };
  const double mib_per_s = static_cast<double>(bytes) / kMiB / seconds;
  std::cout << DumpJson(Json{{"tool", "reelfs"},
                             {"concurrency", slots},
                             {"part", part},
                             {"bytes", bytes},
                             {"seconds", round_to(seconds, 1e4)},
                             {"mib_per_s", round_to(mib_per_s, 10)}})
            << std::endl;
  return Status::Ok();
}

}  // namespace
}  // namespace reelfs::s3

int main(int argc, char** argv) {
  using reelfs::s3::Args;
  CLI::App app{"reelfs S3 client benchmark driver"};
  app.require_subcommand(1);
  Args args;
  auto common = [&args](CLI::App* sub) {
    sub->add_option("--endpoint", args.endpoint, "http://HOST:PORT")->required();
    sub->add_option("--bucket", args.bucket)->required();
    sub->add_option("--key", args.key)->required();
  };
  auto* put = app.add_subcommand("put", "multipart-upload a local file");
  common(put);
  put->add_option("--file", args.file)->required();
  put->add_option("--part", args.part, "part size");
  auto* presign = app.add_subcommand("presign", "print a presigned GET URL");
  common(presign);
  presign->add_option("--expires", args.expires, "seconds");
  auto* get = app.add_subcommand("get", "read the object with ranged GETs");
  common(get);
  get->add_option("--concurrency", args.concurrency, "ranged GETs in flight");
  get->add_option("--part", args.part, "bytes per ranged GET");
  get->add_flag("--no-direct-get", args.no_direct_get,
                "every GET through libcurl (default: the direct receiver takes them)");
  CLI11_PARSE(app, argc, argv);

  reelfs::Status status;
  if (*put) status = reelfs::s3::Put(args);
  if (*presign) status = reelfs::s3::Presign(args);
  if (*get) status = reelfs::s3::Get(args);
  if (!status.ok()) {
    std::cerr << "reelfs-s3-bench: " << status.ToString() << "\n";
    return 1;
  }
  return 0;
}

// reelfs-gateway: composition root. Flags -> Options -> Store -> tape::Library -> Archive ->
// S3Service -> Server. `reelfs-gateway archive ...` runs the archive writer on a root that no
// gateway serves (docs/gateway.md "Archive").
//
// Contract used by tests: after binding, exactly one line goes to stdout,
// "reelfs-gateway listening on http://HOST:PORT", and the port is written to --port-file.
#include <cstdio>
#include <fstream>
#include <iostream>

#include <CLI/CLI.hpp>

#include "common/log.h"
#include "common/units.h"
#include "gateway/archive/archive.h"
#include "gateway/config_loader.h"
#include "gateway/credentials.h"
#include "gateway/http/server.h"
#include "gateway/listen_address.h"
#include "gateway/options.h"
#include "gateway/root_lock.h"
#include "gateway/s3api/faults.h"
#include "gateway/s3api/service.h"
#include "gateway/store/store.h"
#include "gateway/tape/library.h"
#ifdef REELFS_GATEWAY_WITH_RDMA
#include "gateway/rdma/rc_server.h"
#endif

namespace reelfs::gateway {
namespace {

int Fail(const Status& st) {
  std::cerr << "reelfs-gateway: " << st.ToString() << "\n";
  return 1;
}

// Writes `text` to `path` through a temporary file and a rename, so a reader never sees half.
Status WriteFileAtomically(const std::string& path, const std::string& text) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out << text;
    out.flush();
    if (!out) return Status::Internal("cannot write " + tmp);
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    return ErrnoToStatus(errno, "rename " + tmp + " to " + path);
  }
  return Status::Ok();
}

// `reelfs-gateway archive`: the archive writer on the root directly (no server).
int RunArchiveCommand(const Options& options, const ArchiveRunOptions& run) {
  auto store = Store::Open(options.root, StoreOptions{options.min_part_size});
  if (!store.ok()) return Fail(store.status());
  auto lock = RootLock::Acquire((*store)->fs().internal_path());
  if (!lock.ok()) return Fail(lock.status());
  tape::LibraryConfig config = options.tape;
  config.mode = tape::SimMode::kDiscrete;  // geometry only: nothing is recalled here
  auto library = tape::Library::Create(config);
  if (!library.ok()) return Fail(library.status());
  auto archive = Archive::Create(**store, **library, options.archive, /*serve=*/false);
  if (!archive.ok()) return Fail(archive.status());
  auto report = (*archive)->Run(run);
  if (!report.ok()) return Fail(report.status());
  std::cout << report->ToJson() << std::endl;
  return report->errors.empty() ? 0 : 1;
}

int Main(int argc, char** argv) {
  CLI::App app{"reelfs-gateway: reference S3 gateway over a directory (not for production)"};
  Options cli;
  std::string config_file;
  std::string idle_timeout;
  CLI::App* archive_cmd = app.add_subcommand(
      "archive", "write objects to tape images (offline: no gateway may serve ROOT meanwhile)");
  ArchiveRunOptions run;
  std::string order = "key";
  archive_cmd->add_option("--root", cli.root, "gateway root")->required();
  archive_cmd->add_option("--config", config_file, "YAML config file (tape: and archive:)");
  archive_cmd->add_option("--bucket", run.bucket, "only this bucket (default: all)");
  archive_cmd->add_option("--prefix", run.prefix, "only keys with this prefix");
  auto* n_opt = archive_cmd
                    ->add_option("--cartridges", run.cartridges,
                                 "spread over N cartridges RL0000L9.. (default 1)")
                    ->check(CLI::Range(1u, 10000u));
  archive_cmd->add_option("--cartridge", run.cartridge, "write to this one cartridge (VSN)")
      ->excludes(n_opt);
  archive_cmd->add_option("--order", order, "key (contiguous key ranges) or striped")
      ->check(CLI::IsMember({"key", "striped"}));
  archive_cmd->add_flag("--release", run.release, "release the disk copies (objects go offline)");
  app.add_option("--root", cli.root, "directory to serve (buckets are its subdirectories)");
  app.add_option("--listen", cli.listen, "HOST:PORT to listen on (port 0: ephemeral)");
  app.add_option("--config", config_file, "YAML config file (flags override it)");
  app.add_option("--access-key", cli.access_key, "access key id accepted");
  app.add_option("--secret-key", cli.secret_key, "secret access key");
  app.add_option("--region", cli.region, "SigV4 region");
  app.add_option("--port-file", cli.port_file, "write the bound port here");
  app.add_option("--timeline-file", cli.timeline_file,
                 "write the tape timeline (SVG) here when the gateway stops");
  app.add_option("--threads", cli.threads, "io threads")->check(CLI::Range(1, 256));
  app.add_flag("--allow-non-loopback", cli.allow_non_loopback,
               "allow listening on a non-loopback address");
  app.add_option("--log-level", cli.log_level, "log spec, e.g. info,gateway.http=debug");
  app.add_option("--virtual-host-domain", cli.virtual_host_domain,
                 "serve Host <bucket>.<domain> as virtual-host addressing");
  app.add_option("--idle-timeout", idle_timeout, "close idle connections after, e.g. 60s");
  std::string rdma_device, rdma_emulate = "none", rdma_fault = "none", rdma_fault_delay = "30s",
                           rdma_session_idle = "10m";
  CLI::Option* rdma_flag =
      app.add_option("--rdma", rdma_device,
                     "serve S3 over RDMA (hipobj-rc-v2) on DEVICE (no value: first active port)")
          ->expected(0, 1);
  app.add_option("--rdma-emulate", rdma_emulate,
                 "answer RDMA GETs like another server: none, vgwrdma, noobaa, aistor, ceph-rgw, "
                 "draft-spec, hipobj-unsupported");
  app.add_option("--rdma-fault", rdma_fault,
                 "inject into RDMA GETs and PUTs: none, qp-error, timeout");
  app.add_option("--rdma-session-idle", rdma_session_idle,
                 "drop RDMA sessions idle for longer than this (0: never)");
  app.add_option("--rdma-fault-delay", rdma_fault_delay, "how long 'timeout' holds an answer");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  if (archive_cmd->parsed()) {
    Options options;
    if (!config_file.empty()) {
      if (Status st = LoadConfigFile(config_file, &options); !st.ok()) return Fail(st);
    }
    options.root = cli.root;
    if (Status st = ConfigureLogging(options.log_level); !st.ok()) return Fail(st);
    run.striped = order == "striped";
    return RunArchiveCommand(options, run);
  }

  Options options;
  if (!config_file.empty()) {
    Status st = LoadConfigFile(config_file, &options);
    if (!st.ok()) return Fail(st);
  }
  // Flags given explicitly override the file.
  auto given = [&](const char* flag) { return app.count(flag) > 0; };
  if (given("--root")) options.root = cli.root;
  if (given("--listen")) options.listen = cli.listen;
  if (given("--access-key")) options.access_key = cli.access_key;
  if (given("--secret-key")) options.secret_key = cli.secret_key;
  if (given("--region")) options.region = cli.region;
  if (given("--port-file")) options.port_file = cli.port_file;
  if (given("--timeline-file")) options.timeline_file = cli.timeline_file;
  if (given("--threads")) options.threads = cli.threads;
  if (given("--allow-non-loopback")) options.allow_non_loopback = true;
  if (given("--log-level")) options.log_level = cli.log_level;
  if (given("--virtual-host-domain")) options.virtual_host_domain = cli.virtual_host_domain;
  if (given("--idle-timeout")) {
    auto d = ParseDuration(idle_timeout);
    if (!d.ok()) return Fail(d.status());
    options.idle_timeout = std::chrono::duration_cast<std::chrono::seconds>(*d);
  }
  if (options.root.empty()) return Fail(Status::InvalidArgument("--root is required"));
  if (Status st = ConfigureLogging(options.log_level); !st.ok()) return Fail(st);

  auto listen = ParseListenAddress(options.listen);
  if (!listen.ok()) return Fail(listen.status());
  if (!IsLoopbackHost(listen->host) && !options.allow_non_loopback) {
    return Fail(Status::PermissionDenied(
        "refusing to listen on non-loopback address " + listen->host +
        ": reelfs-gateway is a reference gateway, not for production; pass "
        "--allow-non-loopback to do it anyway"));
  }

  StoreOptions store_options;
  store_options.min_part_size = options.min_part_size;
  auto store = Store::Open(options.root, store_options);
  if (!store.ok()) return Fail(store.status());
  // Held until exit: `reelfs-gateway archive` on this root is refused meanwhile.
  auto root_lock = RootLock::Acquire((*store)->fs().internal_path());
  if (!root_lock.ok()) return Fail(root_lock.status());

  auto creds = ResolveCredentials(&options, (*store)->fs().internal_path());
  if (!creds.ok()) return Fail(creds.status());
  if (creds->generated) {
    // The secret goes to the 0600 file only, never to a log or the terminal.
    std::cerr << "reelfs-gateway: generated credentials: access key " << options.access_key
              << ", secret in " << creds->file << "\n";
  }

  ServiceOptions service_options;
  service_options.access_key = options.access_key;
  service_options.secret_key = options.secret_key;
  service_options.region = options.region;
  service_options.virtual_host_domain = options.virtual_host_domain;
  service_options.max_put_size = options.max_put_size;
  // The tape library and the archive over it; declaration order is teardown order (the archive
  // joins its threads before the library fails what is left with kShutdown).
  auto library = tape::Library::Create(options.tape);
  if (!library.ok()) return Fail(library.status());
  auto archive = Archive::Create(**store, **library, options.archive, /*serve=*/true);
  if (!archive.ok()) return Fail(archive.status());
  (*archive)->ScheduleFaults(options.faults.library);
  std::unique_ptr<FaultInjector> faults;
  if (!options.faults.http.empty()) faults = std::make_unique<FaultInjector>(options.faults);
  S3Service service(**store, service_options, archive->get(), faults.get());
#ifdef REELFS_GATEWAY_WITH_RDMA
  std::unique_ptr<RcServer> rdma;
  if (rdma_flag->count() > 0) {
    RcServerOptions rdma_options;
    rdma_options.device = rdma_device;
    auto emulate = ParseRdmaEmulation(rdma_emulate);
    if (!emulate.ok()) return Fail(emulate.status());
    auto fault = ParseRdmaFault(rdma_fault);
    if (!fault.ok()) return Fail(fault.status());
    auto delay = ParseDuration(rdma_fault_delay);
    if (!delay.ok()) return Fail(delay.status());
    rdma_options.emulate = *emulate;
    rdma_options.fault = *fault;
    rdma_options.fault_delay = std::chrono::duration_cast<std::chrono::milliseconds>(*delay);
    auto idle = ParseDuration(rdma_session_idle);
    if (!idle.ok()) return Fail(idle.status().WithContext("--rdma-session-idle"));
    rdma_options.session_idle = std::chrono::duration_cast<std::chrono::milliseconds>(*idle);
    auto created = RcServer::Create(rdma_options, **store);
    if (!created.ok()) return Fail(created.status().WithContext("--rdma"));
    rdma = std::move(created).value();
    service.set_rdma(rdma.get());
    REELFS_LOG_INFO("gateway", "S3 over RDMA (hipobj-rc-v2) on {} (emulate {}, fault {})",
                    rdma->Describe(), rdma_emulate, rdma_fault);
  }
#else
  if (rdma_flag->count() > 0) {
    return Fail(Status::Unimplemented("--rdma: reelfs-gateway was built without rdma-core"));
  }
#endif

  http::ServerOptions server_options;
  server_options.host = listen->host;
  server_options.port = listen->port;
  server_options.threads = options.threads;
  server_options.idle_timeout = options.idle_timeout;
  auto server = http::Server::Bind(server_options, service);
  if (!server.ok()) return Fail(server.status());

  const uint16_t port = (*server)->port();
  if (!options.port_file.empty()) {
    Status st = WriteFileAtomically(options.port_file, std::to_string(port) + "\n");
    if (!st.ok()) return Fail(st.WithContext("port file"));
  }
  std::string shown_host =
      listen->host.find(':') != std::string::npos ? "[" + listen->host + "]" : listen->host;
  std::cout << "reelfs-gateway listening on http://" << shown_host << ":" << port << std::endl;
  REELFS_LOG_INFO("gateway", "serving {} on {}:{} with {} threads (access key {})", options.root,
                  shown_host, port, options.threads, options.access_key);
  (*server)->Run();
#ifdef REELFS_GATEWAY_WITH_RDMA
  // The io threads are gone: transfers still running answer into a stopped server, harmlessly.
  rdma.reset();
#endif
  REELFS_LOG_INFO("gateway", "stopped");
  if (!options.timeline_file.empty()) {
    if (Status st = WriteFileAtomically(options.timeline_file, (*library)->TimelineSvg());
        !st.ok()) {
      return Fail(st);
    }
    REELFS_LOG_INFO("gateway", "tape timeline written to {}", options.timeline_file);
  }
  return 0;
}

}  // namespace
}  // namespace reelfs::gateway

int main(int argc, char** argv) {
  try {
    return reelfs::gateway::Main(argc, argv);
  } catch (const std::exception& e) {
    std::cerr << "reelfs-gateway: fatal: " << e.what() << "\n";
    return 1;
  }
}

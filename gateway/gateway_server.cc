#include "gateway/gateway_server.h"

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <string>
#include <utility>

#include <sys/stat.h>

#include "common/log.h"
#include "common/units.h"
#include "gateway/credentials.h"
#ifdef REELFS_GATEWAY_WITH_RDMA
#include "gateway/rdma/rc_server.h"
#endif

namespace reelfs::gateway {
namespace {

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

Result<ListenAddress> CheckListen(const Options& options) {
  REELFS_ASSIGN_OR_RETURN(ListenAddress listen, ParseListenAddress(options.listen));
  if (!IsLoopbackHost(listen.host) && !options.allow_non_loopback) {
    return Status::PermissionDenied(
        "refusing to listen on non-loopback address " + listen.host +
        ": reelfs-gateway is a reference gateway, not for production; pass "
        "--allow-non-loopback to do it anyway");
  }
  return listen;
}

#ifdef REELFS_GATEWAY_WITH_RDMA
Result<RcServerOptions> ParseRdmaFlags(const RdmaFlags& rdma) {
  RcServerOptions options;
  options.device = rdma.device;
  REELFS_ASSIGN_OR_RETURN(options.emulate, ParseRdmaEmulation(rdma.emulate));
  REELFS_ASSIGN_OR_RETURN(options.fault, ParseRdmaFault(rdma.fault));
  REELFS_ASSIGN_OR_RETURN(auto delay, ParseDuration(rdma.fault_delay));
  options.fault_delay = std::chrono::duration_cast<std::chrono::milliseconds>(delay);
  auto idle = ParseDuration(rdma.session_idle);
  if (!idle.ok()) return idle.status().WithContext("--rdma-session-idle");
  options.session_idle = std::chrono::duration_cast<std::chrono::milliseconds>(*idle);
  return options;
}
#endif

// "[::1]" for an IPv6 host, as it is written in a URL.
std::string UrlHost(const std::string& host) {
  return host.find(':') != std::string::npos ? "[" + host + "]" : host;
}

}  // namespace

Result<std::unique_ptr<GatewayServer>> GatewayServer::Build(Options options,
                                                            const RdmaFlags& rdma) {
  std::unique_ptr<GatewayServer> gw(new GatewayServer());
  REELFS_ASSIGN_OR_RETURN(gw->listen_, CheckListen(options));
  gw->options_ = std::move(options);
  REELFS_RETURN_IF_ERROR(gw->OpenStore());
  // Multipart expiry, like every other sweep of the root, is the owner's.
  if (!gw->options_.front_end && gw->options_.multipart_expiry.count() > 0) {
    // Sweeps once here, so uploads that expired while the gateway was down are gone before it
    // serves.
    gw->upload_expiry_ = std::make_unique<UploadExpiry>(
        *gw->store_, gw->options_.multipart_expiry,
        UploadExpiry::DefaultInterval(gw->options_.multipart_expiry));
  }
  REELFS_RETURN_IF_ERROR(gw->OpenArchive());
  ServiceOptions service_options;
  service_options.access_key = gw->options_.access_key;
  service_options.secret_key = gw->options_.secret_key;
  service_options.region = gw->options_.region;
  service_options.virtual_host_domain = gw->options_.virtual_host_domain;
  service_options.max_put_size = gw->options_.max_put_size;
  gw->service_ = std::make_unique<S3Service>(*gw->store_, service_options, gw->archive_.get(),
                                             gw->faults_.get());
  REELFS_RETURN_IF_ERROR(gw->AttachRdma(rdma));
  REELFS_RETURN_IF_ERROR(gw->Bind());
  // Only now: a gateway that could not start (a busy port) leaves no credentials file behind.
  REELFS_RETURN_IF_ERROR(WriteGeneratedCredentials(gw->options_, gw->credentials_));
  if (gw->credentials_.generated) {
    // The secret goes to the 0600 file only, never to a log or the terminal.
    std::cerr << "reelfs-gateway: generated credentials: access key " << gw->options_.access_key
              << ", secret in " << gw->credentials_.file << "\n";
  }
  return gw;
}

// The store, its root lock and the credentials (a generated pair is written beside the root
// once the port is bound).
Status GatewayServer::OpenStore() {
  struct stat st {};
  if (::stat(options_.root.c_str(), &st) != 0) {
    if (errno != ENOENT) return ErrnoToStatus(errno, "--root " + options_.root);
    if (!options_.create_root) {
      // A typo would otherwise serve a new, empty archive under fresh keys.
      return Status::InvalidArgument(
          "--root " + options_.root +
          " does not exist; give --create (config: create: true) to start a new, empty archive "
          "there");
    }
  } else if (!S_ISDIR(st.st_mode)) {
    return Status::InvalidArgument("--root " + options_.root + " is not a directory");
  }
  StoreOptions store_options;
  store_options.min_part_size = options_.min_part_size;
  store_options.front_end = options_.front_end;
  if (options_.front_end && options_.create_root) {
    return Status::InvalidArgument(
        "--front-end serves a root its owning gateway created; --create belongs to the owner");
  }
  REELFS_ASSIGN_OR_RETURN(store_, Store::Open(options_.root, store_options));
  if (options_.front_end) {
    if (!RootLock::HeldByAnother(store_->fs().internal_path())) {
      REELFS_LOG_WARN("gateway",
                      "front end: no owning gateway runs on {} now; restore requests wait in the "
                      "catalog until one starts",
                      options_.root);
    }
  } else {
    REELFS_ASSIGN_OR_RETURN(root_lock_, RootLock::Acquire(store_->fs().internal_path()));
  }
  REELFS_ASSIGN_OR_RETURN(credentials_,
                          ResolveCredentials(&options_, store_->fs().internal_path()));
  return Status::Ok();
}

// The tape library, the archive over it and the HTTP fault injector.
Status GatewayServer::OpenArchive() {
  REELFS_ASSIGN_OR_RETURN(library_, tape::Library::Create(options_.tape));
  const ArchiveRole role = options_.front_end ? ArchiveRole::kFrontEnd : ArchiveRole::kOwner;
  REELFS_ASSIGN_OR_RETURN(
      archive_, Archive::Create(*store_, *library_, options_.archive, /*serve=*/true, role));
  if (role == ArchiveRole::kOwner) {
    archive_->ScheduleFaults(options_.faults.library);
  } else if (!options_.faults.library.empty()) {
    REELFS_LOG_WARN("gateway", "front end: library faults are ignored here (the owner's library)");
  }
  if (!options_.faults.http.empty()) faults_ = std::make_unique<FaultInjector>(options_.faults);
  return Status::Ok();
}

Status GatewayServer::AttachRdma(const RdmaFlags& rdma) {
  if (!rdma.enabled) return Status::Ok();
#ifdef REELFS_GATEWAY_WITH_RDMA
  REELFS_ASSIGN_OR_RETURN(RcServerOptions rdma_options, ParseRdmaFlags(rdma));
  auto created = RcServer::Create(rdma_options, *store_);
  if (!created.ok()) return created.status().WithContext("--rdma");
  REELFS_LOG_INFO("gateway", "S3 over RDMA (hipobj-rc-v2) on {} (emulate {}, fault {})",
                  (*created)->Describe(), rdma.emulate, rdma.fault);
  rdma_ = std::move(created).value();
  service_->set_rdma(rdma_.get());
  return Status::Ok();
#else
  return Status::Unimplemented("--rdma: reelfs-gateway was built without rdma-core");
#endif
}

Status GatewayServer::Bind() {
  http::ServerOptions server_options;
  server_options.host = listen_.host;
  server_options.port = listen_.port;
  server_options.threads = options_.threads;
  server_options.idle_timeout = options_.idle_timeout;
  server_options.max_connection_rate = options_.max_connection_rate;
  server_options.tls_cert = options_.tls_cert;
  server_options.tls_key = options_.tls_key;
  REELFS_ASSIGN_OR_RETURN(server_, http::Server::Bind(server_options, *service_));
  return Status::Ok();
}

Status GatewayServer::Run() {
  const uint16_t port = server_->port();
  if (!options_.port_file.empty()) {
    Status st = WriteFileAtomically(options_.port_file, std::to_string(port) + "\n");
    if (!st.ok()) return st.WithContext("port file");
  }
  const std::string shown_host = UrlHost(listen_.host);
  std::cout << "reelfs-gateway listening on " << (options_.tls_cert.empty() ? "http" : "https")
            << "://" << shown_host << ":" << port << std::endl;
  REELFS_LOG_INFO("gateway", "serving {} on {}:{} with {} threads (access key {}){}", options_.root,
                  shown_host, port, options_.threads, options_.access_key,
                  options_.front_end ? " as a front end" : "");
  server_->Run();
  // The io threads are gone: transfers still running answer into a stopped server, harmlessly.
  rdma_.reset();
  REELFS_LOG_INFO("gateway", "stopped");
  if (!options_.timeline_file.empty() && !options_.front_end) {
    REELFS_RETURN_IF_ERROR(WriteFileAtomically(options_.timeline_file, library_->TimelineSvg()));
    REELFS_LOG_INFO("gateway", "tape timeline written to {}", options_.timeline_file);
  }
  return Status::Ok();
}

}  // namespace reelfs::gateway

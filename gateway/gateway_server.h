// GatewayServer: the objects of a serving reelfs-gateway, owned in one place so their teardown
// order is the compiler's reverse member destruction, on the error paths as after a clean stop.
// Build checks the listen address and makes the store (and its root lock), the credentials, the
// expiry of stale multipart uploads, the tape library, the archive, the HTTP fault injector, the
// S3 service, the optional RDMA server and the bound HTTP server; Run serves until stopped and
// writes what is written at the end.
//
// Thread-safety: Build and Run are called from main's thread; Run blocks while the io threads
// serve.
#pragma once

#include <memory>
#include <optional>

#include "common/listen_address.h"
#include "common/result.h"
#include "gateway/archive/archive.h"
#include "gateway/command_line.h"
#include "gateway/credentials.h"
#include "gateway/http/server.h"
#include "gateway/options.h"
#include "gateway/rdma/hook.h"
#include "gateway/root_lock.h"
#include "gateway/s3api/faults.h"
#include "gateway/s3api/service.h"
#include "gateway/store/store.h"
#include "gateway/store/upload_expiry.h"
#include "gateway/tape/library.h"

namespace reelfs::gateway {

class GatewayServer {
 public:
  // Fails with the first step that fails (the caller prints it and exits 1); `rdma` is checked
  // only when given, and refused (kUnimplemented) where the gateway was built without rdma-core.
  static Result<std::unique_ptr<GatewayServer>> Build(Options options, const RdmaFlags& rdma);
  GatewayServer(const GatewayServer&) = delete;
  GatewayServer& operator=(const GatewayServer&) = delete;
  ~GatewayServer() = default;

  // Writes --port-file, prints "reelfs-gateway listening on http://HOST:PORT" (the one line on
  // stdout tests wait for), serves until stopped, stops the RDMA server and writes
  // --timeline-file.
  Status Run();

 private:
  GatewayServer() = default;
  Status OpenStore();
  Status OpenArchive();
  Status AttachRdma(const RdmaFlags& rdma);
  Status Bind();

  Options options_;               // as resolved, credentials included
  CredentialSource credentials_;  // a generated pair is written once the port is bound
  ListenAddress listen_;
  // Declaration order is construction order, so destruction is the teardown order; do not
  // reorder. The server goes first (io threads joined), then the RDMA server (workers joined;
  // transfers still running answer into the stopped server, harmlessly), the service, the fault
  // injector; the archive joins its threads before the library fails what is left with kShutdown;
  // the root lock is released before the store closes.
  std::unique_ptr<Store> store_;
  std::optional<RootLock> root_lock_;            // held until exit: `archive` is refused meanwhile
  std::unique_ptr<UploadExpiry> upload_expiry_;  // null: --multipart-expiry 0
  std::unique_ptr<tape::Library> library_;
  std::unique_ptr<Archive> archive_;
  std::unique_ptr<FaultInjector> faults_;
  std::unique_ptr<S3Service> service_;
  std::unique_ptr<RdmaHook> rdma_;  // an RcServer, where built with rdma-core
  std::unique_ptr<http::Server> server_;
};

}  // namespace reelfs::gateway

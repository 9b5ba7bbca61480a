// reelfs-gateway: composition root. Flags -> Options (gateway/command_line.h) -> GatewayServer
// (Store, tape::Library, Archive, S3Service, RcServer, Server; gateway/gateway_server.h) -> Run.
// `reelfs-gateway archive ...` runs the archive writer on a root that no gateway serves
// (docs/gateway.md "Archive"); `reelfs-gateway check` compares its catalog with its files.
//
// Contract used by tests: after binding, exactly one line goes to stdout,
// "reelfs-gateway listening on http://HOST:PORT", and the port is written to --port-file.
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <iostream>
#include <optional>
#include <utility>

#include "common/log.h"
#include "gateway/archive/archive.h"
#include "gateway/command_line.h"
#include "gateway/gateway_server.h"
#include "gateway/options.h"
#include "gateway/root_lock.h"
#include "gateway/store/store.h"
#include "gateway/tape/library.h"

namespace reelfs::gateway {
namespace {

int Fail(const Status& st) {
  std::cerr << "reelfs-gateway: " << st.ToString() << "\n";
  return 1;
}

// `reelfs-gateway archive`: the archive writer on the root directly (no server).
int RunArchiveCommand(const Options& options, const ArchiveRunOptions& run) {
  if (::access(options.root.c_str(), F_OK) != 0) {
    return Fail(ErrnoToStatus(errno, "--root " + options.root));  // never creates an archive
  }
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

// `reelfs-gateway check`: the catalog against the files. Opens the root as a front end does (no
// reconciliation, which would repair what it is to report; no lock: gateways may run).
int RunCheckCommand(const std::string& root) {
  if (::access((root + "/.reelfs-gateway/catalog.db").c_str(), F_OK) != 0) {
    return Fail(ErrnoToStatus(errno, root + "/.reelfs-gateway/catalog.db"));
  }
  StoreOptions options;
  options.front_end = true;
  auto store = Store::Open(root, options);
  if (!store.ok()) return Fail(store.status());
  auto report = (*store)->Check();
  if (!report.ok()) return Fail(report.status());
  std::cout << report->ToJson() << std::endl;
  return report->problems.empty() ? 0 : 1;
}

int Main(int argc, char** argv) {
  CommandLine line;
  if (std::optional<int> done = ParseCommandLine(argc, argv, line)) return *done;
  if (line.check) return RunCheckCommand(line.flags.root);
  if (line.archive) {
    auto options = ArchiveCommandOptions(line);
    if (!options.ok()) return Fail(options.status());
    if (Status st = ConfigureLogging(options->log_level); !st.ok()) return Fail(st);
    auto format = ParseLogFormat(options->log_format);
    if (!format.ok()) return Fail(format.status());
    SetLogFormat(*format);
    // `kill -USR2 PID` turns debug logging on and off while the gateway runs.
    if (Status st = InstallDebugToggle(SIGUSR2); !st.ok()) return Fail(st);
    ArchiveRunOptions run = line.run;
    run.striped = line.order == "striped";
    return RunArchiveCommand(*options, run);
  }

  auto options = ServeOptions(line);
  if (!options.ok()) return Fail(options.status());
  if (Status st = ConfigureLogging(options->log_level); !st.ok()) return Fail(st);
  auto format = ParseLogFormat(options->log_format);
  if (!format.ok()) return Fail(format.status());
  SetLogFormat(*format);
  auto gateway = GatewayServer::Build(std::move(options).value(), line.rdma);
  if (!gateway.ok()) return Fail(gateway.status());
  if (Status st = (*gateway)->Run(); !st.ok()) return Fail(st);
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

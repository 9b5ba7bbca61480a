#include "gateway/command_line.h"

#include <chrono>

#include <CLI/CLI.hpp>

#include "common/units.h"
#include "common/version.h"
#include "gateway/config_loader.h"

namespace reelfs::gateway {
namespace {

// The server's flags that override the config file when given.
constexpr const char* kOverridingFlags[] = {"--root",
                                            "--create",
                                            "--listen",
                                            "--access-key",
                                            "--secret-key",
                                            "--region",
                                            "--port-file",
                                            "--timeline-file",
                                            "--threads",
                                            "--allow-non-loopback",
                                            "--log-level",
                                            "--virtual-host-domain",
                                            "--idle-timeout",
                                            "--multipart-expiry",
                                            "--max-connection-rate",
                                            "--log-format",
                                            "--tls-cert",
                                            "--tls-key",
                                            "--front-end"};

void AddArchiveCommand(CLI::App& app, CommandLine& out, CLI::App*& archive_cmd) {
  archive_cmd = app.add_subcommand(
      "archive", "write objects to tape images (offline: no gateway may serve ROOT meanwhile)");
  archive_cmd->add_option("--root", out.flags.root, "gateway root")->required();
  archive_cmd->add_option("--config", out.config_file, "YAML config file (tape: and archive:)");
  archive_cmd->add_option("--bucket", out.run.bucket, "only this bucket (default: all)");
  archive_cmd->add_option("--prefix", out.run.prefix, "only keys with this prefix");
  auto* n_opt = archive_cmd
                    ->add_option("--cartridges", out.run.cartridges,
                                 "spread over N cartridges RL0000L9.. (default 1)")
                    ->check(CLI::Range(1u, 10000u));
  archive_cmd->add_option("--cartridge", out.run.cartridge, "write to this one cartridge (VSN)")
      ->excludes(n_opt);
  archive_cmd->add_option("--order", out.order, "key (contiguous key ranges) or striped")
      ->check(CLI::IsMember({"key", "striped"}));
  archive_cmd->add_flag("--release", out.run.release,
                        "release the disk copies (objects go offline)");
}

void AddCheckCommand(CLI::App& app, CommandLine& out, CLI::App*& check_cmd) {
  check_cmd = app.add_subcommand(
      "check", "compare the catalog with the files (read-only; exit 1 when they disagree)");
  check_cmd->add_option("--root", out.flags.root, "gateway root")->required();
}

void AddServerFlags(CLI::App& app, CommandLine& out) {
  Options& cli = out.flags;
  app.add_option("--root", cli.root,
                 "directory to serve (buckets are its subdirectories); must exist unless --create");
  app.add_flag("--create", cli.create_root, "create --root if it does not exist (a new archive)");
  app.add_flag("--front-end", cli.front_end,
               "serve a root another reelfs-gateway owns (it runs the tape library and recalls)");
  app.add_option("--listen", cli.listen, "HOST:PORT to listen on (port 0: ephemeral)");
  app.add_option("--config", out.config_file, "YAML config file (flags override it)");
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
  app.add_option("--log-format", cli.log_format, "text or json (one JSON object per line)");
  app.add_option("--tls-cert", cli.tls_cert,
                 "serve https: PEM certificate (chain), with --tls-key (default: plain http)");
  app.add_option("--tls-key", cli.tls_key, "PEM private key of --tls-cert");
  app.add_option("--virtual-host-domain", cli.virtual_host_domain,
                 "serve Host <bucket>.<domain> as virtual-host addressing");
  // Durations are parsed after CLI11 (ServeOptions): their defaults are Options' own.
  app.add_option("--idle-timeout", out.idle_timeout, "close idle connections after this")
      ->default_str("60s");
  app.add_option("--multipart-expiry", out.multipart_expiry,
                 "abort multipart uploads initiated longer ago than this (0: never)")
      ->default_str("7d");
  app.add_option("--max-connection-rate", out.max_connection_rate,
                 "bytes per second each connection may send, e.g. 100MiB (0: unlimited); models "
                 "a remote object store's per-connection cap")
      ->default_str("0");
}

CLI::Option* AddRdmaFlags(CLI::App& app, RdmaFlags& rdma) {
  CLI::Option* rdma_flag =
      app.add_option("--rdma", rdma.device,
                     "serve S3 over RDMA (hipobj-rc-v2) on DEVICE (no value: first active port)")
          ->expected(0, 1);
  app.add_option("--rdma-emulate", rdma.emulate,
                 "answer RDMA GETs like another server: none, vgwrdma, noobaa, aistor, ceph-rgw, "
                 "draft-spec, hipobj-unsupported");
  app.add_option("--rdma-fault", rdma.fault,
                 "inject into RDMA GETs and PUTs: none, qp-error, timeout");
  app.add_option("--rdma-session-idle", rdma.session_idle,
                 "drop RDMA sessions idle for longer than this (0: never)");
  app.add_option("--rdma-fault-delay", rdma.fault_delay, "how long 'timeout' holds an answer");
  return rdma_flag;
}

}  // namespace

std::optional<int> ParseCommandLine(int argc, char** argv, CommandLine& out) {
  CLI::App app{"reelfs-gateway: reference S3 gateway over a directory (not for production)"};
  // --help shows each option's default (the value the Options struct starts with).
  app.option_defaults()->always_capture_default();
  app.set_version_flag("--version", "reelfs-gateway " + std::string(VersionString()),
                       "print the version and exit");
  CLI::App* archive_cmd = nullptr;
  AddArchiveCommand(app, out, archive_cmd);
  CLI::App* check_cmd = nullptr;
  AddCheckCommand(app, out, check_cmd);
  AddServerFlags(app, out);
  CLI::Option* rdma_flag = AddRdmaFlags(app, out.rdma);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  out.archive = archive_cmd->parsed();
  out.check = check_cmd->parsed();
  out.rdma.enabled = rdma_flag->count() > 0;
  for (const char* flag : kOverridingFlags) {
    if (app.count(flag) > 0) out.given.insert(flag);
  }
  return std::nullopt;
}

Result<Options> ServeOptions(const CommandLine& line) {
  Options options;
  if (!line.config_file.empty()) {
    REELFS_RETURN_IF_ERROR(LoadConfigFile(line.config_file, &options));
  }
  // Flags given explicitly override the file.
  const Options& cli = line.flags;
  auto given = [&](const char* flag) { return line.given.count(flag) > 0; };
  if (given("--root")) options.root = cli.root;
  if (given("--create")) options.create_root = true;
  if (given("--front-end")) options.front_end = true;
  if (given("--listen")) options.listen = cli.listen;
  if (given("--access-key")) options.access_key = cli.access_key;
  if (given("--secret-key")) options.secret_key = cli.secret_key;
  if (given("--region")) options.region = cli.region;
  if (given("--port-file")) options.port_file = cli.port_file;
  if (given("--timeline-file")) options.timeline_file = cli.timeline_file;
  if (given("--threads")) options.threads = cli.threads;
  if (given("--allow-non-loopback")) options.allow_non_loopback = true;
  if (given("--log-level")) options.log_level = cli.log_level;
  if (given("--log-format")) options.log_format = cli.log_format;
  if (given("--tls-cert")) options.tls_cert = cli.tls_cert;
  if (given("--tls-key")) options.tls_key = cli.tls_key;
  if (given("--virtual-host-domain")) options.virtual_host_domain = cli.virtual_host_domain;
  if (given("--idle-timeout")) {
    REELFS_ASSIGN_OR_RETURN(auto d, ParseDuration(line.idle_timeout));
    options.idle_timeout = std::chrono::duration_cast<std::chrono::seconds>(d);
  }
  if (given("--multipart-expiry")) {
    REELFS_ASSIGN_OR_RETURN(auto d, ParseDuration(line.multipart_expiry));
    if (d.count() < 0) return Status::InvalidArgument("--multipart-expiry must be >= 0");
    options.multipart_expiry = d;
  }
  if (given("--max-connection-rate")) {
    REELFS_ASSIGN_OR_RETURN(options.max_connection_rate, ParseByteSize(line.max_connection_rate));
  }
  if (options.root.empty()) return Status::InvalidArgument("--root is required");
  if (options.tls_cert.empty() != options.tls_key.empty()) {
    return Status::InvalidArgument("--tls-cert and --tls-key go together");
  }
  return options;
}

Result<Options> ArchiveCommandOptions(const CommandLine& line) {
  Options options;
  if (!line.config_file.empty()) {
    REELFS_RETURN_IF_ERROR(LoadConfigFile(line.config_file, &options));
  }
  options.root = line.flags.root;
  return options;
}

}  // namespace reelfs::gateway

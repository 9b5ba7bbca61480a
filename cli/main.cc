// reelfs: the client's command line, the composition root (docs/architecture.md "Composition
// roots"): parse options, build the S3 client from them and the AWS environment, hand it to a
// subcommand.
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <iostream>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "cli/client_config.h"
#include "cli/commands.h"
#include "cli/config_flags.h"
#include "cli/fstab_options.h"
#include "cli/mount_command.h"
#include "cli/rdma_open.h"
#include "cli/s3_clients.h"
#include "cli/tape_commands.h"
#include "common/log.h"
#include "common/units.h"
#include "common/version.h"
#include "s3/client/s3_client.h"

namespace {

struct GlobalArgs {
  std::string endpoint;
  std::string profile;
  std::string region;
  std::string ca_bundle;
  bool no_verify_tls = false;
  std::string log_level = "warn";
  std::string log_format = "text";
  int event_loop_threads = 0;
  bool no_direct_get = false;
  std::string config_file;     // --config: this file only (default: DefaultConfigFiles)
  std::string config_profile;  // --config-profile (REELFS_PROFILE)
};

reelfs::Result<std::unique_ptr<reelfs::s3::S3Client>> MakeClient(const GlobalArgs& g) {
  auto resolved = reelfs::s3::ClientOptionsFromAwsEnvironment(g.profile);
  if (!resolved.ok()) {
    // Say which step failed: an STS or ~/.aws message alone does not say it was about credentials.
    const reelfs::Status& s = resolved.status();
    return reelfs::Status(s.code(), s.reason(), "AWS credentials: " + std::string(s.message()));
  }
  reelfs::s3::ClientOptions options = std::move(resolved).value();
  if (!g.endpoint.empty()) options.endpoint = g.endpoint;
  if (!g.region.empty()) options.region = g.region;
  if (!g.ca_bundle.empty()) options.ca_bundle = g.ca_bundle;
  if (g.no_verify_tls) options.verify_tls = false;
  options.event_loop_threads = g.event_loop_threads;
  if (g.no_direct_get) options.direct_get_min_bytes = 0;
  return reelfs::s3::S3Client::Create(std::move(options));
}

// CLI11 writes a flag that takes an optional value (`--rdma{}`, so that a bare --rdma means "no
// device named") with its braces in --help; the option text ("[=DEVICE]") already says it.
class HelpFormatter : public CLI::Formatter {
 public:
  std::string make_option_name(const CLI::Option* opt, bool is_positional) const override {
    std::string name = CLI::Formatter::make_option_name(opt, is_positional);
    for (size_t at = name.find("{}"); at != std::string::npos; at = name.find("{}")) {
      name.erase(at, 2);
    }
    return name;
  }
};

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"reelfs: read a tape-backed S3 archive as files"};
  // Before the subcommands are added: they take the app's formatter when created.
  app.formatter(std::make_shared<HelpFormatter>());
  app.set_version_flag("--version", "reelfs " + std::string(reelfs::VersionString()),
                       "print the version and exit");
  app.require_subcommand(1);
  // One rule for every command: the global options (--endpoint, --log-level, ...) may come before
  // the subcommand or after its arguments. Subcommands inherit this from the app when they are
  // added, so it is set first.
  app.fallthrough();
  GlobalArgs g;
  // Several endpoints (repeated, or a comma list): front ends of one store (docs/s3-client.md).
  app.add_option("--endpoint", g.endpoint,
                 "S3 endpoint URL; several: repeat it or give a comma list (default: "
                 "AWS_ENDPOINT_URL, config)")
      ->delimiter(',')
      ->multi_option_policy(CLI::MultiOptionPolicy::Join);
  app.add_option("--profile", g.profile, "AWS profile (default: AWS_PROFILE, 'default')");
  app.add_option("--region", g.region, "signing region (default: AWS_REGION, config, us-east-1)");
  app.add_option("--ca-bundle", g.ca_bundle, "PEM file of CAs trusted for https");
  app.add_flag("--no-verify-tls", g.no_verify_tls, "do not verify TLS certificates (test only)");
  app.add_option("--log-level", g.log_level, "e.g. warn, debug, info,s3=trace");
  app.add_option("--log-format", g.log_format, "text or json (one JSON object per line)")
      ->capture_default_str();
  app.add_option("--config", g.config_file,
                 "client config file (default: /etc/reelfs/config.yaml, then "
                 "~/.config/reelfs/config.yaml; docs/configuration.md)")
      ->envname("REELFS_CONFIG");
  app.add_option("--config-profile", g.config_profile,
                 "the profile of the config file to use (default: its default_profile, or "
                 "'default')")
      ->envname("REELFS_PROFILE");
  app.add_option("--event-loop-threads", g.event_loop_threads,
                 "S3 client I/O threads (default 0: min(2, CPUs))")
      ->check(CLI::Range(0, 64));
  app.add_flag("--no-direct-get", g.no_direct_get,
               "receive every GET through libcurl (default: ranged GETs of 1 MiB or more over "
               "http are received straight into their buffers)");

  reelfs::cli::LsArgs ls;
  auto* ls_cmd = app.add_subcommand("ls", "list objects and prefixes under s3://bucket/prefix");
  ls_cmd->add_option("url", ls.url, "s3://bucket[/prefix]")->required();
  ls_cmd->add_flag("-r,--recursive", ls.recursive, "list every key below the prefix");

  reelfs::cli::CpArgs cp;
  std::string part = "8MiB";
  std::string cp_max_memory = "1GiB";
  bool cp_quiet = false;
  bool cp_no_follow = false;
  auto* cp_cmd = app.add_subcommand(
      "cp",
      "copy an object to a local file (or - for stdout), or a local file (- for stdin) or tree "
      "(-r) to s3://");
  cp_cmd->add_option("source", cp.source, "s3://bucket/key, or a local path or - (upload)")
      ->required();
  cp_cmd->add_option("dest", cp.dest, "local path or -, or s3://bucket/key or prefix/ (upload)")
      ->required();
  cp_cmd->add_option("--concurrency", cp.concurrency,
                     "ranged GETs in flight; upload: parts in flight per file (default 8)");
  cp_cmd->add_option("--part-size", part,
                     "bytes per ranged GET; upload: first part size, 5MiB..5GiB (default 8MiB)");
  cp_cmd->add_flag("-r,--recursive", cp.recursive, "upload every regular file below a directory");
  cp_cmd->add_option("--files-in-flight", cp.files_in_flight,
                     "upload: files uploaded at once (default 4)");
  cp_cmd->add_option("--max-memory", cp_max_memory,
                     "upload: part buffers of all files together (default 1GiB)");
  cp_cmd->add_flag("--overwrite", cp.overwrite,
                   "upload: replace existing objects (default: refuse each one, exit 1)");
  cp_cmd->add_flag("--no-follow-symlinks", cp_no_follow,
                   "upload: skip symbolic links (default: follow them, as aws s3 cp)");
  cp_cmd->add_flag("-q,--quiet", cp_quiet, "no progress bar on a terminal");
  // A flag, as the mount's: `--rdma` never takes the next word (the source) as its device.
  std::string cp_rdma_device;
  auto* cp_rdma = cp_cmd
                      ->add_flag("--rdma{}", cp_rdma_device,
                                 "upload: parts read by the gateway over RDMA (as reelfs mount "
                                 "--rdma writes): --rdma or --rdma=DEVICE")
                      ->option_text("[=DEVICE]");

  std::string cat_url;
  auto* cat_cmd = app.add_subcommand("cat", "write an object to stdout");
  cat_cmd->add_option("url", cat_url, "s3://bucket/key")->required();

  std::string stat_url;
  auto* stat_cmd = app.add_subcommand("stat", "show an object's metadata (HEAD)");
  stat_cmd->add_option("url", stat_url, "s3://bucket/key")->required();

  reelfs::cli::MountFlags mount;
  auto* mount_cmd = app.add_subcommand("mount", "mount BUCKET[/PREFIX] at MOUNTPOINT");
  mount_cmd->add_option("source", mount.source, "BUCKET[/PREFIX]")->required();
  mount_cmd->add_option("mountpoint", mount.mountpoint, "an existing directory")->required();
  mount_cmd->add_flag("-f,--foreground", mount.foreground, "stay attached; log to stderr");
  mount_cmd->add_flag("--allow-other", mount.allow_other, "let other users access the mount");
  mount_cmd->add_option("--uid", mount.uid, "owner of every file (default: yours)");
  mount_cmd->add_option("--gid", mount.gid, "group of every file (default: yours)");
  mount_cmd->add_option("--file-mode", mount.file_mode, "octal (default 0644; 0444 read-only)");
  mount_cmd->add_option("--dir-mode", mount.dir_mode, "octal (default 0755; 0555 read-only)");
  mount_cmd->add_flag("--read-only", mount.read_only, "refuse every write with EROFS");
  mount_cmd->add_flag("--allow-delete", mount.allow_delete,
                      "let unlink and rmdir delete objects (off: EPERM)");
  mount_cmd->add_flag("--allow-overwrite", mount.allow_overwrite,
                      "let open(O_TRUNC) replace an object at close (off: EPERM)");
  mount_cmd->add_option("--write-part-size", mount.write_part_size,
                        "first upload part size of a new file (default 8MiB; grows for big files)");
  mount_cmd->add_option("--write-parts-in-flight", mount.write_parts_in_flight,
                        "upload parts sent at once per file being written (default 4, 1..64)");
  mount_cmd->add_option("--abort-stale-uploads", mount.abort_stale_uploads,
                        "at start, abort multipart uploads under the prefix older than this "
                        "(default 24h; 0: off)");
  // Advanced: how rename copies; tests force the multipart copy with small values.
  mount_cmd
      ->add_option("--copy-threshold", mount.copy_threshold,
                   "rename: larger objects are copied in UploadPartCopy parts (default 5GiB)")
      ->group("Advanced");
  mount_cmd
      ->add_option("--copy-part-size", mount.copy_part_size,
                   "rename: part size of such a multipart copy (default 512MiB, 5MiB..5GiB)")
      ->group("Advanced");
  mount_cmd->add_option("--metadata-ttl", mount.metadata_ttl, "entry/attr cache (default 1h)");
  mount_cmd->add_option("--negative-ttl", mount.negative_ttl, "'no such name' cache (default 60s)");
  mount_cmd->add_option("--max-memory", mount.max_memory, "prefetch budget (default 1GiB)");
  mount_cmd->add_option("--part-size", mount.part_size, "bytes per ranged GET (default 8MiB)");
  mount_cmd->add_option("--max-window", mount.max_window,
                        "prefetch window per open file (default 64MiB)");
  mount_cmd->add_option("--lookup-listing-pages", mount.lookup_listing_pages,
                        "list a directory on lookup when it fits in N pages (default 16; 0: off)");
  mount_cmd->add_option("--max-threads", mount.max_threads, "FUSE worker threads (default 16)");
  mount_cmd->add_option("--read-ahead-kb", mount.read_ahead_kb,
                        "kernel readahead when root (default 4096; 0 leaves it)");
  mount_cmd->add_flag("--clone-fd", mount.clone_fd, "one /dev/fuse fd per worker thread");
  mount_cmd->add_option("--log-file", mount.log_file, "log to this file");
  mount_cmd->add_option("--metrics-listen", mount.metrics_listen,
                        "serve Prometheus metrics at http://HOST:PORT/metrics (e.g. "
                        "127.0.0.1:9464; port 0: any free port, logged)");
  mount_cmd->add_flag("--syslog", mount.syslog, "log to syslog (the default in the background)");
  mount_cmd
      ->add_option("--cache", mount.cache,
                   "cache object bytes in DIR (local NVMe or tmpfs; kept across remounts)")
      ->group("Cache");
  mount_cmd
      ->add_option("--cache-size", mount.cache_size,
                   "at most this many bytes in --cache (default: what the disk holds above "
                   "--cache-min-free)")
      ->group("Cache");
  mount_cmd
      ->add_option("--cache-min-free", mount.cache_min_free,
                   "leave this much free on the cache's file system (default 5% of it)")
      ->group("Cache");
  mount_cmd
      ->add_flag("--no-passthrough", mount.no_passthrough,
                 "serve whole cached files through the daemon even where the kernel could read "
                 "them itself (FUSE passthrough)")
      ->group("Cache");
  mount_cmd->add_flag("--splice-reads", mount.splice_reads,
                      "move sequential reads of large objects from the GET's socket to the kernel "
                      "with splice(2), no copy through the daemon, wherever the endpoint allows "
                      "(plain http; default: where nothing is lost by it)");
  // Excluding each other, a profile's one gives way to the other typed (cli/config_flags.h).
  mount_cmd
      ->add_flag("--no-splice-reads", mount.no_splice_reads,
                 "never splice: every read is copied through the daemon's part buffers")
      ->excludes("--splice-reads");
  mount_cmd->add_flag("--direct-io", mount.direct_io,
                      "reads skip the kernel page cache: each read() goes to the daemon at its "
                      "own size, no page-cache copy (for data read once in large blocks; small "
                      "reads each cost a round trip; docs/semantics.md \"Direct I/O reads\")");
  mount_cmd->add_option("--splice-slow-window", mount.splice_slow_window,
                        "a spliced stream slower than its reader over this many bytes goes to the "
                        "parallel ranged GETs (default 8MiB, and 100 ms; 0: never)");
  mount_cmd->add_option("--offline", mount.offline,
                        "read of an offline object: wait (default), eagain or eacces");
  mount_cmd->add_option("--offline-timeout", mount.offline_timeout,
                        "longest a read waits for a restore in --offline=wait (default 30m)");
  mount_cmd->add_option("--offline-state-ttl", mount.offline_state_ttl,
                        "how long a seen offline/staging state is trusted before a read or stat "
                        "asks S3 again (default 5s)");
  mount_cmd->add_option("--restore-tier", mount.restore_tier,
                        "RestoreObject tier: standard (default), bulk or expedited");
  mount_cmd->add_option("--restore-days", mount.restore_days,
                        "days a restored copy stays (default 7; 0 sends none)");
  mount_cmd->add_option("--restore-poll", mount.restore_poll,
                        "first HEAD poll of a staging object (default 1s, doubling)");
  mount_cmd->add_option("--restore-poll-max", mount.restore_poll_max,
                        "longest interval between HEAD polls (default 60s)");
  mount_cmd->add_option("--ledger", mount.ledger,
                        "restore ledger file (default ~/.local/state/reelfs/ledger.sqlite; none)");
  // A flag, not an option: `--rdma` never takes the next word (the source) as its device; a
  // device is given as --rdma=DEV.
  auto* rdma_flag =
      mount_cmd
          ->add_flag("--rdma{}", mount.rdma_device,
                     "file bytes over RDMA (see --rdma-transport): --rdma or --rdma=DEVICE "
                     "(default: first active port)")
          ->option_text("[=DEVICE]");
  mount_cmd->add_option("--rdma-sessions", mount.rdma_sessions,
                        "RC sessions (QPs), or DC targets, per gateway with --rdma (default 4)");
  mount_cmd->add_option("--rdma-transport", mount.rdma_transport,
                        "with --rdma: auto (default: RC, then cuObject DC for an endpoint that "
                        "declines RC), rc (hipobj-rc-v2) or dc (cuObject DC, ConnectX-5+)");

  mount_cmd->add_flag("--cuda-pin", mount.cuda_pin,
                      "pin prefetch buffers for CUDA (cudaHostRegister) where a GPU is usable; "
                      "off by default (docs/gpu.md)");
  mount_cmd->add_flag("--verbose", mount.verbose,
                      "once mounted, print the side channel socket, the GPU probe and the data "
                      "path");
  mount_cmd->add_option("--side-channel", mount.side_channel,
                        "the side channel's Unix socket (docs/protocols/side-channel.md): auto "
                        "(default: /run/reelfs/ for root, else $XDG_RUNTIME_DIR/reelfs/ or "
                        "/tmp/reelfs-UID/), off, or an absolute path");

  auto* config_cmd = app.add_subcommand(
      "config", "show the config profile in effect: its files, and each setting with its line");

  // reelfs stage / status / wait (cli/tape_commands.h).
  reelfs::cli::TapeCommands tape;
  tape.Register(app);

  // Usage errors exit 2 like every other setup error (cli/tape_commands.h), not with CLI11's own
  // codes (106, 109, ...); --help and --version still exit 0.
  // mount(8) and /etc/fstab run "reelfs SOURCE MOUNTPOINT -o OPTS" (cli/fstab_options.h); `-o`
  // lists also work after `reelfs mount`. Both become the mount's own flags.
  std::vector<std::string> args(argv + 1, argv + argc);
  args = reelfs::cli::RewriteMountHelperArgs(std::move(args), [&app](std::string_view name) {
    return !app.get_subcommands([name](CLI::App* sub) { return sub->get_name() == name; }).empty();
  });
  app.name(argc > 0 ? argv[0] : "reelfs");  // as parse(argc, argv) would, for --help
  try {
    app.parse(std::vector<std::string>(args.rbegin(), args.rend()));  // CLI11 takes them last first
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }

  // The config profile (cli/client_config.h) becomes flags the command line did not give, and
  // the whole is parsed again, so a profile sets exactly what a flag can.
  auto profile = reelfs::cli::LoadClientProfile(
      g.config_file.empty() ? reelfs::cli::DefaultConfigFiles()
                            : std::vector<std::string>{g.config_file},
      g.config_profile, /*required_files=*/!g.config_file.empty());
  if (!profile.ok()) {
    std::cerr << "reelfs: config: " << profile.status().message() << "\n";
    return 2;
  }
  if (*profile) {
    auto flags = reelfs::cli::ProfileFlags(**profile, app, *mount_cmd, mount_cmd->parsed());
    if (!flags.ok()) {
      std::cerr << "reelfs: config: " << flags.status().message() << "\n";
      return 2;
    }
    if (*config_cmd) {
      std::cout << reelfs::cli::DescribeProfile(**profile, app, *mount_cmd);
      return 0;
    }
    if (!flags->empty()) {
      args.insert(args.end(), flags->begin(), flags->end());
      app.clear();
      try {
        app.parse(std::vector<std::string>(args.rbegin(), args.rend()));
      } catch (const CLI::ParseError& e) {
        std::cerr << "reelfs: config profile '" << (*profile)->name << "': " << e.what() << "\n";
        return 2;
      }
    }
  }
  if (*config_cmd) {
    std::cout << "no config profile (files: "
              << (g.config_file.empty() ? "/etc/reelfs/config.yaml, ~/.config/reelfs/config.yaml"
                                        : g.config_file)
              << ")\n";
    return 0;
  }

  // The mount's lifecycle lines (mounted, unmounted with counters) are INFO: show them unless
  // the user chose a level.
  if (*mount_cmd && app.get_option("--log-level")->count() == 0) g.log_level = "info";

  if (reelfs::Status s = reelfs::ConfigureLogging(g.log_level); !s.ok()) {
    std::cerr << "reelfs: --log-level: " << s.message() << "\n";
    return 2;
  }
  if (auto format = reelfs::ParseLogFormat(g.log_format); format.ok()) {
    reelfs::SetLogFormat(*format);
  } else {
    std::cerr << "reelfs: --log-format: " << format.status().message() << "\n";
    return 2;
  }
  auto part_size = reelfs::ParseByteSize(part);
  if (!part_size.ok() || *part_size == 0) {
    std::cerr << "reelfs: --part-size: " << part_size.status().message() << "\n";
    return 2;
  }
  cp.part_size = *part_size;
  auto cp_memory = reelfs::ParseByteSize(cp_max_memory);
  if (!cp_memory.ok() || *cp_memory == 0) {
    std::cerr << "reelfs: --max-memory: " << cp_memory.status().message() << "\n";
    return 2;
  }
  cp.max_memory = *cp_memory;
  cp.follow_symlinks = !cp_no_follow;
  // The bar is for a person watching: only on a terminal, never in pipes or logs.
  cp.progress = !cp_quiet && ::isatty(STDERR_FILENO) == 1;
  if (*mount_cmd) {
    mount.rdma = rdma_flag->count() > 0;
    return reelfs::cli::RunMount(mount, [&g]() -> reelfs::Result<reelfs::cli::S3Clients> {
      REELFS_ASSIGN_OR_RETURN(auto client, MakeClient(g));
      return reelfs::cli::S3Clients::Of(std::move(client));
    });
  }
  if (tape.Selected()) {
    return tape.Run(
        [&g](const std::string& endpoint)
            -> reelfs::Result<std::unique_ptr<reelfs::s3::ObjectStore>> {
          GlobalArgs with_endpoint = g;
          if (with_endpoint.endpoint.empty()) with_endpoint.endpoint = endpoint;
          REELFS_ASSIGN_OR_RETURN(auto client, MakeClient(with_endpoint));
          return std::unique_ptr<reelfs::s3::ObjectStore>(std::move(client));
        },
        g.endpoint);
  }
  auto client = MakeClient(g);
  if (!client.ok()) {
    std::cerr << "reelfs: " << client.status().message() << "\n";
    return 2;
  }
  const auto clients = reelfs::cli::S3Clients::Of(std::move(client).value());
  reelfs::s3::ObjectStore& store = *clients.store;
  if (*cp_cmd && cp_rdma->count() > 0) {
    cp.open_rdma = [&clients, device = cp_rdma_device, max_memory = cp.max_memory] {
      return reelfs::cli::OpenRdmaUploads({.enabled = true, .device = device}, clients, max_memory);
    };
  }
  if (*ls_cmd) return reelfs::cli::RunLs(store, ls);
  if (*cp_cmd) return reelfs::cli::RunCp(store, cp);
  if (*cat_cmd) return reelfs::cli::RunCp(store, {.source = cat_url, .dest = "-"});
  if (*stat_cmd) return reelfs::cli::RunStat(store, stat_url);
  return 2;
}

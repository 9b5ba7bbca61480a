// Each handler: build the RequestInfo for logs, call the FileSystem, answer from its callback.
// Nothing here holds a lock while replying (there are no locks here at all; FileSystem drops its
// own before calling back).
#include "fuse/lowlevel/ops.h"

#include <unistd.h>

#include <algorithm>
#include <exception>
#include <memory>
#include <new>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <sys/stat.h>

#include "common/log.h"
#include "fuse/lowlevel/errno_map.h"

namespace reelfs::fuse {
namespace {

constexpr std::string_view kSubject = "fuse";

// Smallest dirent sizes (fuse_kernel.h FUSE_NAME_OFFSET and FUSE_NAME_OFFSET_DIRENTPLUS plus an
// 8-byte name): how many entries could fit in the kernel's buffer at most. Asking the FileSystem
// for no more keeps a 4 KiB READDIR from materialising thousands of entries.
constexpr size_t kMinDirentSize = 24 + 8;
constexpr size_t kMinDirentPlusSize = 152 + 8;

using ReplyPtr = std::shared_ptr<Reply>;

OpsContext& Ctx(fuse_req_t req) { return *static_cast<OpsContext*>(fuse_req_userdata(req)); }

// What every write operation meets (docs/semantics.md "Errors": EROFS).
Status ReadOnlyMount(std::string_view op) {
  return Status(StatusCode::kFailedPrecondition, StatusReason::kReadOnly,
                std::string(op) + ": the mount is read-only");
}

// The try/catch firewall every callback goes through (as in duckdb's C API). `body` receives the
// context and the request's Reply; it answers now or hands the Reply to a callback.
template <class Body>
void Guard(fuse_req_t req, RequestInfo info, Reply::Kind kind, Body&& body) noexcept {
  ReplyPtr reply;
  try {
    OpsContext& ctx = Ctx(req);
    info.id = ctx.next_id.fetch_add(1, std::memory_order_relaxed);
    reply = std::make_shared<Reply>(req, info, &ctx.in_flight, kind, &ctx.op_stats);
    // Every request can be interrupted (answered EINTR) while the FileSystem works on it.
    if (kind == Reply::Kind::kAnswer) reply->Track(&ctx.pending);
    REELFS_LOG_TRACE(kSubject, "req={} {} ino={} fh={} off={} size={}", info.id, info.op, info.ino,
                     info.fh, info.offset, info.size);
    body(ctx, reply);
  } catch (const std::bad_alloc&) {
    // passthrough_hp.cc answers bad_alloc with ENOMEM; so do we.
    if (reply == nullptr) {
      kind == Reply::Kind::kNone
          ? fuse_reply_none(req)
          : (void)fuse_reply_err(req, StatusToErrno(Status::ResourceExhausted("oom")));
    } else if (!reply->answered()) {
      kind == Reply::Kind::kNone ? reply->None() : reply->Error(Status::ResourceExhausted("oom"));
    }
  } catch (const std::exception& e) {
    if (reply != nullptr && !reply->answered()) {
      kind == Reply::Kind::kNone
          ? reply->None()
          : reply->Error(Status::Internal(std::string("exception: ") + e.what()));
    }
  } catch (...) {
    if (reply != nullptr && !reply->answered()) {
      kind == Reply::Kind::kNone ? reply->None() : reply->Error(Status::Internal("exception"));
    }
  }
}

template <class Body>
void Guard(fuse_req_t req, RequestInfo info, Body&& body) noexcept {
  Guard(req, info, Reply::Kind::kAnswer, std::forward<Body>(body));
}

// Wraps a FileSystem completion: it may run on the S3 client's thread, where an exception would
// escape into C code (curl's callbacks), so it gets the same firewall as the ops themselves.
template <class T, class Fn>
Callback<T> Completion(ReplyPtr reply, Fn fn) {
  return [reply = std::move(reply), fn = std::move(fn)](Result<T> r) mutable noexcept {
    try {
      fn(*reply, std::move(r));
    } catch (const std::exception& e) {
      if (!reply->answered()) reply->Error(Status::Internal(std::string("exception: ") + e.what()));
    } catch (...) {
      if (!reply->answered()) reply->Error(Status::Internal("exception"));
    }
  };
}

// An OPEN reply served by the kernel from a backing file (backing_files.h); id 0: not.
void SetBackingId(fuse_file_info& fi, int32_t id) {
#ifdef REELFS_FUSE_PASSTHROUGH
  if (id > 0) {
    fi.backing_id = id;
    fi.keep_cache = 0;  // the page cache is the backing file's
  }
#else
  (void)fi;
  (void)id;
#endif
}

// ---- lifecycle ----

void Init(void* userdata, fuse_conn_info* conn) noexcept {
  OpsContext& ctx = *static_cast<OpsContext*>(userdata);
  const ConnTuning& t = ctx.tuning;
  conn->max_read = t.max_read;  // must equal "-o max_read=" (daemon.cc), or libfuse refuses
  conn->max_write = t.max_write;
  conn->max_readahead = t.max_readahead;
  conn->max_background = t.max_background;
  conn->congestion_threshold = t.congestion_threshold;

  auto want = [conn](unsigned cap) {
    if (conn->capable & cap) conn->want |= cap;
  };
  want(FUSE_CAP_ASYNC_READ);  // parallel readahead READs
  // FUSE_CAP_ASYNC_DIO only where no read waits for a restore (ConnTuning::async_dio): with it
  // the kernel sends O_DIRECT reads as background requests and waits for them uninterruptibly,
  // so no signal would reach a read waiting in --offline=wait. Without it O_DIRECT reads larger
  // than max_read go 1 MiB at a time instead of in parallel.
  if (t.async_dio) {
    want(FUSE_CAP_ASYNC_DIO);
  } else {
    conn->want &= ~FUSE_CAP_ASYNC_DIO;
  }
  // open(O_TRUNC) arrives as one OPEN with the flag, not a SETATTR(size 0) first: the
  // replacement of an object starts at open and the old one stays until close.
  want(FUSE_CAP_ATOMIC_O_TRUNC);
  want(FUSE_CAP_PARALLEL_DIROPS);  // concurrent lookup/readdir in one directory
  want(FUSE_CAP_READDIRPLUS);      // `ls -l` of a listing costs no LOOKUPs
  // Only spliced reads reply with fuse_reply_data (a pipe): libfuse splices it into /dev/fuse
  // with this, else copies it through memory. Every other reply is a plain write either way.
  want(FUSE_CAP_SPLICE_WRITE);
  // Always plus, not "auto": the attributes come with the listing for free, and auto makes the
  // kernel fall back to READDIR + LOOKUP storms when it guesses wrong.
  conn->want &= ~FUSE_CAP_READDIRPLUS_AUTO;
  // No NFS export (inode numbers are per mount) and no write-back cache: writes must reach the
  // upload in order, as the application made them (docs/semantics.md "Writes").
  conn->want &= ~(FUSE_CAP_EXPORT_SUPPORT | FUSE_CAP_WRITEBACK_CACHE);
  ctx.backing.Negotiate(conn, t.passthrough, ctx.fs);
  if (t.direct_io) {
    // Files opened FOPEN_DIRECT_IO can be mapped MAP_SHARED only with this (the kernel then
    // fills the mapping through the page cache); without it such an mmap fails with ENODEV.
#ifdef FUSE_CAP_DIRECT_IO_ALLOW_MMAP
    want(FUSE_CAP_DIRECT_IO_ALLOW_MMAP);
    const bool shared_mmap = (conn->want & FUSE_CAP_DIRECT_IO_ALLOW_MMAP) != 0;
    const char* why = "the kernel does not offer FUSE_DIRECT_IO_ALLOW_MMAP: Linux < 6.6";
#else
    const bool shared_mmap = false;
    const char* why = "this build's libfuse has no FUSE_CAP_DIRECT_IO_ALLOW_MMAP: < 3.16";
#endif
    if (shared_mmap) {
      REELFS_LOG_INFO(kSubject, "--direct-io: reads skip the page cache; MAP_SHARED mmap works");
    } else {
      REELFS_LOG_WARN(kSubject,
                      "--direct-io: reads skip the page cache; MAP_SHARED mmap of a file fails "
                      "with ENODEV ({}; MAP_PRIVATE works)",
                      why);
    }
    // A read of max_read bytes into a buffer that is not page-aligned spans one page more than
    // max_read's. The kernel caps a request at max_write's pages (daemon.cc asks for one more
    // where libfuse's buffer allows it: 3.17) and at fs.fuse.max_pages_limit.
    const unsigned page = static_cast<unsigned>(sysconf(_SC_PAGESIZE));
    const unsigned needed = t.max_read / page + 1;
    const unsigned asked = (t.max_write + page - 1) / page;
    const unsigned limit = t.max_pages_limit == 0 ? 256 : t.max_pages_limit;
    if (needed <= std::min(asked, limit)) {
      REELFS_LOG_INFO(kSubject,
                      "--direct-io: a {} KiB read into a buffer that is not page-aligned is one "
                      "READ ({} pages per request)",
                      t.max_read / 1024, std::min(asked, limit));
    } else {
      REELFS_LOG_INFO(
          kSubject,
          "--direct-io: a {} KiB read into a buffer that is not page-aligned is two READs ({})",
          t.max_read / 1024,
          asked < needed
              ? fmt::format("this build's libfuse asks for {} pages a request; 3.17 asks for {}",
                            asked, needed)
              : fmt::format("fs.fuse.max_pages_limit is {}; {} or more makes it one", limit,
                            needed));
    }
  }
  REELFS_LOG_INFO(kSubject,
                  "init: protocol {}.{}, max_read={} max_write={} max_readahead={} "
                  "max_background={} congestion_threshold={} want={:#x} capable={:#x}",
                  conn->proto_major, conn->proto_minor, conn->max_read, conn->max_write,
                  conn->max_readahead, conn->max_background, conn->congestion_threshold, conn->want,
                  conn->capable);
}

void Destroy(void* /*userdata*/) noexcept { REELFS_LOG_DEBUG(kSubject, "destroy"); }

// ---- names and attributes ----

void Lookup(fuse_req_t req, fuse_ino_t parent, const char* name) noexcept {
  Guard(req, {.op = "lookup", .ino = parent}, [&](OpsContext& ctx, ReplyPtr reply) {
    FileSystem& fs = ctx.fs;
    fs.Lookup(parent, name, Completion<Entry>(reply, [&fs](Reply& answer, Result<Entry> r) {
                if (r.ok()) return answer.EntryParam(*r);
                const auto negative_ttl = fs.options().negative_ttl;
                // Only a miss S3 reported (a HEAD's 404): the misses Core answers itself (a fresh
                // listing, its negative cache, a bad name) carry a reason and get plain ENOENT.
                if (r.status().code() == StatusCode::kNotFound &&
                    r.status().reason() == StatusReason::kNone && negative_ttl.count() > 0) {
                  // A negative entry (ino 0) instead of ENOENT, so the kernel caches "no such name"
                  // for the negative TTL and stops asking (fuse_lowlevel.h, lookup).
                  Entry negative;
                  negative.entry_timeout = negative_ttl;
                  REELFS_LOG_DEBUG(kSubject, "req={} lookup ino={}: negative entry",
                                   answer.info().id, answer.info().ino);
                  return answer.EntryParam(negative);
                }
                answer.Error(r.status());
              }));
  });
}

void Forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup) noexcept {
  Guard(req, {.op = "forget", .ino = ino}, Reply::Kind::kNone,
        [&](OpsContext& ctx, ReplyPtr reply) {
          ctx.fs.Forget(ino, nlookup);
          reply->None();
        });
}

void ForgetMulti(fuse_req_t req, size_t count, fuse_forget_data* forgets) noexcept {
  Guard(req, {.op = "forget_multi", .size = count}, Reply::Kind::kNone,
        [&](OpsContext& ctx, ReplyPtr reply) {
          for (size_t i = 0; i < count; ++i) ctx.fs.Forget(forgets[i].ino, forgets[i].nlookup);
          reply->None();
        });
}

void GetAttr(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi) noexcept {
  Guard(req, {.op = "getattr", .ino = ino, .fh = fi ? fi->fh : 0},
        [&](OpsContext& ctx, ReplyPtr reply) {
          ctx.fs.GetAttr(ino,
                         Completion<Attributes>(reply, [](Reply& answer, Result<Attributes> r) {
                           if (!r.ok()) return answer.Error(r.status());
                           // metadata_ttl, or tape.state_ttl for objects that are not readable.
                           answer.Attr(*r, r->cache_ttl);
                         }));
        });
}

void Access(fuse_req_t req, fuse_ino_t ino, int mask) noexcept {
  Guard(req, {.op = "access", .ino = ino}, [&](OpsContext& ctx, ReplyPtr reply) {
    // Mode bits are checked by the kernel (default_permissions); only writing is ours to refuse.
    if ((mask & W_OK) && ctx.fs.options().write.read_only) {
      return reply->Refuse(ReadOnlyMount("access(W_OK)"));
    }
    reply->Ok();
  });
}

// ---- directories ----

void OpenDir(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi) noexcept {
  Guard(req, {.op = "opendir", .ino = ino}, [&](OpsContext& ctx, ReplyPtr reply) {
    fuse_file_info out = *fi;  // `fi` dies with this call; the reply may come later
    ctx.fs.OpenDir(ino,
                   Completion<uint64_t>(reply, [out](Reply& answer, Result<uint64_t> dh) mutable {
                     if (!dh.ok()) return answer.Error(dh.status());
                     out.fh = *dh;
                     answer.Open(out);
                   }));
  });
}

// Packs as many entries as fit into a `size`-byte READDIR(PLUS) buffer, replies, and tells the
// FileSystem exactly which ones the kernel got (READDIRPLUS entries count as lookups).
void ReplyDirEntries(OpsContext& ctx, Reply& reply, size_t size, bool plus,
                     std::vector<DirEntry> entries) {
  // Answered EINTR already (interrupted, or the mount went down, and then `ctx` may be gone):
  // the kernel gets none of these entries, so none counts as a lookup.
  if (reply.answered()) return;
  std::vector<char> buf(size);
  size_t used = 0;
  size_t fitted = 0;
  for (const DirEntry& d : entries) {
    char* p = buf.data() + used;
    const size_t rem = size - used;
    size_t need;
    if (plus) {
      fuse_entry_param e{};
      e.ino = d.entry.attr.ino;
      e.generation = d.entry.generation;
      e.attr = ToStat(d.entry.attr);
      e.attr_timeout = d.entry.attr_timeout.count();
      e.entry_timeout = d.entry.entry_timeout.count();
      need = fuse_add_direntry_plus(reply.req(), p, rem, d.name.c_str(), &e,
                                    static_cast<off_t>(d.offset));
    } else {
      struct stat st {};
      st.st_ino = d.entry.attr.ino;
      st.st_mode = d.entry.attr.mode;
      need =
          fuse_add_direntry(reply.req(), p, rem, d.name.c_str(), &st, static_cast<off_t>(d.offset));
    }
    if (need > rem) break;  // did not fit: nothing was written; the kernel asks again from here
    used += need;
    ++fitted;
  }
  if (plus && fitted > 0) {
    entries.resize(fitted);
    ctx.fs.AcceptDirEntries(entries);  // before the reply, so a racing FORGET finds the count
  }
  reply.Buf(buf.data(), used);
}

void ReadDirCommon(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, fuse_file_info* fi,
                   bool plus) {
  Guard(req,
        {.op = plus ? "readdirplus" : "readdir",
         .ino = ino,
         .fh = fi->fh,
         .offset = static_cast<uint64_t>(off),
         .size = size},
        [&](OpsContext& ctx, ReplyPtr reply) {
          const size_t max_entries = size / (plus ? kMinDirentPlusSize : kMinDirentSize) + 1;
          OpsContext* c = &ctx;
          ctx.fs.ReadDir(
              ino, fi->fh, static_cast<uint64_t>(off), max_entries, plus,
              Completion<std::vector<DirEntry>>(
                  reply, [c, size, plus](Reply& answer, Result<std::vector<DirEntry>> r) {
                    if (!r.ok()) return answer.Error(r.status());
                    ReplyDirEntries(*c, answer, size, plus, std::move(*r));
                  }));
        });
}

void ReadDir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, fuse_file_info* fi) noexcept {
  ReadDirCommon(req, ino, size, off, fi, /*plus=*/false);
}

void ReadDirPlus(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
                 fuse_file_info* fi) noexcept {
  ReadDirCommon(req, ino, size, off, fi, /*plus=*/true);
}

void ReleaseDir(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi) noexcept {
  Guard(req, {.op = "releasedir", .ino = ino, .fh = fi->fh}, [&](OpsContext& ctx, ReplyPtr reply) {
    ctx.fs.ReleaseDir(fi->fh);
    reply->Ok();
  });
}

// ---- files ----

void Open(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi) noexcept {
  Guard(req, {.op = "open", .ino = ino}, [&](OpsContext& ctx, ReplyPtr reply) {
    fuse_file_info out = *fi;
    ctx.fs.Open(
        ino, fi->flags, fuse_req_ctx(req)->pid,
        Completion<OpenedFile>(reply, [out, &ctx](Reply& answer, Result<OpenedFile> r) mutable {
          if (!r.ok()) return answer.Error(r.status());
          out.fh = r->fh;
          out.keep_cache = r->keep_cache;  // the ETag is unchanged: keep the page cache
          out.noflush = r->noflush;        // read-only: no FLUSH round trip on close
          out.direct_io = r->direct_io;    // writes; reads only under --direct-io
          if (r->backing_file != nullptr && answer.req() != nullptr) {
            // The kernel reads the cache's file itself. Registering it took the kernel's
            // own reference, so our descriptor closes when this completion ends.
            SetBackingId(out,
                         ctx.backing.Open(answer.req(), r->fh, r->backing_file->get(), ctx.fs));
          }
          answer.Open(out);
        }));
  });
}

void Read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, fuse_file_info* fi) noexcept {
  Guard(
      req,
      {.op = "read", .ino = ino, .fh = fi->fh, .offset = static_cast<uint64_t>(off), .size = size},
      [&](OpsContext& ctx, ReplyPtr reply) {
        // A read of an offline object may wait for its restore (--offline=wait); an INTERRUPT
        // (Ctrl-C on the reader) cancels the wait through the request's token.
        ctx.fs.Read(ino, fi->fh, static_cast<uint64_t>(off), size, reply->cancel(),
                    Completion<ReadData>(reply, [](Reply& answer, Result<ReadData> r) {
                      if (!r.ok()) return answer.Error(r.status());
                      answer.Data(*r);
                      // `r` (and its keepalive) dies here, after the bytes reached /dev/fuse.
                    }));
      });
}

void Release(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi) noexcept {
  Guard(req, {.op = "release", .ino = ino, .fh = fi->fh}, [&](OpsContext& ctx, ReplyPtr reply) {
    ctx.backing.Release(req, fi->fh);
    ctx.fs.Release(fi->fh);
    reply->Ok();
  });
}

void StatFs(fuse_req_t req, fuse_ino_t ino) noexcept {
  Guard(req, {.op = "statfs", .ino = ino}, [&](OpsContext& ctx, ReplyPtr reply) {
    const FsStats s = ctx.fs.StatFs();
    struct statvfs st {};
    st.f_bsize = s.block_size;
    st.f_frsize = s.block_size;
    st.f_blocks = s.blocks;
    st.f_files = s.files;
    st.f_namemax = s.max_name;
    // S3 has no capacity to report: as much free as the total on every mount, as mountpoint-s3
    // and s3fs do, so df shows 0 % used (not 100 %) and cp and rsync go ahead. No f_flag: FUSE
    // does not carry it (the kernel derives it from the mount's flags), so a --read-only mount
    // cannot say ST_RDONLY here; its writes answer EROFS.
    st.f_bfree = s.blocks;
    st.f_bavail = s.blocks;
    st.f_ffree = s.files - s.files_used;
    st.f_favail = st.f_ffree;
    reply->StatFs(st);
  });
}

// ---- xattrs (docs/semantics.md "Extended attributes") ----

// Only "user." names are ours. The rest (security.selinux, system.posix_acl_*, trusted.*) are
// answered here without a FileSystem call, with EOPNOTSUPP ("this file system has no such
// namespace"), not ENODATA: `ls -l` asks for security.selinux on every entry, and coreutils
// remembers an EOPNOTSUPP per device and stops asking, so a 100 000-entry `ls -l` costs one
// GETXATTR instead of 100 000. (Before the tape xattrs this answered ENOSYS so the kernel stopped
// sending GETXATTR at all; that also hid every user.* name, so it cannot stay.)
bool IsUserXattr(const char* name) { return std::string_view(name).starts_with("user."); }

Status ForeignXattrNamespace(const char* name) {
  return Status(StatusCode::kUnimplemented, StatusReason::kNotSupported,
                std::string(name) + ": only user.* attributes exist here");
}

// getxattr/listxattr size protocol: size 0 asks for the length; a buffer too small is ERANGE.
void ReplyXattrValue(Reply& answer, size_t size, const std::string& value) {
  if (size == 0) return answer.Xattr(value.size());
  if (value.size() > size) {
    return answer.Refuse(Status(StatusCode::kOutOfRange, StatusReason::kBufferTooSmall,
                                "the value needs " + std::to_string(value.size()) + " bytes"));
  }
  answer.Buf(value.data(), value.size());
}

void GetXattr(fuse_req_t req, fuse_ino_t ino, const char* name, size_t size) noexcept {
  Guard(req, {.op = "getxattr", .ino = ino, .size = size}, [&](OpsContext& ctx, ReplyPtr reply) {
    if (!IsUserXattr(name)) return reply->Refuse(ForeignXattrNamespace(name));
    ctx.fs.GetXattr(ino, name,
                    Completion<std::string>(reply, [size](Reply& answer, Result<std::string> r) {
                      if (!r.ok()) return answer.Error(r.status());
                      ReplyXattrValue(answer, size, *r);
                    }));
  });
}

void ListXattr(fuse_req_t req, fuse_ino_t ino, size_t size) noexcept {
  Guard(req, {.op = "listxattr", .ino = ino, .size = size}, [&](OpsContext& ctx, ReplyPtr reply) {
    ctx.fs.ListXattr(ino, Completion<std::vector<std::string>>(
                              reply, [size](Reply& answer, Result<std::vector<std::string>> r) {
                                if (!r.ok()) return answer.Error(r.status());
                                std::string packed;  // NUL-terminated names, back to back
                                for (const std::string& n : *r) {
                                  packed += n;
                                  packed.push_back('\0');
                                }
                                ReplyXattrValue(answer, size, packed);
                              }));
  });
}

void SetXattr(fuse_req_t req, fuse_ino_t ino, const char* name, const char* value, size_t size,
              int) noexcept {
  Guard(req, {.op = "setxattr", .ino = ino, .size = size}, [&](OpsContext& ctx, ReplyPtr reply) {
    if (!IsUserXattr(name)) {
      return reply->Refuse(ctx.fs.options().write.read_only ? ReadOnlyMount("setxattr")
                                                            : ForeignXattrNamespace(name));
    }
    ctx.fs.SetXattr(ino, name, std::string_view(value, size), [reply](Status s) noexcept {
      try {
        if (!s.ok()) return reply->Error(s);
        reply->Ok();
      } catch (...) {
        if (!reply->answered()) reply->Error(Status::Internal("exception"));
      }
    });
  });
}

// ---- writes (docs/semantics.md "Writes"); FileSystem refuses them on a read-only mount ----

// A completion that answers a Status: Ok() or the error.
std::function<void(Status)> StatusCompletion(ReplyPtr reply) {
  return [reply = std::move(reply)](Status s) noexcept {
    try {
      if (!s.ok()) return reply->Error(s);
      reply->Ok();
    } catch (...) {
      if (!reply->answered()) reply->Error(Status::Internal("exception"));
    }
  };
}

void Create(fuse_req_t req, fuse_ino_t parent, const char* name, mode_t mode,
            fuse_file_info* fi) noexcept {
  Guard(req, {.op = "create", .ino = parent}, [&](OpsContext& ctx, ReplyPtr reply) {
    if (!S_ISREG(mode)) {
      return reply->Refuse(Status(StatusCode::kPermissionDenied, StatusReason::kNotPermitted,
                                  "create: only regular files can be objects"));
    }
    fuse_file_info out = *fi;
    ctx.fs.Create(parent, name, fi->flags, fuse_req_ctx(req)->pid,
                  Completion<FileSystem::CreatedFile>(
                      reply, [out](Reply& answer, Result<FileSystem::CreatedFile> r) mutable {
                        if (!r.ok()) return answer.Error(r.status());
                        out.fh = r->file.fh;
                        out.keep_cache = 0;
                        out.noflush = r->file.noflush;  // close() completes the upload
                        out.direct_io = r->file.direct_io;
                        answer.Create(r->entry, out);
                      }));
  });
}

void Write(fuse_req_t req, fuse_ino_t ino, const char* buf, size_t size, off_t off,
           fuse_file_info* fi) noexcept {
  Guard(
      req,
      {.op = "write", .ino = ino, .fh = fi->fh, .offset = static_cast<uint64_t>(off), .size = size},
      [&](OpsContext& ctx, ReplyPtr reply) {
        // `buf` is libfuse's request buffer: FileSystem::Write copies it before returning.
        ctx.fs.Write(ino, fi->fh, static_cast<uint64_t>(off),
                     std::span(reinterpret_cast<const std::byte*>(buf), size),
                     Completion<size_t>(reply, [](Reply& answer, Result<size_t> r) {
                       if (!r.ok()) return answer.Error(r.status());
                       answer.Written(*r);
                     }));
      });
}

void Flush(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi) noexcept {
  Guard(req, {.op = "flush", .ino = ino, .fh = fi->fh}, [&](OpsContext& ctx, ReplyPtr reply) {
    // A written file completes its upload.
    ctx.fs.Flush(ino, fi->fh, /*fsync=*/false, fuse_req_ctx(req)->pid, StatusCompletion(reply));
  });
}

void Fsync(fuse_req_t req, fuse_ino_t ino, int, fuse_file_info* fi) noexcept {
  Guard(req, {.op = "fsync", .ino = ino, .fh = fi->fh}, [&](OpsContext& ctx, ReplyPtr reply) {
    ctx.fs.Flush(ino, fi->fh, /*fsync=*/true, fuse_req_ctx(req)->pid,
                 StatusCompletion(reply));  // then it is durable
  });
}

void SetAttr(fuse_req_t req, fuse_ino_t ino, struct stat* attr, int to_set,
             fuse_file_info* fi) noexcept {
  Guard(req, {.op = "setattr", .ino = ino, .fh = fi ? fi->fh : 0},
        [&](OpsContext& ctx, ReplyPtr reply) {
          FileSystem::SetAttrRequest request;
          if (to_set & FUSE_SET_ATTR_SIZE) request.size = static_cast<uint64_t>(attr->st_size);
          ctx.fs.SetAttr(ino, request,
                         Completion<Attributes>(reply, [](Reply& answer, Result<Attributes> r) {
                           if (!r.ok()) return answer.Error(r.status());
                           answer.Attr(*r, r->cache_ttl);
                         }));
        });
}

void MkDir(fuse_req_t req, fuse_ino_t parent, const char* name, mode_t) noexcept {
  Guard(req, {.op = "mkdir", .ino = parent}, [&](OpsContext& ctx, ReplyPtr reply) {
    ctx.fs.MkDir(parent, name, Completion<Entry>(reply, [](Reply& answer, Result<Entry> r) {
                   if (!r.ok()) return answer.Error(r.status());
                   answer.EntryParam(*r);
                 }));
  });
}

void Unlink(fuse_req_t req, fuse_ino_t parent, const char* name) noexcept {
  Guard(req, {.op = "unlink", .ino = parent}, [&](OpsContext& ctx, ReplyPtr reply) {
    ctx.fs.Unlink(parent, name, StatusCompletion(reply));
  });
}

void RmDir(fuse_req_t req, fuse_ino_t parent, const char* name) noexcept {
  Guard(req, {.op = "rmdir", .ino = parent}, [&](OpsContext& ctx, ReplyPtr reply) {
    ctx.fs.RmDir(parent, name, StatusCompletion(reply));
  });
}

void Rename(fuse_req_t req, fuse_ino_t parent, const char* name, fuse_ino_t new_parent,
            const char* new_name, unsigned flags) noexcept {
  Guard(req, {.op = "rename", .ino = parent}, [&](OpsContext& ctx, ReplyPtr reply) {
    // A copy and a delete in S3 (docs/semantics.md "Writes"); answered when both are done.
    ctx.fs.Rename(parent, name, new_parent, new_name, flags, StatusCompletion(reply));
  });
}

// ---- what S3 cannot hold: EROFS on a read-only mount, EPERM otherwise ----

void Unsupported(fuse_req_t req, const char* op, fuse_ino_t ino) noexcept {
  Guard(req, {.op = op, .ino = ino}, [&](OpsContext& ctx, ReplyPtr reply) {
    if (ctx.fs.options().write.read_only) return reply->Refuse(ReadOnlyMount(op));
    reply->Refuse(Status(StatusCode::kPermissionDenied, StatusReason::kNotPermitted,
                         std::string(op) + ": objects cannot represent this"));
  });
}

void MkNod(fuse_req_t req, fuse_ino_t parent, const char*, mode_t, dev_t) noexcept {
  Unsupported(req, "mknod", parent);
}
void SymLink(fuse_req_t req, const char*, fuse_ino_t parent, const char*) noexcept {
  Unsupported(req, "symlink", parent);
}
void Link(fuse_req_t req, fuse_ino_t ino, fuse_ino_t, const char*) noexcept {
  Unsupported(req, "link", ino);
}
void Fallocate(fuse_req_t req, fuse_ino_t ino, int, off_t, off_t, fuse_file_info*) noexcept {
  Unsupported(req, "fallocate", ino);
}
void RemoveXattr(fuse_req_t req, fuse_ino_t ino, const char*) noexcept {
  Unsupported(req, "removexattr", ino);
}
void CopyFileRange(fuse_req_t req, fuse_ino_t, off_t, fuse_file_info*, fuse_ino_t ino_out, off_t,
                   fuse_file_info*, size_t, int) noexcept {
  Unsupported(req, "copy_file_range", ino_out);
}

fuse_lowlevel_ops MakeOps() {
  fuse_lowlevel_ops ops{};
  ops.init = Init;
  ops.destroy = Destroy;
  ops.lookup = Lookup;
  ops.forget = Forget;
  ops.forget_multi = ForgetMulti;
  ops.getattr = GetAttr;
  ops.access = Access;
  ops.opendir = OpenDir;
  ops.readdir = ReadDir;
  ops.readdirplus = ReadDirPlus;
  ops.releasedir = ReleaseDir;
  ops.open = Open;
  ops.read = Read;
  ops.release = Release;
  ops.flush = Flush;
  ops.fsync = Fsync;
  ops.statfs = StatFs;
  ops.getxattr = GetXattr;
  ops.listxattr = ListXattr;
  ops.setattr = SetAttr;
  ops.mknod = MkNod;
  ops.mkdir = MkDir;
  ops.unlink = Unlink;
  ops.rmdir = RmDir;
  ops.symlink = SymLink;
  ops.rename = Rename;
  ops.link = Link;
  ops.write = Write;
  ops.create = Create;
  ops.fallocate = Fallocate;
  ops.setxattr = SetXattr;
  ops.removexattr = RemoveXattr;
  ops.copy_file_range = CopyFileRange;
  // Left NULL on purpose: readlink (no symlinks), locks (the kernel keeps them locally), ioctl,
  // bmap, poll, lseek (generic SEEK_DATA/HOLE semantics suit whole objects), write_buf.
  return ops;
}

}  // namespace

const fuse_lowlevel_ops& LowLevelOps() {
  static const fuse_lowlevel_ops ops = MakeOps();
  return ops;
}

}  // namespace reelfs::fuse

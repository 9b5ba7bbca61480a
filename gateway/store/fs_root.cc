#include "gateway/store/fs_root.h"

#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <ctime>
#include <random>
#include <vector>

#include <sys/file.h>
#include <sys/stat.h>

#include "common/c_handle.h"
#include "common/log.h"
#include "gateway/store/key_validation.h"

namespace reelfs::gateway {
namespace {

using DirHandle = CHandle<DIR, closedir>;

constexpr int kDirFlags = O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC;

int64_t MtimeNs(const struct stat& st) {
  return static_cast<int64_t>(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec;
}

FileStat ToFileStat(const struct stat& st) {
  FileStat out;
  out.is_dir = S_ISDIR(st.st_mode);
  out.size = out.is_dir ? 0 : static_cast<uint64_t>(st.st_size);
  out.mtime_ns = MtimeNs(st);
  return out;
}

Status NoSuchKey(std::string_view key) {
  return S3CodeError(StatusCode::kNotFound, "NoSuchKey", 404,
                     "The specified key does not exist: " + std::string(key));
}

Result<UniqueFd> OpenDirAt(int dir_fd, const char* name) {
  int fd = ::openat(dir_fd, name, kDirFlags);
  if (fd < 0) return ErrnoToStatus(errno, std::string("openat ") + name);
  return UniqueFd(fd);
}

std::string RandomHex(size_t bytes);

bool IsSymlinkAt(int dir_fd, const char* name) {
  struct stat st {};
  return ::fstatat(dir_fd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(st.st_mode);
}

// A symlink planted in the root is not part of the namespace: for a write below it the gateway
// does what it does for a missing directory, creating one in the link's place (as a PUT of the
// link's own key replaces the link). The swap is atomic (RENAME_EXCHANGE), and what was swapped
// out is removed only if it still is a symlink: an object published there meanwhile is put back.
// Returns the new directory's fd, or -1 with errno set.
int ReplaceSymlinkWithDir(int dir_fd, const std::string& comp) {
  const std::string tmp = ".reelfs-gateway-mkdir-" + RandomHex(8);
  if (::mkdirat(dir_fd, tmp.c_str(), 0755) != 0) return -1;
  if (::renameat2(dir_fd, tmp.c_str(), dir_fd, comp.c_str(), RENAME_EXCHANGE) != 0) {
    const int err = errno;
    ::unlinkat(dir_fd, tmp.c_str(), AT_REMOVEDIR);
    errno = err;
    return -1;
  }
  if (IsSymlinkAt(dir_fd, tmp.c_str())) {
    ::unlinkat(dir_fd, tmp.c_str(), 0);
  } else {
    ::renameat2(dir_fd, tmp.c_str(), dir_fd, comp.c_str(), RENAME_EXCHANGE);
    ::unlinkat(dir_fd, tmp.c_str(), AT_REMOVEDIR);
    errno = ENOTDIR;
    return -1;
  }
  return ::openat(dir_fd, comp.c_str(), kDirFlags);
}

// Classifies why a directory component could not be opened.
Status ComponentError(int dir_fd, const std::string& comp, int err, bool creating) {
  struct stat st {};
  if (::fstatat(dir_fd, comp.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0) {
    if (S_ISLNK(st.st_mode)) {
      // Never followed, never listed, never told apart from a missing key (a 403 here would
      // reveal that the link exists).
      return S3CodeError(StatusCode::kNotFound, "NoSuchKey", 404,
                         "The specified key does not exist.");
    }
    if (!S_ISDIR(st.st_mode)) {
      if (creating) {
        return S3CodeError(StatusCode::kFailedPrecondition, "ObjectParentIsFile", 409,
                           "a parent of the key is an object (file): " + comp);
      }
      return Status::NotFound("parent is a file");
    }
  }
  return ErrnoToStatus(err, "open directory " + comp);
}

// How often a PUT makes its parents again after a concurrent delete removed one (each retry
// needs a delete to land inside a window of a few syscalls).
constexpr int kPlaceAttempts = 8;

// Opens comps[0..count) below dir_fd, one openat per component, creating when asked. Creating, a
// directory removed between our mkdirat and openat is made again; one removed after we opened it
// (mkdirat below it fails with ENOENT) is the caller's to retry from the top (NotFound).
// `levels` receives the fd of every directory opened (for upward cleanup).
Status WalkDirs(int start_fd, const std::vector<std::string>& comps, size_t count, bool create,
                std::vector<UniqueFd>* levels) {
  int cur = start_fd;
  for (size_t i = 0; i < count; ++i) {
    const std::string& comp = comps[i];
    int fd = ::openat(cur, comp.c_str(), kDirFlags);
    if (fd < 0 && (errno == ELOOP || errno == ENOTDIR) && create &&
        IsSymlinkAt(cur, comp.c_str())) {
      fd = ReplaceSymlinkWithDir(cur, comp);
    }
    // A delete elsewhere removes a directory it left empty (RemoveObject), which can fall between
    // our mkdir and open: make it again.
    for (int made = 0; fd < 0 && errno == ENOENT && create && made < kPlaceAttempts; ++made) {
      if (::mkdirat(cur, comp.c_str(), 0755) != 0 && errno != EEXIST) {
        int err = errno;
        return ComponentError(cur, comp, err, create);
      }
      fd = ::openat(cur, comp.c_str(), kDirFlags);
    }
    if (fd < 0) {
      int err = errno;
      if (err == ENOENT) return Status::NotFound("no such directory " + comp);
      return ComponentError(cur, comp, err, create);
    }
    levels->emplace_back(fd);
    cur = fd;
  }
  return Status::Ok();
}

std::string RandomHex(size_t bytes) {
  static thread_local std::mt19937_64 rng{std::random_device{}()};
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  for (size_t i = 0; i < bytes; ++i) {
    auto b = static_cast<uint8_t>(rng());
    out.push_back(kHex[b >> 4]);
    out.push_back(kHex[b & 15]);
  }
  return out;
}

Status WalkRec(int dir_fd, const std::string& prefix,
               const std::function<void(const std::string&, const FileStat&)>& fn, bool is_root) {
  int dup_fd = ::openat(dir_fd, ".", kDirFlags);
  if (dup_fd < 0) return ErrnoToStatus(errno, "open directory " + prefix);
  DirHandle dir(::fdopendir(dup_fd));
  if (!dir) {
    int err = errno;
    ::close(dup_fd);
    return ErrnoToStatus(err, "fdopendir " + prefix);
  }
  std::vector<std::string> names;
  while (dirent* ent = ::readdir(dir.get())) {
    std::string_view name = ent->d_name;
    if (name == "." || name == "..") continue;
    names.emplace_back(name);
  }
  if (names.empty() && !is_root) {
    struct stat st {};
    if (::fstat(dir_fd, &st) == 0) fn(prefix, ToFileStat(st));
    return Status::Ok();
  }
  for (const std::string& name : names) {
    if (is_root && name == kReservedDir) continue;
    struct stat st {};
    if (::fstatat(dir_fd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
    std::string key = prefix + name;
    if (S_ISREG(st.st_mode)) {
      if (!ValidateObjectKey(key).ok()) continue;
      fn(key, ToFileStat(st));
    } else if (S_ISDIR(st.st_mode)) {
      if (!ValidateObjectKey(key + "/").ok()) continue;
      auto sub = OpenDirAt(dir_fd, name.c_str());
      if (!sub.ok()) continue;
      REELFS_RETURN_IF_ERROR(WalkRec(sub->get(), key + "/", fn, false));
    }
  }
  return Status::Ok();
}

}  // namespace

Status S3CodeError(StatusCode code, std::string_view s3_code, int http_status, std::string msg) {
  StatusDetail detail;
  detail.s3_code = std::string(s3_code);
  detail.http_status = http_status;
  return Status(code, std::move(msg), std::move(detail));
}

// ---- TmpFile ----

TmpFile::~TmpFile() {
  if (!name_.empty() && fd_.valid()) ::unlinkat(dir_fd_, name_.c_str(), 0);
  // A region dropped unpublished (a body cut short, a disk that filled) frees its blocks as an
  // unlinked tmp file would: on a full disk they are what the catalog needs to abort the upload.
  if (region_ && !published_ && size_ > 0 && fd_.valid()) {
    ::fallocate(fd_.get(), FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, static_cast<off_t>(base_),
                static_cast<off_t>(size_));
  }
}

TmpFile::TmpFile(TmpFile&& other) noexcept
    : dir_fd_(other.dir_fd_),
      name_(std::move(other.name_)),
      fd_(std::move(other.fd_)),
      size_(other.size_),
      region_(other.region_),
      published_(other.published_),
      base_(other.base_),
      capacity_(other.capacity_) {
  other.name_.clear();
  other.region_ = false;
}

TmpFile TmpFile::Region(UniqueFd fd, uint64_t base, uint64_t capacity) {
  TmpFile t(-1, std::string(), std::move(fd));
  t.region_ = true;
  t.base_ = base;
  t.capacity_ = capacity;
  return t;
}

Status TmpFile::Write(std::string_view data) {
  if (region_ && data.size() > capacity_ - size_) {
    return S3CodeError(StatusCode::kInvalidArgument, "IncompleteBody", 400,
                       "the part's body is longer than its declared length");
  }
  while (!data.empty()) {
    ssize_t n =
        region_ ? ::pwrite(fd_.get(), data.data(), data.size(), static_cast<off_t>(base_ + size_))
                : ::write(fd_.get(), data.data(), data.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      return ErrnoToStatus(errno, "write temporary file");
    }
    data.remove_prefix(static_cast<size_t>(n));
    size_ += static_cast<uint64_t>(n);
  }
  return Status::Ok();
}

Status TmpFile::Sync() {
  if (::fsync(fd_.get()) != 0) return ErrnoToStatus(errno, "fsync temporary file");
  return Status::Ok();
}

Status TmpFile::CopyFrom(int src_fd, uint64_t offset, uint64_t length) {
  if (region_ && length > capacity_ - size_) {
    return S3CodeError(StatusCode::kInvalidArgument, "InvalidRequest", 400,
                       "the copied range is longer than the part's region");
  }
  auto off = static_cast<off64_t>(offset);
  while (length > 0) {
    off64_t out = static_cast<off64_t>(base_ + size_);
    ssize_t n = ::copy_file_range(src_fd, &off, fd_.get(), region_ ? &out : nullptr, length, 0);
    if (n < 0 && (errno == EXDEV || errno == ENOSYS || errno == EINVAL || errno == EOPNOTSUPP)) {
      // Fallback: plain pread/write.
      std::vector<char> buf(1 << 20);
      while (length > 0) {
        ssize_t r = ::pread(src_fd, buf.data(), std::min<uint64_t>(buf.size(), length), off);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) return ErrnoToStatus(errno, "read source");
        if (r == 0) return Status::DataLoss("source shorter than expected");
        REELFS_RETURN_IF_ERROR(Write(std::string_view(buf.data(), static_cast<size_t>(r))));
        off += r;
        length -= static_cast<uint64_t>(r);
      }
      return Status::Ok();
    }
    if (n < 0) {
      if (errno == EINTR) continue;
      return ErrnoToStatus(errno, "copy_file_range");
    }
    if (n == 0) return Status::DataLoss("source shorter than expected");
    length -= static_cast<uint64_t>(n);
    size_ += static_cast<uint64_t>(n);
  }
  return Status::Ok();
}

// ---- FsRoot ----

namespace {

constexpr const char* kAliveFile = ".alive";

// Unlinks the regular files in dir_fd (`.alive` included).
void RemoveFilesIn(int dir_fd) {
  int dup_fd = ::openat(dir_fd, ".", kDirFlags);
  DirHandle dir(dup_fd >= 0 ? ::fdopendir(dup_fd) : nullptr);
  if (!dir && dup_fd >= 0) ::close(dup_fd);
  while (dir) {
    dirent* ent = ::readdir(dir.get());
    if (ent == nullptr) break;
    if (ent->d_type == DT_REG) ::unlinkat(dir_fd, ent->d_name, 0);
  }
}

// Leftovers of processes that are gone (a crash mid-upload) are garbage: a per-process directory
// whose `.alive` nobody holds, and (owner only) loose files of the older flat layout.
void RemoveStaleTmp(int tmp_fd, bool front_end) {
  int dup_fd = ::openat(tmp_fd, ".", kDirFlags);
  DirHandle dir(dup_fd >= 0 ? ::fdopendir(dup_fd) : nullptr);
  if (!dir && dup_fd >= 0) ::close(dup_fd);
  std::vector<std::string> dead;
  while (dir) {
    dirent* ent = ::readdir(dir.get());
    if (ent == nullptr) break;
    const std::string name = ent->d_name;
    if (name == "." || name == "..") continue;
    if (ent->d_type == DT_REG) {
      if (!front_end) ::unlinkat(tmp_fd, name.c_str(), 0);
      continue;
    }
    if (ent->d_type != DT_DIR) continue;
    const std::string alive = name + "/" + kAliveFile;
    UniqueFd fd(::openat(tmp_fd, alive.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
    if (fd.get() < 0) {
      // No `.alive`: a process between its mkdir and its lock (young), or one that died there.
      struct stat st {};
      if (::fstatat(tmp_fd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0 ||
          ::time(nullptr) - st.st_mtime < 60) {
        continue;
      }
    } else if (::flock(fd.get(), LOCK_EX | LOCK_NB) != 0) {
      continue;  // its process is running
    }
    dead.push_back(name);
  }
  for (const std::string& name : dead) {
    UniqueFd sub(::openat(tmp_fd, name.c_str(), kDirFlags));
    if (sub.get() < 0) continue;
    RemoveFilesIn(sub.get());
    ::unlinkat(tmp_fd, name.c_str(), AT_REMOVEDIR);
  }
}

}  // namespace

Result<std::unique_ptr<FsRoot>> FsRoot::Open(const std::string& root, bool front_end) {
  if (::mkdir(root.c_str(), 0755) != 0 && errno != EEXIST) {
    return ErrnoToStatus(errno, "create root " + root);
  }
  REELFS_ASSIGN_OR_RETURN(UniqueFd root_fd, UniqueFd::Open(root, O_RDONLY | O_DIRECTORY));
  const std::string internal(kReservedDir);
  for (const char* sub : {"", "/tmp", "/uploads"}) {
    std::string p = internal + sub;
    if (::mkdirat(root_fd.get(), p.c_str(), 0700) != 0 && errno != EEXIST) {
      return ErrnoToStatus(errno, "create " + root + "/" + p);
    }
  }
  REELFS_ASSIGN_OR_RETURN(UniqueFd internal_fd, OpenDirAt(root_fd.get(), internal.c_str()));
  REELFS_ASSIGN_OR_RETURN(UniqueFd tmp_parent, OpenDirAt(internal_fd.get(), "tmp"));
  REELFS_ASSIGN_OR_RETURN(UniqueFd uploads_fd, OpenDirAt(internal_fd.get(), "uploads"));
  RemoveStaleTmp(tmp_parent.get(), front_end);
  const std::string name = std::to_string(::getpid()) + "-" + RandomHex(6);
  if (::mkdirat(tmp_parent.get(), name.c_str(), 0700) != 0) {
    return ErrnoToStatus(errno, "create " + root + "/" + internal + "/tmp/" + name);
  }
  REELFS_ASSIGN_OR_RETURN(UniqueFd tmp_fd, OpenDirAt(tmp_parent.get(), name.c_str()));
  UniqueFd alive(
      ::openat(tmp_fd.get(), kAliveFile, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600));
  if (alive.get() < 0 || ::flock(alive.get(), LOCK_EX) != 0) {
    return ErrnoToStatus(errno,
                         "lock " + root + "/" + internal + "/tmp/" + name + "/" + kAliveFile);
  }
  return std::unique_ptr<FsRoot>(new FsRoot(root, std::move(root_fd), std::move(tmp_parent), name,
                                            std::move(tmp_fd), std::move(alive),
                                            std::move(uploads_fd)));
}

FsRoot::~FsRoot() {
  // A clean stop leaves no directory behind (temporary files still open unlink themselves).
  RemoveFilesIn(tmp_.get());
  ::unlinkat(tmp_parent_.get(), tmp_name_.c_str(), AT_REMOVEDIR);
}

std::string FsRoot::internal_path() const { return path_ + "/" + std::string(kReservedDir); }

std::string FsRoot::tmp_path() const { return internal_path() + "/tmp/" + tmp_name_; }

Result<std::vector<std::string>> FsRoot::ListBucketDirs() const {
  int dup_fd = ::openat(root_.get(), ".", kDirFlags);
  if (dup_fd < 0) return ErrnoToStatus(errno, "open root");
  DirHandle dir(::fdopendir(dup_fd));
  if (!dir) {
    int err = errno;
    ::close(dup_fd);
    return ErrnoToStatus(err, "fdopendir root");
  }
  std::vector<std::string> out;
  while (dirent* ent = ::readdir(dir.get())) {
    std::string name = ent->d_name;
    if (!ValidateBucketName(name).ok()) continue;  // also excludes ".", "..", the reserved dir
    struct stat st {};
    if (::fstatat(root_.get(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
    if (S_ISDIR(st.st_mode)) out.push_back(std::move(name));
  }
  std::sort(out.begin(), out.end());
  return out;
}

Status FsRoot::MakeBucketDir(const std::string& bucket) {
  if (::mkdirat(root_.get(), bucket.c_str(), 0755) != 0) {
    if (errno == EEXIST) {
      return S3CodeError(StatusCode::kAlreadyExists, "BucketAlreadyOwnedByYou", 409,
                         "bucket already exists: " + bucket);
    }
    return ErrnoToStatus(errno, "mkdir bucket " + bucket);
  }
  return Status::Ok();
}

Status FsRoot::RemoveBucketDir(const std::string& bucket) {
  if (::unlinkat(root_.get(), bucket.c_str(), AT_REMOVEDIR) != 0) {
    if (errno == ENOENT) {
      return S3CodeError(StatusCode::kNotFound, "NoSuchBucket", 404, "no such bucket " + bucket);
    }
    if (errno == ENOTEMPTY || errno == EEXIST) {
      return S3CodeError(StatusCode::kFailedPrecondition, "BucketNotEmpty", 409,
                         "The bucket you tried to delete is not empty");
    }
    return ErrnoToStatus(errno, "rmdir bucket " + bucket);
  }
  return Status::Ok();
}

Result<UniqueFd> FsRoot::OpenBucket(const std::string& bucket) const {
  int fd = ::openat(root_.get(), bucket.c_str(), kDirFlags);
  if (fd < 0) {
    return S3CodeError(StatusCode::kNotFound, "NoSuchBucket", 404,
                       "The specified bucket does not exist: " + bucket);
  }
  return UniqueFd(fd);
}

Result<FsRoot::OpenedObject> FsRoot::OpenObject(const std::string& bucket,
                                                std::string_view key) const {
  REELFS_ASSIGN_OR_RETURN(UniqueFd bucket_fd, OpenBucket(bucket));
  std::vector<std::string> comps = SplitKey(key);
  if (comps.empty()) return NoSuchKey(key);
  std::vector<UniqueFd> levels;
  bool marker = IsDirectoryMarker(key);
  size_t dirs = marker ? comps.size() : comps.size() - 1;
  Status st = WalkDirs(bucket_fd.get(), comps, dirs, false, &levels);
  if (!st.ok()) return NoSuchKey(key);
  int parent = levels.empty() ? bucket_fd.get() : levels.back().get();
  OpenedObject out;
  if (marker) {
    out.fd = std::move(levels.back());
  } else {
    int fd = ::openat(parent, comps.back().c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) return NoSuchKey(key);
    out.fd = UniqueFd(fd);
  }
  struct stat sb {};
  if (::fstat(out.fd.get(), &sb) != 0) return ErrnoToStatus(errno, "fstat");
  if (marker ? !S_ISDIR(sb.st_mode) : !S_ISREG(sb.st_mode)) return NoSuchKey(key);
  out.stat = ToFileStat(sb);
  return out;
}

Result<TmpFile> FsRoot::CreateTmp(std::string_view purpose) {
  static std::atomic<uint64_t> counter{0};
  std::string name = std::string(purpose) + "-" + RandomHex(8) + "-" + std::to_string(++counter);
  int fd =
      ::openat(tmp_.get(), name.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0644);
  if (fd < 0) return ErrnoToStatus(errno, "create temporary file");
  return TmpFile(tmp_.get(), std::move(name), UniqueFd(fd));
}

Result<FileStat> FsRoot::Publish(TmpFile& tmp, const std::string& bucket, std::string_view key) {
  struct stat tmp_st {};
  if (::fstat(tmp.fd(), &tmp_st) != 0) return ErrnoToStatus(errno, "fstat temporary file");
  REELFS_ASSIGN_OR_RETURN(UniqueFd bucket_fd, OpenBucket(bucket));
  std::vector<std::string> comps = SplitKey(key);
  // A concurrent delete may remove an empty parent between mkdir and rename: retry a few times.
  for (int attempt = 0;; ++attempt) {
    std::vector<UniqueFd> levels;
    Status walked = WalkDirs(bucket_fd.get(), comps, comps.size() - 1, true, &levels);
    if (walked.code() == StatusCode::kNotFound && attempt + 1 < kPlaceAttempts) continue;
    REELFS_RETURN_IF_ERROR(walked);
    int parent = levels.empty() ? bucket_fd.get() : levels.back().get();
    const char* leaf = comps.back().c_str();
    struct stat sb {};
    if (::fstatat(parent, leaf, &sb, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(sb.st_mode)) {
      return S3CodeError(StatusCode::kFailedPrecondition, "ExistingObjectIsDirectory", 409,
                         "a directory (prefix with objects below it) exists at this key");
    }
    if (::renameat(tmp.dir_fd(), tmp.name().c_str(), parent, leaf) != 0) {
      int err = errno;
      if (err == ENOENT && attempt + 1 < kPlaceAttempts) continue;
      if (err == EISDIR || err == ENOTEMPTY) {
        return S3CodeError(StatusCode::kFailedPrecondition, "ExistingObjectIsDirectory", 409,
                           "a directory exists at this key");
      }
      return ErrnoToStatus(err, "rename into place");
    }
    tmp.MarkPublished();
    ::fsync(parent);
    return ToFileStat(tmp_st);
  }
}

Result<FileStat> FsRoot::MakeMarker(const std::string& bucket, std::string_view key) {
  REELFS_ASSIGN_OR_RETURN(UniqueFd bucket_fd, OpenBucket(bucket));
  std::vector<std::string> comps = SplitKey(key);
  std::vector<UniqueFd> levels;
  int parent = -1;
  const char* leaf = comps.back().c_str();
  for (int attempt = 0;; ++attempt) {  // the parents' concurrent removal: as in Publish
    levels.clear();
    Status walked = WalkDirs(bucket_fd.get(), comps, comps.size() - 1, true, &levels);
    if (walked.code() == StatusCode::kNotFound && attempt + 1 < kPlaceAttempts) continue;
    REELFS_RETURN_IF_ERROR(walked);
    parent = levels.empty() ? bucket_fd.get() : levels.back().get();
    if (IsSymlinkAt(parent, leaf)) {
      const int fd = ReplaceSymlinkWithDir(parent, comps.back());
      if (fd >= 0) ::close(fd);
    }
    if (::mkdirat(parent, leaf, 0755) == 0 || errno == EEXIST) break;
    if (errno != ENOENT || attempt + 1 >= kPlaceAttempts) {
      return ErrnoToStatus(errno, "mkdir marker");
    }
  }
  struct stat sb {};
  if (::fstatat(parent, leaf, &sb, AT_SYMLINK_NOFOLLOW) != 0) return ErrnoToStatus(errno, "stat");
  if (!S_ISDIR(sb.st_mode)) {
    return S3CodeError(StatusCode::kFailedPrecondition, "ObjectParentIsFile", 409,
                       "an object (file) exists where the directory marker would go");
  }
  return ToFileStat(sb);
}

Status FsRoot::RemoveObject(const std::string& bucket, std::string_view key,
                            const std::function<bool(const std::string&)>& keep_dir) {
  REELFS_ASSIGN_OR_RETURN(UniqueFd bucket_fd, OpenBucket(bucket));
  std::vector<std::string> comps = SplitKey(key);
  std::vector<UniqueFd> levels;
  if (!WalkDirs(bucket_fd.get(), comps, comps.size() - 1, false, &levels).ok()) {
    return Status::Ok();  // parent missing: nothing to delete
  }
  auto dir_at = [&](size_t depth) {
    return depth == 0 ? bucket_fd.get() : levels[depth - 1].get();
  };
  size_t leaf_depth = comps.size() - 1;
  bool marker = IsDirectoryMarker(key);
  if (::unlinkat(dir_at(leaf_depth), comps.back().c_str(), marker ? AT_REMOVEDIR : 0) != 0) {
    int err = errno;
    if (err == ENOTEMPTY || err == EEXIST) return Status::Ok();  // marker over live children
    if (err != ENOENT && err != EISDIR && err != ENOTDIR) {
      return ErrnoToStatus(err, "unlink object");
    }
    if (err != ENOENT) return Status::Ok();  // a directory at a plain key: not an object
  }
  // Remove directories left empty, deepest first, keeping declared markers.
  for (size_t depth = leaf_depth; depth > 0; --depth) {
    std::string dir_key;
    for (size_t i = 0; i < depth; ++i) dir_key += comps[i] + "/";
    if (keep_dir && keep_dir(dir_key)) break;
    if (::unlinkat(dir_at(depth - 1), comps[depth - 1].c_str(), AT_REMOVEDIR) != 0) break;
  }
  return Status::Ok();
}

Status FsRoot::Walk(const std::string& bucket,
                    const std::function<void(const std::string&, const FileStat&)>& fn) const {
  REELFS_ASSIGN_OR_RETURN(UniqueFd bucket_fd, OpenBucket(bucket));
  return WalkRec(bucket_fd.get(), "", fn, true);
}

// Upload ids name directories under uploads/: only ids of the form the gateway issues get there
// (a catalog row is not trusted to hold one; see IsValidUploadId).
namespace {
Status BadUploadId() {
  return S3CodeError(StatusCode::kNotFound, "NoSuchUpload", 404,
                     "The specified multipart upload does not exist");
}
}  // namespace

Status FsRoot::MakeUploadDir(const std::string& upload_id) {
  if (!IsValidUploadId(upload_id)) return BadUploadId();
  if (::mkdirat(uploads_.get(), upload_id.c_str(), 0700) != 0) {
    return ErrnoToStatus(errno, "mkdir upload dir");
  }
  return Status::Ok();
}

namespace {

constexpr const char* kDataName = "data";
constexpr const char* kSlotName = "slot";

std::string ClaimName(int part_number) { return std::to_string(part_number) + ".claim"; }

// The slot symlink's target, read without following it; nullopt when there is none.
Result<std::optional<uint64_t>> ReadSlot(int dir_fd) {
  char buf[32];
  ssize_t n = ::readlinkat(dir_fd, kSlotName, buf, sizeof(buf));
  if (n < 0) {
    if (errno == ENOENT) return std::optional<uint64_t>();
    return ErrnoToStatus(errno, "read upload slot");
  }
  uint64_t slot = 0;
  auto [p, ec] = std::from_chars(buf, buf + n, slot);
  if (ec != std::errc() || p != buf + n || slot == 0) {
    return Status::DataLoss("upload slot link is not a size: " + std::string(buf, n));
  }
  return std::optional<uint64_t>(slot);
}

Status StatAt(int dir_fd, const std::string& name, struct stat* sb) {
  if (::fstatat(dir_fd, name.c_str(), sb, AT_SYMLINK_NOFOLLOW) != 0) {
    return ErrnoToStatus(errno, "stat " + name);
  }
  return Status::Ok();
}

Status NoSuchPart(int part_number) {
  return S3CodeError(StatusCode::kInvalidArgument, "InvalidPart", 400,
                     "part " + std::to_string(part_number) + " was not uploaded");
}

}  // namespace

Result<std::optional<TmpFile>> FsRoot::CreatePartInPlace(const std::string& upload_id,
                                                         int part_number, uint64_t size,
                                                         uint64_t min_slot) {
  if (!IsValidUploadId(upload_id)) return BadUploadId();
  if (part_number < 1) return std::optional<TmpFile>();
  REELFS_ASSIGN_OR_RETURN(UniqueFd dir, OpenDirAt(uploads_.get(), upload_id.c_str()));
  REELFS_ASSIGN_OR_RETURN(std::optional<uint64_t> slot, ReadSlot(dir.get()));
  if (!slot.has_value()) {
    if (size < min_slot || size == 0) return std::optional<TmpFile>();
    // The first part large enough fixes the slot; symlink creation is atomic, so of two first
    // parts racing one wins and both read the winner's value.
    const std::string target = std::to_string(size);
    if (::symlinkat(target.c_str(), dir.get(), kSlotName) != 0 && errno != EEXIST) {
      return ErrnoToStatus(errno, "create upload slot");
    }
    REELFS_ASSIGN_OR_RETURN(slot, ReadSlot(dir.get()));
    if (!slot.has_value()) return Status::Internal("upload slot vanished");
  }
  const uint64_t n = static_cast<uint64_t>(part_number);
  if (size > *slot || *slot > kMaxInPlaceExtent / n) return std::optional<TmpFile>();
  int claim = ::openat(dir.get(), ClaimName(part_number).c_str(),
                       O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (claim < 0) {
    if (errno == EEXIST) return std::optional<TmpFile>();  // written in place once already
    return ErrnoToStatus(errno, "claim part region");
  }
  ::close(claim);
  int fd = ::openat(dir.get(), kDataName, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd < 0) return ErrnoToStatus(errno, "open upload data file");
  return std::optional<TmpFile>(TmpFile::Region(UniqueFd(fd), (n - 1) * *slot, *slot));
}

Status FsRoot::PublishPart(TmpFile& tmp, const std::string& upload_id, int part_number) {
  if (!IsValidUploadId(upload_id)) return BadUploadId();
  REELFS_ASSIGN_OR_RETURN(UniqueFd dir, OpenDirAt(uploads_.get(), upload_id.c_str()));
  std::string name = std::to_string(part_number);
  if (tmp.is_region()) {
    if (::fdatasync(tmp.fd()) != 0) return ErrnoToStatus(errno, "fdatasync part");
    // A file from an earlier upload of this number whose catalog entry never came (a crash
    // between rename and record) would hide the region.
    if (::unlinkat(dir.get(), name.c_str(), 0) != 0 && errno != ENOENT) {
      return ErrnoToStatus(errno, "remove stale part file");
    }
    // The claim's mtime is the part's LastModified (ListParts).
    if (::utimensat(dir.get(), ClaimName(part_number).c_str(), nullptr, AT_SYMLINK_NOFOLLOW) != 0) {
      return ErrnoToStatus(errno, "touch part claim");
    }
    return Status::Ok();
  }
  if (::fsync(tmp.fd()) != 0) return ErrnoToStatus(errno, "fsync part");
  if (::renameat(tmp.dir_fd(), tmp.name().c_str(), dir.get(), name.c_str()) != 0) {
    return ErrnoToStatus(errno, "rename part");
  }
  tmp.MarkPublished();
  return Status::Ok();
}

Result<FsRoot::PartLocation> FsRoot::LocatePart(const std::string& upload_id,
                                                int part_number) const {
  if (!IsValidUploadId(upload_id)) return BadUploadId();
  REELFS_ASSIGN_OR_RETURN(UniqueFd dir, OpenDirAt(uploads_.get(), upload_id.c_str()));
  std::string name = std::to_string(part_number);
  int fd = ::openat(dir.get(), name.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  if (fd >= 0) return PartLocation{UniqueFd(fd), 0, false};
  if (errno != ENOENT) return ErrnoToStatus(errno, "open part " + name);
  struct stat sb {};
  if (::fstatat(dir.get(), ClaimName(part_number).c_str(), &sb, AT_SYMLINK_NOFOLLOW) != 0) {
    return NoSuchPart(part_number);
  }
  REELFS_ASSIGN_OR_RETURN(std::optional<uint64_t> slot, ReadSlot(dir.get()));
  if (!slot.has_value()) return NoSuchPart(part_number);
  fd = ::openat(dir.get(), kDataName, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return NoSuchPart(part_number);
  return PartLocation{UniqueFd(fd), static_cast<uint64_t>(part_number - 1) * *slot, true};
}

Result<FileStat> FsRoot::StatPart(const std::string& upload_id, int part_number) const {
  if (!IsValidUploadId(upload_id)) return BadUploadId();
  REELFS_ASSIGN_OR_RETURN(UniqueFd dir, OpenDirAt(uploads_.get(), upload_id.c_str()));
  struct stat sb {};
  if (StatAt(dir.get(), std::to_string(part_number), &sb).ok() ||
      StatAt(dir.get(), ClaimName(part_number), &sb).ok()) {
    return ToFileStat(sb);
  }
  return NoSuchPart(part_number);
}

Result<std::optional<uint64_t>> FsRoot::UploadSlot(const std::string& upload_id) const {
  if (!IsValidUploadId(upload_id)) return BadUploadId();
  REELFS_ASSIGN_OR_RETURN(UniqueFd dir, OpenDirAt(uploads_.get(), upload_id.c_str()));
  return ReadSlot(dir.get());
}

Result<TmpFile> FsRoot::TakeUploadData(const std::string& upload_id, uint64_t size) {
  if (!IsValidUploadId(upload_id)) return BadUploadId();
  REELFS_ASSIGN_OR_RETURN(UniqueFd dir, OpenDirAt(uploads_.get(), upload_id.c_str()));
  static std::atomic<uint64_t> counter{0};
  std::string name = "complete-" + RandomHex(8) + "-" + std::to_string(++counter);
  if (::renameat(dir.get(), kDataName, tmp_.get(), name.c_str()) != 0) {
    return ErrnoToStatus(errno, "take upload data file");
  }
  int fd = ::openat(tmp_.get(), name.c_str(), O_RDWR | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) {
    Status st = ErrnoToStatus(errno, "open assembled upload");
    ::renameat(tmp_.get(), name.c_str(), dir.get(), kDataName);
    return st;
  }
  TmpFile tmp(tmp_.get(), std::move(name), UniqueFd(fd));
  if (::ftruncate(tmp.fd(), static_cast<off_t>(size)) != 0) {
    Status st = ErrnoToStatus(errno, "truncate assembled upload");
    ReturnUploadData(tmp, upload_id).IgnoreError();
    return st;
  }
  return tmp;
}

Status FsRoot::ReturnUploadData(TmpFile& tmp, const std::string& upload_id) {
  if (!IsValidUploadId(upload_id)) return BadUploadId();
  REELFS_ASSIGN_OR_RETURN(UniqueFd dir, OpenDirAt(uploads_.get(), upload_id.c_str()));
  if (tmp.name().empty()) return Status::FailedPrecondition("assembled upload already published");
  if (::renameat(tmp.dir_fd(), tmp.name().c_str(), dir.get(), kDataName) != 0) {
    return ErrnoToStatus(errno, "return upload data file");
  }
  tmp.MarkPublished();
  return Status::Ok();
}

Status FsRoot::RemoveUploadDir(const std::string& upload_id) {
  if (!IsValidUploadId(upload_id)) return BadUploadId();
  int fd = ::openat(uploads_.get(), upload_id.c_str(), kDirFlags);
  if (fd < 0) return Status::Ok();
  UniqueFd dir_fd(fd);
  int dup_fd = ::openat(dir_fd.get(), ".", kDirFlags);
  DirHandle dir(dup_fd >= 0 ? ::fdopendir(dup_fd) : nullptr);
  if (!dir && dup_fd >= 0) ::close(dup_fd);
  while (dir) {
    dirent* ent = ::readdir(dir.get());
    if (ent == nullptr) break;
    std::string_view name = ent->d_name;
    if (name == "." || name == "..") continue;
    ::unlinkat(dir_fd.get(), ent->d_name, 0);
  }
  if (::unlinkat(uploads_.get(), upload_id.c_str(), AT_REMOVEDIR) != 0 && errno != ENOENT) {
    return ErrnoToStatus(errno, "remove upload dir");
  }
  return Status::Ok();
}

}  // namespace reelfs::gateway

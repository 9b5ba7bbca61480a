// Clang thread-safety annotations (no-ops on other compilers), checked by clang's
// -Wthread-safety (REELFS_THREAD_SAFETY=ON). Only capability types can be named: use
// reelfs::Mutex (common/mutex.h). Lock order is written beside each mutex declaration; helpers
// that need a held lock end in `Locked` (docs/conventions-threads.md).
#pragma once

#if defined(__clang__)
#define REELFS_THREAD_ANNOTATION_(x) __attribute__((x))
#else
#define REELFS_THREAD_ANNOTATION_(x)
#endif

#define CAPABILITY(x) REELFS_THREAD_ANNOTATION_(capability(x))
#define SCOPED_CAPABILITY REELFS_THREAD_ANNOTATION_(scoped_lockable)
#define GUARDED_BY(x) REELFS_THREAD_ANNOTATION_(guarded_by(x))
#define PT_GUARDED_BY(x) REELFS_THREAD_ANNOTATION_(pt_guarded_by(x))
#define REQUIRES(...) REELFS_THREAD_ANNOTATION_(requires_capability(__VA_ARGS__))
#define EXCLUDES(...) REELFS_THREAD_ANNOTATION_(locks_excluded(__VA_ARGS__))
#define ACQUIRE(...) REELFS_THREAD_ANNOTATION_(acquire_capability(__VA_ARGS__))
#define RELEASE(...) REELFS_THREAD_ANNOTATION_(release_capability(__VA_ARGS__))
#define TRY_ACQUIRE(...) REELFS_THREAD_ANNOTATION_(try_acquire_capability(__VA_ARGS__))
#define ASSERT_CAPABILITY(x) REELFS_THREAD_ANNOTATION_(assert_capability(x))
#define RETURN_CAPABILITY(x) REELFS_THREAD_ANNOTATION_(lock_returned(x))
// For the rare function the analysis cannot follow; say why beside each use.
#define NO_THREAD_SAFETY_ANALYSIS REELFS_THREAD_ANNOTATION_(no_thread_safety_analysis)

// Clang thread-safety annotations (no-ops on other compilers). Lock order is written beside each
// mutex declaration; helpers that need a held lock end in `Locked` (style.md §I.8).
#pragma once

#if defined(__clang__)
#define REELFS_THREAD_ANNOTATION_(x) __attribute__((x))
#else
#define REELFS_THREAD_ANNOTATION_(x)
#endif

#define GUARDED_BY(x) REELFS_THREAD_ANNOTATION_(guarded_by(x))
#define PT_GUARDED_BY(x) REELFS_THREAD_ANNOTATION_(pt_guarded_by(x))
#define REQUIRES(...) REELFS_THREAD_ANNOTATION_(requires_capability(__VA_ARGS__))
#define EXCLUDES(...) REELFS_THREAD_ANNOTATION_(locks_excluded(__VA_ARGS__))

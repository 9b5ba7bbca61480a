// The single include of libfuse for fuse/lowlevel: pins the API version before <fuse_lowlevel.h>
// (which refuses to compile without FUSE_USE_VERSION) so every file agrees on it.
//
// 3.12 is the first API level with fuse_loop_cfg_create()/fuse_loop_cfg_set_max_threads(), which
// the daemon's multithreaded loop uses; the build requires libfuse >= 3.14 (Debian 12).
//
// Thread-safety: declarations only.
#pragma once

#ifndef FUSE_USE_VERSION
#define FUSE_USE_VERSION 312  // FUSE_MAKE_VERSION(3, 12)
#endif

#include <fuse_lowlevel.h>

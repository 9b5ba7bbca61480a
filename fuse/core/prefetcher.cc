#include "fuse/core/prefetcher.h"

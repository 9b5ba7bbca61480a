#include "fuse/core/filesystem.h"

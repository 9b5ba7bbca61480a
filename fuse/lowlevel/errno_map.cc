#include "fuse/lowlevel/errno_map.h"

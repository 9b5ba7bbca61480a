#include "s3/protocol/restore_header.h"

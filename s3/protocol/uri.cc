#include "s3/protocol/uri.h"

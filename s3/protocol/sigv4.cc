#include "s3/protocol/sigv4.h"

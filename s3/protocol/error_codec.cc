#include "s3/protocol/error_codec.h"

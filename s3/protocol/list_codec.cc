#include "s3/protocol/list_codec.h"

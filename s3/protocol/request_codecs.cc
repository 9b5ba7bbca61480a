#include "s3/protocol/request_codecs.h"

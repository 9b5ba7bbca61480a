#include "s3/protocol/time_format.h"

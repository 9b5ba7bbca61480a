#include "s3/protocol/range.h"

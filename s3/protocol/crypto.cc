#include "s3/protocol/crypto.h"

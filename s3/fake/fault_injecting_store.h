#pragma once
#include "s3/object_store.h"

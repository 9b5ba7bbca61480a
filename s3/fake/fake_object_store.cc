#include "s3/fake/fake_object_store.h"

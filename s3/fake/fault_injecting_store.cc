#include "s3/fake/fault_injecting_store.h"

#include "common/timer.h"
// Implemented by the timer change (placeholder so the build configures).

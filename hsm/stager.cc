#include "hsm/stager.h"
// Placeholder: implemented in its own change.

#include "hsm/restorer.h"
// Placeholder: implemented in its own change.

#include "hsm/ledger.h"
// Placeholder: implemented in its own change.

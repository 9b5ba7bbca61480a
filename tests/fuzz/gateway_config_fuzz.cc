// The gateway's YAML configuration (gateway/config_loader.h): the whole document, with its
// archive:, tape: (tape::LoadLibraryConfigYaml) and faults: sections. Every failure must be a
// Status, never an exception or a crash.
#include "gateway/config_loader.h"
#include "tests/fuzz/fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  reelfs::gateway::Options options;
  (void)reelfs::gateway::LoadConfigString(reelfs::fuzz::AsView(data, size), "fuzz.yaml", &options);
  return 0;
}

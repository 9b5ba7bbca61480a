#include "cli/tape_commands.h"
// Placeholder until the stage/status/wait change lands: no subcommands yet.
namespace reelfs::cli {
void TapeCommands::Register(CLI::App&) {}
bool TapeCommands::Selected() const { return false; }
int TapeCommands::Run(const EndpointStoreFactory&, const std::string&) { return kExitUsage; }
}  // namespace reelfs::cli

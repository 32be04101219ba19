// berth: the CLI (docs/cli.md).
#include "cli/cli.h"

int main(int argc, char** argv) { return berth::cli::Main(argc, argv); }

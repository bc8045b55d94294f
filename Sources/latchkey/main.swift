import CLI
import Glibc

/// `latchkey <subcommand> …` — see `latchkey --help` (CLI.LatchkeyCLI).
exit(LatchkeyCLI.runProcess(Array(CommandLine.arguments.dropFirst())))

import CLI
import Glibc

/// `latchkey <subcommand> …` — see `latchkey --help` (CLI.LatchkeyCLI).
let status = LatchkeyCLI.runProcess(Array(CommandLine.arguments.dropFirst()))
// Flushed, then _exit: exit(3)'s teardown (atexit handlers, the runtime's own) must not race a
// thread that has not ended yet — a daemon's connection or device thread (`latchkey rig` once
// ended with SIGSEGV after "rig stopped"). Everything the process owns was closed by its code.
fflush(nil)
_exit(status)

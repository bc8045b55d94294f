import CSystemIO
import Glibc

/// What a process holding secrets does first.
public enum ProcessHardening {
    /// No core dump, ever (RLIMIT_CORE 0, soft and hard), and not dumpable (PR_SET_DUMPABLE 0):
    /// a crash writes no master, wrapping, credential key or PIN to disk, and other processes
    /// of the same user can neither ptrace-attach nor read this memory through /proc. A YubiKey
    /// never shows its secrets to the host; this is the nearest a process gets.
    public static func disableCoreDumps() throws(Errno) {
        guard lk_disable_core_dumps() == 0 else { throw Errno.current }
    }

    /// Crash signals back to their default action (death), replacing the Swift runtime's
    /// backtracer: its crash report, written to standard error (the key's log), shows the
    /// memory each register points at — on a crash in crypto code, key material.
    public static func dropCrashHandlers() {
        for signal in [SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGTRAP, SIGABRT] {
            Glibc.signal(signal, SIG_DFL)
        }
    }

    /// Whether a crash of this process could write a core dump (dumpable, RLIMIT_CORE above 0).
    public static var mayDumpCore: Bool {
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_CORE.rawValue), &limit) == 0 else { return true }
        return lk_is_dumpable() != 0 || limit.rlim_cur != 0 || limit.rlim_max != 0
    }
}

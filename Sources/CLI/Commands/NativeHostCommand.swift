import CredentialStore
import FIDOClient
import Foundation
import SignalBridge
import SystemIO

/// `latchkey native-host`: started by the browser for Latchkey's extension (through the launcher
/// `latchkey bridge install` writes), it applies websites' signals to a key's store. The protocol
/// and the messages are SignalBridge's (`NativeHost`, `NativeHostSession`); this is the wiring:
/// which store, the public suffix list, stdin/stdout, a log on stderr (the browser keeps it).
public enum NativeHostCommand {
    public static let spec = CommandSpec(
        name: "native-host",
        abstract: "The browser extension's native-messaging host (started by the browser; see `latchkey bridge`).",
        positionals: ["browser-argument..."], minimumPositionals: 0, maximumPositionals: 2,
        options: CommandTarget.storeOptions + [
            .init("public-suffix-list", value: "FILE",
                  help: "The Public Suffix List (default: Debian's \(PublicSuffixList.debianPath))."),
        ])

    public static func run(_ parsed: ParsedArguments, io: CommandIO = .standard) throws(UsageError) -> Int32 {
        try CLIError.run(io) { () throws(CLIError) -> Int32 in
            guard case let .store(directory, _) = try CommandTarget.resolve(parsed, environment: io.environment) else {
                throw .usage("the native host works on a store (--name or --store)")
            }
            let suffixPath = parsed.value("public-suffix-list") ?? PublicSuffixList.debianPath
            let log = { (line: String) in io.err("latchkey native-host: " + line) }
            // Chromium passes the caller's origin (chrome-extension://ID/); Firefox the manifest's
            // path, then the add-on's ID.
            let caller = parsed.positionals.last ?? "unknown"
            // Only Latchkey's own extension may drive the host: the manifest allows only it, but
            // the host is an ordinary program, and a browser names the caller on its command line.
            guard BridgeInstallation.isLatchkeyExtension(caller: caller) else {
                log("refusing: the caller '\(caller.prefix(200))' is not Latchkey's extension (\(BridgeInstallation.callers.joined(separator: " or ")))")
                let refusal = NativeHostSession.failure(id: nil, .security("this native host serves Latchkey's own extension only"))
                try? FileDescriptor(owning: 1).writeAll(NativeMessageFraming.frame(Array(refusal.utf8)))
                return 1
            }
            // The time of the extension's last message, written at most once a minute (a file
            // rename a message would be too much for a burst of signals), and for the first one.
            var contactRecordedAt: Int64?
            let session = NativeHostSession(
                openStore: { () throws(SignalFailure) -> SQLiteCredentialStore in
                    do throws(CLIError) {
                        return try LocalStore.openExisting(directory: directory)
                    } catch {
                        switch error {
                        case .failure(let message): throw .internal(message)
                        case .usage(let usage): throw .internal(usage.message)
                        }
                    }
                },
                loadSuffixes: { () throws(SignalFailure) in try PublicSuffixList.load(path: suffixPath) },
                openKey: { (timeout: UInt64) throws(SignalFailure) -> CTAP2Link in
                    try runningKey(directory: directory, timeoutMilliseconds: timeout)
                },
                now: { Double(MonotonicClock.nanoseconds()) / 1e9 },
                log: log)
            return NativeHost.run(session: session, input: FileDescriptor(owning: 0), output: FileDescriptor(owning: 1),
                                  log: log) {
                let now = Int64(time(nil))
                if let recorded = contactRecordedAt, now >= recorded, now - recorded < 60 { return }
                contactRecordedAt = now
                BridgeContact(time: now, caller: caller).write(storeDirectory: directory)
            }
        }
    }

    /// The passkey provider's link to the key running on the store (its `serving` record): the
    /// user's own key, never another device, so its presence and UV providers ask the user.
    static func runningKey(directory: String, timeoutMilliseconds: UInt64) throws(SignalFailure) -> CTAP2Link {
        let selection: DeviceSelection?
        do throws(CLIError) {
            // Only a key that proves it holds this store gets the person's PIN or a ceremony.
            selection = try LocalStore.servingDevice(directory: directory, proofKey: { () throws(CLIError) in
                let store = try LocalStore.openExisting(directory: directory)
                defer { store.close() }
                return store.proofKey
            })
        } catch {
            switch error {
            case .failure(let message): throw .internal(message)
            case .usage(let usage): throw .internal(usage.message)
            }
        }
        guard let selection else {
            throw .internal("no key is running on the store \(directory) (start it: `latchkey serve --store \(directory)`)")
        }
        do throws(DeviceError) {
            // KEEPALIVEs come every 100 ms while the key waits for its user: the reply timeout bounds
            // silence only; the keepalive limit is the ceremony's timeout (then CTAPHID_CANCEL).
            return try CTAPHIDLink.open(selection, replyTimeoutMilliseconds: 5_000, keepaliveLimitMilliseconds: timeoutMilliseconds)
        } catch {
            throw .internal("the key running on \(directory) cannot be reached (\(error.message))")
        }
    }
}

import Authenticator
import CBOR
import CredentialStore
import Exchange
import FIDOClient
import Foundation
import Encoding

/// `latchkey signal all-accepted|unknown|current-user`: the WebAuthn Signal API's three calls
/// (docs/architecture.md, Credentials and the store), which browsers do not pass to security keys.
///
/// On a store they hide, un-hide and rename — nothing is deleted, and hidden credentials are
/// purged after the retention period (30 days). A device cannot hide a credential, so on a
/// device (`--device`/`--socket`) all-accepted and unknown delete, after confirmation, through
/// credential management; current-user is updateUserInformation.
public enum SignalCommand {
    static let rpOption = CommandSpec.Option("rp", value: "RPID", help: "The relying party (required).")
    static let userHandleOption = CommandSpec.Option("user-handle", value: "B64URL", help: "The user handle, base64url (required).")
    static let yesOption = CommandSpec.Option("yes", help: "On a device, delete without asking (required without a terminal).")
    static let targetOptions = CommandTarget.storeOptions + CommandTarget.deviceOptions

    public static let allAcceptedSpec = CommandSpec(
        name: "signal all-accepted",
        abstract: "signalAllAcceptedCredentials: hide this user's credentials at the RP whose IDs are not listed, un-hide listed ones.",
        positionals: ["credential-id..."], minimumPositionals: 0, maximumPositionals: Int.max,
        options: targetOptions + [rpOption, userHandleOption,
                                  .init("ids-file", value: "FILE", help: "Accepted IDs, one base64url per line (an empty file accepts none)."),
                                  yesOption, CredentialsCommand.jsonOption])
    public static let unknownSpec = CommandSpec(
        name: "signal unknown", abstract: "signalUnknownCredential: hide this credential of the RP.",
        positionals: ["credential-id"], minimumPositionals: 1,
        options: targetOptions + [rpOption, yesOption, CredentialsCommand.jsonOption])
    public static let currentUserSpec = CommandSpec(
        name: "signal current-user", abstract: "signalCurrentUserDetails: rename this user's credentials at the RP.",
        options: targetOptions + [rpOption, userHandleOption,
                                  .init("user-name", value: "NAME", help: "The user's current name."),
                                  .init("display-name", value: "NAME", help: "The user's current display name."),
                                  CredentialsCommand.jsonOption])

    public static let logSpec = CommandSpec(
        name: "signal log", abstract: "The signals applied to a store: when, from which site (or cli), and what they hid, un-hid or renamed.",
        options: CommandTarget.storeOptions + [.init("limit", value: "N", help: "Only the newest N entries (default: all kept, 10,000)."),
                                               CredentialsCommand.jsonOption])

    public static func group(io: @escaping @Sendable () -> CommandIO = { .standard }) -> CommandGroup {
        CommandGroup(name: "signal", abstract: "Apply a WebAuthn signal (all-accepted, unknown, current-user) to a store or device; show the log.",
                     members: [
                        .init(spec: allAcceptedSpec) { parsed throws(UsageError) in try allAccepted(parsed, io: io()) },
                        .init(spec: unknownSpec) { parsed throws(UsageError) in try unknown(parsed, io: io()) },
                        .init(spec: currentUserSpec) { parsed throws(UsageError) in try currentUser(parsed, io: io()) },
                        .init(spec: logSpec) { parsed throws(UsageError) in try log(parsed, io: io()) },
                     ])
    }

    public static var spec: CommandSpec { group().spec }
    public static func run(_ parsed: ParsedArguments) throws(UsageError) -> Int32 { try group().run(parsed) }

    static let retentionNote = "hidden credentials are not offered to relying parties and are purged after "
        + "\(StoreOptions().hiddenRetentionSeconds / 86_400) days; a later all-accepted that lists them brings them back"
    static let deviceNote = "a security key cannot hide credentials: on a device, this signal deletes them"

    /// The warning for hidden credentials a site may have encrypted data with: hidden is not
    /// deleted (`credentials unhide` brings it back before the purge), and the site's
    /// prfUsageDetails link when an earlier `--endpoints` cached one (a signal asks no site).
    static func prfNote(_ prf: [[UInt8]], rpID: String, io: CommandIO) -> String {
        guard !prf.isEmpty else { return "" }
        var note = "\nWarning: \(Wording.count(prf.count, "hidden credential")) gave PRF (hmac-secret) outputs: \(DisplayText.safe(rpID)) "
            + "may have encrypted data with \(prf.count == 1 ? "it" : "them") that nothing else opens; "
            + "`latchkey credentials unhide ID` brings one back before it is purged."
        if case let .found(endpoints)? = CredentialsCommand.endpointsClient(io: io).cachedEndpoints(rpID: rpID), let link = endpoints.prfUsageDetails {
            note += " The site says what depends on it: \(DisplayText.safe(link))"
        }
        return note
    }

    // MARK: - all-accepted

    static func allAccepted(_ parsed: ParsedArguments, io: CommandIO) throws(UsageError) -> Int32 {
        try CLIError.run(io) { () throws(CLIError) -> Int32 in
            let rpID = try required(parsed, "rp")
            let userHandle = try decodedOption(parsed, "user-handle")
            // Two kinds of list. IDs typed as arguments name this user's credentials, as
            // `credentials show` takes them (whole, or a unique prefix of 6 or more characters):
            // one that names none is an error and nothing changes — never "accept nothing" by a
            // typo. An --ids-file is the site's own list (signalAllAcceptedCredentials), which
            // names credentials on other authenticators too: whole IDs, those not here counted.
            for argument in parsed.positionals {
                guard Base64URL.isAlphabet(CredentialSummary.prefixText(argument)) else {
                    throw .usage("'\(argument)' is not a base64url credential ID")
                }
                try CredentialSummary.checkArgument(argument)
            }
            var fileIDs: [[UInt8]] = []
            if let file = parsed.value("ids-file") {
                fileIDs = try readIDs(file)
            } else if parsed.positionals.isEmpty {
                throw .usage("list the accepted credential IDs (or give --ids-file FILE; an empty file accepts none)")
            }
            /// The accepted IDs, once the user's credentials (hidden ones too) are known.
            func accepted(among candidates: [CredentialSummary]) throws(CLIError) -> Set<[UInt8]> {
                var ids = Set(fileIDs)
                for argument in parsed.positionals {
                    guard let found = try CredentialSummary.find(argument, in: candidates) else {
                        throw .failure("'\(argument)' names none of the \(Wording.count(candidates.count, "credential")) of user handle "
                                       + "\(Base64URL.encode(userHandle)) at \(DisplayText.safe(rpID)) (hidden ones included); "
                                       + "nothing changed. `latchkey credentials list --rp \(DisplayText.safe(rpID)) --all` shows them; "
                                       + "an empty --ids-file accepts none")
                    }
                    ids.insert(found.credentialID)
                }
                return ids
            }
            var result: [(String, JSONValue)] = [("signal", .string("all-accepted")), ("rpId", .string(rpID)),
                                                 ("userHandle", .string(Base64URL.encode(userHandle)))]
            let acceptedSet: Set<[UInt8]>
            let text: String
            switch try CommandTarget.resolve(parsed, environment: io.environment) {
            case let .store(directory, _):
                let store = try LocalStore.openExisting(directory: directory)
                defer { store.close() }
                let mine = try LocalStore.perform(directory) { () throws(StoreError) in try store.allResidentCredentials(includeHidden: true) }
                    .filter { $0.rpID == rpID && $0.userHandle == userHandle }.map { CredentialSummary($0) }
                acceptedSet = try accepted(among: mine)
                let acceptedIDs = Array(acceptedSet)
                result.append(("accepted", .int(acceptedSet.count)))
                let changed = try LocalStore.perform(directory) { () throws(StoreError) in
                    try store.signalAllAcceptedCredentials(rpID: rpID, userHandle: userHandle, acceptedIDs: acceptedIDs)
                }
                let prf = changed.hiddenAfterPRFUse
                result += [("store", .string(directory)), ("hidden", .int(changed.hidden.count)),
                           ("unhidden", .int(changed.unhidden.count)), ("deleted", .int(0)),
                           ("prfUsed", .array(prf.map { .string(Base64URL.encode($0)) }))]
                text = "all-accepted at \(rpID) for user handle \(Base64URL.encode(userHandle)) "
                    + "(\(Wording.count(acceptedSet.count, "accepted ID"))): "
                    + "\(Wording.count(changed.hidden.count, "credential")) hidden, \(changed.unhidden.count) un-hidden"
                    + (changed.hidden.isEmpty ? "." : ".\nNote: " + retentionNote + ".")
                    + prfNote(prf, rpID: rpID, io: io)
            case .device(let selection):
                let remote = try DeviceSession.connect(selection, io: io)
                let manager = try DeviceSession.credentialManager(remote, parsed: parsed, io: io)
                let users = try userCredentials(manager, rpID: rpID, userHandle: userHandle)
                acceptedSet = try accepted(among: users)
                result.append(("accepted", .int(acceptedSet.count)))
                let rejected = users.filter { !acceptedSet.contains($0.credentialID) }
                let deleted = try deleteAfterConfirmation(rejected, manager: manager, parsed: parsed, io: io)
                result += [("device", .string(remote.label)), ("hidden", .int(0)), ("unhidden", .int(0)),
                           ("deleted", .int(deleted)), ("kept", .int(users.count - deleted)), ("note", .string(deviceNote))]
                text = "all-accepted at \(rpID) for user handle \(Base64URL.encode(userHandle)) on \(remote.label): "
                    + "\(Wording.count(deleted, "credential")) deleted, \(users.count - deleted) kept.\n"
                    + "Note: " + deviceNote + "."
            }
            io.out(parsed.flag("json") ? JSONValue.object(result).rendered : text)
            return 0
        }
    }

    /// One base64url ID per line; blank lines and `#` comments are skipped.
    static func readIDs(_ path: String) throws(CLIError) -> [[UInt8]] {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw .failure("cannot read --ids-file \(path): \(String(cString: strerror(errno)))")
        }
        var ids: [[UInt8]] = []
        for (index, line) in String(decoding: data, as: UTF8.self).split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let text = line.trimmingCharacters(in: .whitespacesAndNewlines)
            if text.isEmpty || text.hasPrefix("#") { continue }
            guard let id = Base64URL.decode(text) else {
                throw .usage("--ids-file \(path) line \(index + 1): '\(text.prefix(40))' is not a base64url credential ID")
            }
            ids.append(id)
        }
        return ids
    }

    // MARK: - unknown

    static func unknown(_ parsed: ParsedArguments, io: CommandIO) throws(UsageError) -> Int32 {
        try CLIError.run(io) { () throws(CLIError) -> Int32 in
            let rpID = try required(parsed, "rp")
            // The credential as `credentials show/delete` take it: its whole ID, or a unique prefix
            // of at least 6 characters; one that is not there is an error (exit 1), as there.
            let argument = parsed.positionals[0]
            try CredentialSummary.checkArgument(argument)
            let text: String
            var result: [(String, JSONValue)] = [("signal", .string("unknown")), ("rpId", .string(rpID))]
            switch try CommandTarget.resolve(parsed, environment: io.environment) {
            case let .store(directory, _):
                let store = try LocalStore.openExisting(directory: directory)
                defer { store.close() }
                let credential = try CredentialsCommand.storeCredential(argument, store: store, directory: directory)
                guard credential.rpID == rpID else {
                    throw .failure("credential \(argument) is \(DisplayText.safe(credential.rpID))'s, not \(DisplayText.safe(rpID))'s; nothing changed")
                }
                let credentialID = credential.credentialID
                let encoded = Base64URL.encode(credentialID)
                result.append(("credentialId", .string(encoded)))
                let changes = try LocalStore.perform(directory) { () throws(StoreError) in
                    try store.signalUnknownCredential(rpID: rpID, credentialID: credentialID)
                }
                let hidden = changes.matched > 0
                let prf = changes.hiddenAfterPRFUse
                result += [("store", .string(directory)), ("hidden", .bool(hidden)), ("deleted", .bool(false)),
                           ("prfUsed", .array(prf.map { .string(Base64URL.encode($0)) }))]
                text = hidden
                    ? "unknown at \(rpID): credential \(encoded) is hidden.\nNote: " + retentionNote + "." + prfNote(prf, rpID: rpID, io: io)
                    : "unknown at \(rpID): credential \(encoded) was hidden already; nothing changed."
            case .device(let selection):
                let remote = try DeviceSession.connect(selection, io: io)
                let manager = try DeviceSession.credentialManager(remote, parsed: parsed, io: io)
                let found = try CredentialSummary.find(argument, in: try DeviceSession.summaries(manager, rpID: rpID))
                guard let found else {
                    throw .failure("\(remote.label) has no credential \(argument) of \(DisplayText.safe(rpID)); nothing changed")
                }
                let match = [found]
                let encoded = found.encodedID
                result.append(("credentialId", .string(encoded)))
                let deleted = try deleteAfterConfirmation(match, manager: manager, parsed: parsed, io: io)
                result += [("device", .string(remote.label)), ("hidden", .bool(false)), ("deleted", .bool(deleted > 0)),
                           ("note", .string(deviceNote))]
                if match.isEmpty {
                    text = "unknown at \(rpID): \(remote.label) has no credential \(encoded) of that RP; nothing changed."
                } else {
                    text = "unknown at \(rpID): credential \(encoded) deleted from \(remote.label).\nNote: " + deviceNote + "."
                }
            }
            io.out(parsed.flag("json") ? JSONValue.object(result).rendered : text)
            return 0
        }
    }

    // MARK: - current-user

    static func currentUser(_ parsed: ParsedArguments, io: CommandIO) throws(UsageError) -> Int32 {
        try CLIError.run(io) { () throws(CLIError) -> Int32 in
            let rpID = try required(parsed, "rp")
            let userHandle = try decodedOption(parsed, "user-handle")
            let name = parsed.value("user-name")
            let displayName = parsed.value("display-name")
            guard name != nil || displayName != nil else { throw .usage("give --user-name and/or --display-name") }
            var result: [(String, JSONValue)] = [("signal", .string("current-user")), ("rpId", .string(rpID)),
                                                 ("userHandle", .string(Base64URL.encode(userHandle))),
                                                 ("userName", .optional(name)), ("userDisplayName", .optional(displayName))]
            let renamed: Int
            let matched: Int
            let place: String
            switch try CommandTarget.resolve(parsed, environment: io.environment) {
            case let .store(directory, _):
                let store = try LocalStore.openExisting(directory: directory)
                defer { store.close() }
                let changes = try LocalStore.perform(directory) { () throws(StoreError) in
                    try store.signalCurrentUserDetails(rpID: rpID, userHandle: userHandle, name: name, displayName: displayName)
                }
                (renamed, matched) = (changes.renamed.count, changes.matched)
                result.append(("store", .string(directory)))
                place = "the store"
            case .device(let selection):
                let remote = try DeviceSession.connect(selection, io: io)
                let manager = try DeviceSession.credentialManager(remote, parsed: parsed, io: io)
                let users = try userCredentials(manager, rpID: rpID, userHandle: userHandle)
                do throws(DeviceError) {
                    for credential in users {
                        // updateUserInformation removes what it is not sent: keep the field not signalled.
                        try manager.updateUser(credentialID: credential.credentialID, userHandle: userHandle,
                                               name: name ?? credential.userName,
                                               displayName: displayName ?? credential.userDisplayName)
                    }
                } catch {
                    throw error.cliError
                }
                (renamed, matched) = (users.count, users.count)
                result.append(("device", .string(remote.label)))
                place = remote.label
            }
            result.append(("renamed", .int(renamed)))
            let names = ([name.map { "user name '\($0)'" }, displayName.map { "display name '\($0)'" }].compactMap { $0 })
                .joined(separator: ", ")
            let text = matched == 0
                ? "current-user at \(rpID): \(place) has no credential of user handle \(Base64URL.encode(userHandle)); nothing changed."
                : renamed == 0
                ? "current-user at \(rpID): the \(Wording.count(matched, "credential")) of user handle "
                    + "\(Base64URL.encode(userHandle)) already had \(names); nothing changed."
                : "current-user at \(rpID): \(Wording.count(renamed, "credential")) of user handle "
                    + "\(Base64URL.encode(userHandle)) renamed: " + names + "."
            io.out(parsed.flag("json") ? JSONValue.object(result).rendered : text)
            return 0
        }
    }

    // MARK: - log

    static func log(_ parsed: ParsedArguments, io: CommandIO) throws(UsageError) -> Int32 {
        try CLIError.run(io) { () throws(CLIError) -> Int32 in
            var limit = Int(SignalJournal.capacity)
            if let text = parsed.value("limit") {
                guard let value = Int(text), value > 0 else { throw .usage("--limit '\(text)' is not a positive number") }
                limit = value
            }
            guard case let .store(directory, _) = try CommandTarget.resolve(parsed, environment: io.environment) else {
                throw .usage("the signal log is a store's (--name or --store)")
            }
            let store = try LocalStore.openExisting(directory: directory)
            defer { store.close() }
            let entries = try LocalStore.perform(directory) { () throws(StoreError) in try store.signalJournal(limit: limit) }
            if parsed.flag("json") {
                let ids: ([[UInt8]]) -> JSONValue = { .array($0.map { .string(Base64URL.encode($0)) }) }
                io.out(JSONValue.object([("store", .string(directory)), ("entries", .array(entries.map { entry in
                    .object([("time", .string(CredentialSummary.timestamp(Int64(entry.time)))), ("source", .string(entry.source)), ("rpId", .string(entry.rpID)),
                             ("method", .string(entry.method)), ("matched", .int(entry.changes.matched)),
                             ("hidden", ids(entry.changes.hidden)), ("unhidden", ids(entry.changes.unhidden)),
                             ("renamed", ids(entry.changes.renamed))])
                }))]).rendered)
                return 0
            }
            guard !entries.isEmpty else {
                io.out("No signal has been applied to the store \(directory).")
                return 0
            }
            io.out("\(Wording.count(entries.count, "signal")) applied to the store \(directory), oldest first:")
            for entry in entries {
                var changed: [String] = []
                for (verb, list) in [("hid", entry.changes.hidden), ("un-hid", entry.changes.unhidden), ("renamed", entry.changes.renamed)]
                where !list.isEmpty {
                    changed.append("\(verb) " + list.map { CredentialSummary.shortened(Base64URL.encode($0)) }.joined(separator: ", "))
                }
                io.out("  \(CredentialSummary.timestamp(entry.time))  \(DisplayText.safe(entry.source))  \(entry.method) at \(DisplayText.safe(entry.rpID)): "
                    + (changed.isEmpty ? "no change" : changed.joined(separator: "; ")))
            }
            return 0
        }
    }

    // MARK: - Shared

    static func required(_ parsed: ParsedArguments, _ option: String) throws(CLIError) -> String {
        guard let value = parsed.value(option), !value.isEmpty else { throw .usage("--\(option) is required") }
        return value
    }

    static func decodedOption(_ parsed: ParsedArguments, _ option: String) throws(CLIError) -> [UInt8] {
        let text = try required(parsed, option)
        guard let bytes = Base64URL.decode(text), !bytes.isEmpty else {
            throw .usage("--\(option) '\(text)' is not base64url")
        }
        return bytes
    }

    /// The device's credentials of one user at one RP.
    static func userCredentials(_ manager: RemoteCredentialManager, rpID: String,
                                userHandle: [UInt8]) throws(CLIError) -> [CredentialSummary] {
        try DeviceSession.summaries(manager, rpID: rpID).filter { $0.userHandle == userHandle }
    }

    /// Deletes `credentials` from the device once the user agreed (or --yes); how many were deleted.
    static func deleteAfterConfirmation(_ credentials: [CredentialSummary], manager: RemoteCredentialManager,
                                        parsed: ParsedArguments, io: CommandIO) throws(CLIError) -> Int {
        guard !credentials.isEmpty else { return 0 }
        if !parsed.flag("yes") {
            let list = credentials.map { "\($0.encodedID) (\($0.userLabel))" }.joined(separator: ", ")
            let question = "\(manager.label) cannot hide credentials; delete \(Wording.count(credentials.count, "credential")) "
                + "at \(credentials[0].shownRPID) for good: \(list)?"
            let confirmed: Bool
            do {
                confirmed = try io.confirm(question)
            } catch {
                throw .usage(error)
            }
            guard confirmed else { throw .failure("nothing deleted") }
        }
        do throws(DeviceError) {
            for credential in credentials { try manager.delete(credentialID: credential.credentialID) }
        } catch {
            throw error.cliError
        }
        return credentials.count
    }
}

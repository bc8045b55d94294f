import Authenticator
import CBOR
import CredentialStore
import Exchange
import FIDOClient
import Encoding

/// `latchkey credentials list|show|delete|rename|unhide`: the discoverable credentials of a key's
/// store (works while `latchkey serve` runs on it) or of any CTAP 2.1 key over credential
/// management; `unhide` (a store only) undoes a signal's hide.
public enum CredentialsCommand {
    static let rpOption = CommandSpec.Option("rp", value: "RPID", help: "Only credentials of this relying party.")
    static let jsonOption = CommandSpec.Option("json", help: "Print the result as JSON.")
    static let targetOptions = CommandTarget.storeOptions + CommandTarget.deviceOptions

    public static let listSpec = CommandSpec(
        name: "credentials list", abstract: "List discoverable credentials (IDs shortened; --json shows them whole).",
        options: targetOptions + [rpOption, .init("all", help: "Include hidden credentials (a store's signals hide them)."), endpointsOption,
                                  jsonOption])
    public static let showSpec = CommandSpec(
        name: "credentials show", abstract: "Show one credential in full.", positionals: ["credential-id"],
        minimumPositionals: 1, options: targetOptions + [endpointsOption, jsonOption])
    public static let deleteSpec = CommandSpec(
        name: "credentials delete", abstract: "Delete one credential, for good (asks first unless --yes).",
        positionals: ["credential-id"], minimumPositionals: 1,
        options: targetOptions + [.init("yes", help: "Do not ask for confirmation (required without a terminal)."), endpointsOption,
                                  jsonOption])
    public static let renameSpec = CommandSpec(
        name: "credentials rename", abstract: "Change a credential's user name and/or display name.",
        positionals: ["credential-id"], minimumPositionals: 1,
        options: targetOptions + [
            .init("user-name", value: "NAME", help: "New user name (empty: remove it)."),
            .init("display-name", value: "NAME", help: "New display name (empty: remove it)."),
            jsonOption,
        ])

    public static let unhideSpec = CommandSpec(
        name: "credentials unhide", abstract: "Make a credential a signal hid visible again (a store; `signal log` shows what was hidden).",
        positionals: ["credential-id"], minimumPositionals: 1, options: CommandTarget.storeOptions + [jsonOption])

    public static func group(io: @escaping @Sendable () -> CommandIO = { .standard }) -> CommandGroup {
        CommandGroup(name: "credentials", abstract: "List, show, delete, rename or unhide discoverable credentials (store or device).",
                     members: [
                        .init(spec: listSpec) { parsed throws(UsageError) in try list(parsed, io: io()) },
                        .init(spec: showSpec) { parsed throws(UsageError) in try show(parsed, io: io()) },
                        .init(spec: deleteSpec) { parsed throws(UsageError) in try delete(parsed, io: io()) },
                        .init(spec: renameSpec) { parsed throws(UsageError) in try rename(parsed, io: io()) },
                        .init(spec: unhideSpec) { parsed throws(UsageError) in try unhide(parsed, io: io()) },
                     ])
    }

    /// For `latchkey`'s subcommand table.
    public static var spec: CommandSpec { group().spec }
    public static func run(_ parsed: ParsedArguments) throws(UsageError) -> Int32 { try group().run(parsed) }

    // MARK: - list

    static func list(_ parsed: ParsedArguments, io: CommandIO) throws(UsageError) -> Int32 {
        try CLIError.run(io) { () throws(CLIError) -> Int32 in
            let rpID = parsed.value("rp")
            let json = parsed.flag("json")
            switch try CommandTarget.resolve(parsed, environment: io.environment) {
            case let .store(directory, _):
                let store = try LocalStore.openExisting(directory: directory)
                defer { store.close() }
                let everything = try storeSummaries(store, directory: directory, includeHidden: true, rpID: rpID)
                let credentials = parsed.flag("all") ? everything : everything.filter { $0.hiddenSince == nil }
                let unshown = everything.count - credentials.count
                var endpoints: [(String, PasskeyEndpointsClient.Outcome)] = []
                if parsed.flag("endpoints") {
                    let client = endpointsClient(io: io)
                    let rpIDs = credentials.reduce(into: [String]()) { if !$0.contains($1.rpID) { $0.append($1.rpID) } }
                    endpoints = rpIDs.map { ($0, client.endpoints(rpID: $0)) }
                }
                if json {
                    var members: [(String, JSONValue)] = [("store", .string(directory)), ("credentials", .array(credentials.map(\.json))),
                                                          ("hiddenNotListed", .int(unshown))]
                    if !endpoints.isEmpty { members.append(("endpoints", .object(endpoints.map { ($0.0, endpointsJSON($0.1)) }))) }
                    io.out(JSONValue.object(members).rendered)
                } else {
                    defer {
                        if !endpoints.isEmpty { io.out("Passkey endpoints:") }
                        for (rp, outcome) in endpoints {
                            io.out("  \(DisplayText.safe(rp)): " + endpointsLines(outcome).joined(separator: "; "))
                        }
                    }
                    let hidden = credentials.filter { $0.hiddenSince != nil }.count
                    var heading = "\(Wording.count(credentials.count, "credential"))\(rpID.map { " of \($0)" } ?? "") in the store \(directory)"
                    if parsed.flag("all") { heading += " (\(hidden) hidden)" }
                    io.out(heading + (credentials.isEmpty ? "." : ":"))
                    if !credentials.isEmpty {
                        io.out(CredentialSummary.table(credentials, showHidden: parsed.flag("all")).joined(separator: "\n"))
                    }
                    // Hidden ones (a site's signal, `signal`) are not offered; say they are there.
                    if unshown > 0 {
                        io.out("\(Wording.count(unshown, "hidden credential")) not listed (`--all` lists \(unshown == 1 ? "it" : "them"); "
                               + "`credentials unhide ID` brings one back).")
                    }
                }
            case .device(let selection):
                let remote = try DeviceSession.connect(selection, io: io)
                let manager = try DeviceSession.credentialManager(remote, parsed: parsed, io: io)
                let credentials = try DeviceSession.summaries(manager, rpID: rpID)
                if json {
                    io.out(JSONValue.object([("device", .string(remote.label)),
                                             ("credentials", .array(credentials.map(\.json)))]).rendered)
                } else {
                    io.out("\(Wording.count(credentials.count, "credential"))\(rpID.map { " of \($0)" } ?? "") on \(remote.label)"
                        + (credentials.isEmpty ? "." : ":"))
                    if !credentials.isEmpty {
                        io.out(CredentialSummary.table(credentials, showHidden: false).joined(separator: "\n"))
                    }
                }
            }
            return 0
        }
    }

    /// The store's credentials, by RP ID, newest first within an RP.
    static func storeSummaries(_ store: SQLiteCredentialStore, directory: String, includeHidden: Bool,
                               rpID: String?) throws(CLIError) -> [CredentialSummary] {
        let credentials = try LocalStore.perform(directory) { () throws(StoreError) in
            try store.allResidentCredentials(includeHidden: includeHidden)
        }
        return credentials
            .filter { rpID == nil || $0.rpID == rpID }
            .map { CredentialSummary($0) }
            .sorted { ($0.rpID, -($0.createdAt ?? 0)) < ($1.rpID, -($1.createdAt ?? 0)) }
    }

    // MARK: - show

    static func show(_ parsed: ParsedArguments, io: CommandIO) throws(UsageError) -> Int32 {
        try CLIError.run(io) { () throws(CLIError) -> Int32 in
            let argument = try credentialArgument(parsed)
            let summary: CredentialSummary
            var retention: Int64?
            switch try CommandTarget.resolve(parsed, environment: io.environment) {
            case let .store(directory, _):
                let store = try LocalStore.openExisting(directory: directory)
                defer { store.close() }
                summary = CredentialSummary(try storeCredential(argument, store: store, directory: directory))
                retention = StoreOptions().hiddenRetentionSeconds
            case .device(let selection):
                let remote = try DeviceSession.connect(selection, io: io)
                let manager = try DeviceSession.credentialManager(remote, parsed: parsed, io: io)
                summary = try deviceCredential(argument, manager: manager)
            }
            let endpoints = parsed.flag("endpoints") ? endpointsClient(io: io).endpoints(rpID: summary.rpID) : nil
            if parsed.flag("json") {
                guard let endpoints, case let .object(members) = summary.json else {
                    io.out(summary.json.rendered)
                    return 0
                }
                io.out(JSONValue.object(members + [("endpoints", endpointsJSON(endpoints))]).rendered)
            } else {
                io.out(summary.details(retentionSeconds: retention).joined(separator: "\n"))
                if let endpoints {
                    io.out("  Passkey endpoints of \(summary.shownRPID):")
                    for line in endpointsLines(endpoints) { io.out("    " + line) }
                }
            }
            return 0
        }
    }

    // MARK: - delete

    static func delete(_ parsed: ParsedArguments, io: CommandIO) throws(UsageError) -> Int32 {
        try CLIError.run(io) { () throws(CLIError) -> Int32 in
            let argument = try credentialArgument(parsed)
            switch try CommandTarget.resolve(parsed, environment: io.environment) {
            case let .store(directory, _):
                let store = try LocalStore.openExisting(directory: directory)
                defer { store.close() }
                let credential = try storeCredential(argument, store: store, directory: directory)
                let summary = CredentialSummary(credential)
                if let warning = prfWarning(rpID: credential.rpID, usedPRF: credential.usedHMACSecret, parsed: parsed, io: io) {
                    io.err("Warning: " + warning)
                }
                guard try confirmDeletion(summary, from: "the store \(directory)", parsed: parsed, io: io) else { return 1 }
                let deleted = try LocalStore.perform(directory) { () throws(StoreError) in
                    try store.deleteResidentCredential(id: summary.credentialID)
                }
                guard deleted else { throw .failure("credential \(summary.encodedID) was deleted meanwhile") }
                report(deleted: summary, json: parsed.flag("json"), io: io)
            case .device(let selection):
                let remote = try DeviceSession.connect(selection, io: io)
                let manager = try DeviceSession.credentialManager(remote, parsed: parsed, io: io)
                let summary = try deviceCredential(argument, manager: manager)
                guard try confirmDeletion(summary, from: remote.label, parsed: parsed, io: io) else { return 1 }
                do throws(DeviceError) {
                    try manager.delete(credentialID: summary.credentialID)
                } catch {
                    throw error.cliError
                }
                report(deleted: summary, json: parsed.flag("json"), io: io)
            }
            return 0
        }
    }

    /// Asks on the terminal unless --yes; without a terminal and without --yes, a usage error.
    static func confirmDeletion(_ summary: CredentialSummary, from place: String, parsed: ParsedArguments,
                                io: CommandIO) throws(CLIError) -> Bool {
        if parsed.flag("yes") { return true }
        let question = "Delete credential \(summary.encodedID) of \(summary.userLabel) at \(summary.shownRPID) from \(place)? "
            + "It cannot be undone."
        let confirmed: Bool
        do {
            confirmed = try io.confirm(question)
        } catch {
            throw .usage(error)
        }
        if !confirmed { io.err("Not deleted.") }
        return confirmed
    }

    static func report(deleted summary: CredentialSummary, json: Bool, io: CommandIO) {
        if json {
            io.out(JSONValue.object([("deleted", summary.json)]).rendered)
        } else {
            io.out("Deleted credential \(summary.encodedID) of \(summary.userLabel) at \(summary.shownRPID).")
        }
    }

    // MARK: - rename

    static func rename(_ parsed: ParsedArguments, io: CommandIO) throws(UsageError) -> Int32 {
        try CLIError.run(io) { () throws(CLIError) -> Int32 in
            let argument = try credentialArgument(parsed)
            let newName = parsed.value("user-name")
            let newDisplayName = parsed.value("display-name")
            guard newName != nil || newDisplayName != nil else {
                throw .usage("give --user-name and/or --display-name")
            }
            let before: CredentialSummary
            var after: CredentialSummary
            switch try CommandTarget.resolve(parsed, environment: io.environment) {
            case let .store(directory, _):
                let store = try LocalStore.openExisting(directory: directory)
                defer { store.close() }
                before = CredentialSummary(try storeCredential(argument, store: store, directory: directory))
                after = before
                after.userName = replacement(newName, for: before.userName)
                after.userDisplayName = replacement(newDisplayName, for: before.userDisplayName)
                // The store's updateUser replaces both fields (nil removes one).
                try LocalStore.perform(directory) { () throws(StoreError) in
                    try store.updateUser(credentialID: before.credentialID, name: after.userName, displayName: after.userDisplayName)
                }
            case .device(let selection):
                let remote = try DeviceSession.connect(selection, io: io)
                let manager = try DeviceSession.credentialManager(remote, parsed: parsed, io: io)
                before = try deviceCredential(argument, manager: manager)
                after = before
                after.userName = replacement(newName, for: before.userName)
                after.userDisplayName = replacement(newDisplayName, for: before.userDisplayName)
                do throws(DeviceError) {
                    // updateUserInformation removes what it is not sent: send both fields.
                    try manager.updateUser(credentialID: before.credentialID, userHandle: before.userHandle,
                                           name: after.userName, displayName: after.userDisplayName)
                } catch {
                    throw error.cliError
                }
            }
            if parsed.flag("json") {
                io.out(JSONValue.object([("renamed", after.json)]).rendered)
            } else {
                io.out("Renamed credential \(CredentialSummary.shortened(after.encodedID)) at \(after.shownRPID): "
                    + change("user name", before.userName, after.userName) + "; "
                    + change("display name", before.userDisplayName, after.userDisplayName) + ".")
            }
            return 0
        }
    }

    /// An option's new value: absent keeps the old one, empty removes it.
    static func replacement(_ option: String?, for current: String?) -> String? {
        guard let option else { return current }
        return option.isEmpty ? nil : option
    }

    static func change(_ field: String, _ old: String?, _ new: String?) -> String {
        func quoted(_ value: String?) -> String { value.map { "'\(DisplayText.safe($0))'" } ?? "none" }
        return old == new ? "\(field) unchanged (\(quoted(old)))" : "\(field) \(quoted(old)) → \(quoted(new))"
    }

    // MARK: - Finding a credential

    /// The <credential-id> argument: base64url (or a prefix of it, with the ellipsis `list` shows).
    // MARK: - unhide

    static func unhide(_ parsed: ParsedArguments, io: CommandIO) throws(UsageError) -> Int32 {
        try CLIError.run(io) { () throws(CLIError) -> Int32 in
            let argument = try credentialArgument(parsed)
            guard case let .store(directory, _) = try CommandTarget.resolve(parsed, environment: io.environment) else {
                throw .usage("only a store hides credentials")
            }
            let store = try LocalStore.openExisting(directory: directory)
            defer { store.close() }
            let summary = CredentialSummary(try storeCredential(argument, store: store, directory: directory))
            guard let result = try LocalStore.perform(directory, { () throws(StoreError) in
                try store.unhideCredential(credentialID: summary.credentialID)
            }) else {
                throw .failure("credential \(summary.encodedID) was deleted meanwhile")
            }
            if parsed.flag("json") {
                io.out(JSONValue.object([("store", .string(directory)), ("credentialId", .string(summary.encodedID)),
                                         ("rpId", .string(result.rpID)), ("unhidden", .bool(result.wasHidden))]).rendered)
            } else if result.wasHidden {
                io.out("Credential \(summary.encodedID) of \(summary.userLabel) at \(DisplayText.safe(result.rpID)) is visible again.")
            } else {
                io.out("Credential \(summary.encodedID) of \(summary.userLabel) at \(DisplayText.safe(result.rpID)) was not hidden; nothing changed.")
            }
            return 0
        }
    }

    static func credentialArgument(_ parsed: ParsedArguments) throws(CLIError) -> String {
        let argument = parsed.positionals[0]
        let allowed = Set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_=…")
        guard !argument.isEmpty, argument.allSatisfy({ allowed.contains($0) }) else {
            throw .usage("'\(argument)' is not a base64url credential ID")
        }
        return argument
    }

    static func storeCredential(_ argument: String, store: SQLiteCredentialStore,
                                directory: String) throws(CLIError) -> ResidentCredential {
        if let bytes = Base64URL.decode(argument),
           let exact = try LocalStore.perform(directory, { () throws(StoreError) in try store.residentCredential(id: bytes) }) {
            return exact
        }
        let all = try LocalStore.perform(directory) { () throws(StoreError) in try store.allResidentCredentials(includeHidden: true) }
        if let found = try CredentialSummary.find(argument, in: all.map { CredentialSummary($0) }),
           let credential = all.first(where: { $0.credentialID == found.credentialID }) {
            return credential
        }
        throw .failure("no credential \(argument) in the store \(directory) (hidden ones included)")
    }

    static func deviceCredential(_ argument: String, manager: RemoteCredentialManager) throws(CLIError) -> CredentialSummary {
        let all = try DeviceSession.summaries(manager, rpID: nil)
        guard let found = try CredentialSummary.find(argument, in: all) else {
            throw .failure("no credential \(argument) on \(manager.label)")
        }
        return found
    }
}

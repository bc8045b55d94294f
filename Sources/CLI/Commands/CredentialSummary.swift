import Authenticator
import CBOR
import CTAP
import FIDOClient
import Foundation
import Encoding

/// One discoverable credential as the CLI shows it, from a store (everything known) or from a
/// device's credential management (no creation time, nothing hidden).
struct CredentialSummary: Equatable {
    var rpID: String
    var rpName: String?
    var userHandle: [UInt8]
    var userName: String?
    var userDisplayName: String?
    var credentialID: [UInt8]
    /// COSE algorithm identifier, when known.
    var algorithm: Int?
    /// Unix seconds, when known.
    var createdAt: Int64?
    var credProtect: Int?
    var hiddenSince: Int64?
    /// Extensions with state in the credential ("hmac-secret", "credBlob", "largeBlobKey").
    var extensions: [String]
    /// False for one kept for allowLists only (a test rig's non-resident credential): it has no
    /// user the RP gave, so no user handle is shown for it.
    var discoverable = true
    /// The signature counter policy ("counting", "zero"), when known (a store's credentials).
    var counter: String?
    /// Whether it ever gave an hmac-secret (PRF) output, when known (a store's credentials).
    var usedPRF: Bool?
    /// Where its private key is ("software", or "tpm": made and kept by the TPM of the machine
    /// that made it, signing nowhere else), when known (a store's credentials).
    var keyStorage: String?

    /// The user handle as shown: none for a credential that is not discoverable.
    var shownUserHandle: String? { discoverable ? Base64URL.encode(userHandle) : nil }

    var encodedID: String { Base64URL.encode(credentialID) }

    init(_ credential: ResidentCredential, rpName: String? = nil) {
        rpID = credential.rpID
        self.rpName = credential.rpName ?? rpName
        userHandle = credential.userHandle
        userName = credential.userName
        userDisplayName = credential.userDisplayName
        credentialID = credential.credentialID
        algorithm = credential.algorithm
        createdAt = credential.createdAt
        credProtect = Int(credential.credProtect.rawValue)
        hiddenSince = credential.hiddenSince
        var extensions: [String] = []
        if credential.hmacSecretWithUV != nil || credential.hmacSecretWithoutUV != nil { extensions.append("hmac-secret") }
        if credential.credBlob != nil { extensions.append("credBlob") }
        if credential.largeBlobKey != nil { extensions.append("largeBlobKey") }
        self.extensions = extensions
        discoverable = credential.discoverable
        counter = credential.counterless ? "zero" : "counting"
        usedPRF = credential.usedHMACSecret
        keyStorage = DeviceKey.isDeviceKey(credential.privateKey) ? "tpm" : "software"
    }

    init(_ credential: RemoteCredentialManager.Credential, rpName: String?) {
        rpID = credential.rpID
        self.rpName = rpName
        userHandle = credential.userHandle
        userName = credential.userName
        userDisplayName = credential.userDisplayName
        credentialID = credential.credentialID
        algorithm = credential.algorithm
        createdAt = nil
        credProtect = credential.credProtect
        hiddenSince = nil
        extensions = credential.hasLargeBlobKey ? ["largeBlobKey"] : []
    }

    /// Whether `latchkey export` takes it (a store's credential: a visible passkey whose signature
    /// counter is always 0); nil when unknown (a device's).
    var exportable: Bool? {
        counter.map { $0 == "zero" && discoverable && hiddenSince == nil && keyStorage != "tpm" }
    }

    /// Whether Latchkey's extension, in provider mode, offers it in a site's sign-in menu (a
    /// store's credential: a visible discoverable one); nil when unknown (a device's).
    var autofill: Bool? {
        counter.map { _ in discoverable && hiddenSince == nil }
    }

    /// The RP ID as text output shows it (`DisplayText`: a site's text never acts on the terminal).
    var shownRPID: String { DisplayText.safe(rpID) }

    /// "alice (Alice Liddell)", "alice", "(Alice Liddell)" or "-", for text output (`DisplayText`).
    var userLabel: String {
        let userName = userName.map { DisplayText.safe($0) }, userDisplayName = userDisplayName.map { DisplayText.safe($0) }
        return switch (userName.flatMap { $0.isEmpty ? nil : $0 }, userDisplayName.flatMap { $0.isEmpty ? nil : $0 }) {
        case let (name?, display?): name == display ? name : "\(name) (\(display))"
        case let (name?, nil): name
        case let (nil, display?): "(\(display))"
        case (nil, nil): "-"
        }
    }

    /// The JSON object: every field, IDs and handles in full base64url, times in ISO 8601 UTC.
    var json: JSONValue {
        .object([
            ("rpId", .string(rpID)),
            ("rpName", .optional(rpName)),
            ("userHandle", .optional(shownUserHandle)),
            ("userName", .optional(userName)),
            ("userDisplayName", .optional(userDisplayName)),
            ("credentialId", .string(encodedID)),
            ("algorithm", .optional(algorithm.map(Self.algorithmName))),
            ("coseAlgorithm", .optional(algorithm)),
            ("created", .optional(createdAt.map(Self.timestamp))),
            ("credProtect", .optional(credProtect)),
            ("hidden", .bool(hiddenSince != nil)),
            ("hiddenSince", .optional(hiddenSince.map(Self.timestamp))),
            ("extensions", .array(extensions.map(JSONValue.string))),
            ("discoverable", .bool(discoverable)),
            ("signatureCounter", .optional(counter)),
            ("exportable", exportable.map(JSONValue.bool) ?? .null),
            ("autofill", autofill.map(JSONValue.bool) ?? .null),
            ("prfUsed", usedPRF.map(JSONValue.bool) ?? .null),
            ("keyStorage", .optional(keyStorage)),
        ])
    }

    /// The `show` text: one field per line.
    func details(retentionSeconds: Int64?) -> [String] {
        var lines = ["Credential \(encodedID)"]
        func add(_ label: String, _ value: String) {
            lines.append("  " + (label + ":").padding(toLength: 15, withPad: " ", startingAt: 0) + value)
        }
        add("RP ID", shownRPID + (rpName.map { " (\(DisplayText.safe($0)))" } ?? ""))
        add("User name", userName.map { DisplayText.safe($0) } ?? "-")
        add("Display name", userDisplayName.map { DisplayText.safe($0) } ?? "-")
        add("User handle", shownUserHandle ?? "- (allowList only: not discoverable)")
        add("Algorithm", algorithm.map { "\(Self.algorithmName($0)) (\($0))" } ?? "-")
        if keyStorage == "tpm" { add("Key", "in the TPM that made it (signs on that machine only; never exported)") }
        if let createdAt { add("Created", Self.timestamp(createdAt)) }
        add("credProtect", credProtect.map { "\($0) (\(Self.credProtectName($0)))" } ?? "-")
        add("Extensions", extensions.isEmpty ? "-" : extensions.joined(separator: ", "))
        if let counter { add("Counter", counter == "zero" ? "always 0 (exportable)" : "counting") }
        if usedPRF == true { add("PRF", "has given hmac-secret outputs (a site may encrypt data with it)") }
        if let hiddenSince {
            var text = "since \(Self.timestamp(hiddenSince))"
            if let retentionSeconds {
                text += "; purged after \(Self.timestamp(hiddenSince + retentionSeconds)) unless a signal all-accepted lists it"
            }
            add("Hidden", text)
        } else if createdAt != nil {
            add("Hidden", "no")
        }
        return lines
    }

    /// A credential algorithm's COSE name (`COSEAlgorithm.name`), or its number for any other.
    static func algorithmName(_ algorithm: Int) -> String {
        COSEAlgorithm.credentialAlgorithms.first { $0.rawValue == algorithm }?.name ?? "COSE \(algorithm)"
    }

    /// CTAP 2.1 §12.1 credProtect levels.
    static func credProtectName(_ level: Int) -> String {
        switch level {
        case 1: "userVerificationOptional"
        case 2: "userVerificationOptionalWithCredentialIDList"
        case 3: "userVerificationRequired"
        default: "unknown"
        }
    }

    /// "2025-11-30T16:00:00Z".
    static func timestamp(_ seconds: Int64) -> String {
        var time = time_t(seconds)
        var parts = tm()
        gmtime_r(&time, &parts)
        return String(format: "%04d-%02d-%02dT%02d:%02d:%02dZ", Int(parts.tm_year) + 1900, Int(parts.tm_mon) + 1,
                      Int(parts.tm_mday), Int(parts.tm_hour), Int(parts.tm_min), Int(parts.tm_sec))
    }

    /// The first 12 characters and an ellipsis when longer than 16: a prefix the ID commands accept.
    static func shortened(_ text: String) -> String {
        text.count > 16 ? String(text.prefix(12)) + "…" : text
    }

    /// The `list` table (a device's credentials have no creation time: no CREATED column).
    static func table(_ credentials: [CredentialSummary], showHidden: Bool) -> [String] {
        let showCreated = credentials.contains { $0.createdAt != nil }
        // A store's credentials say whether `latchkey export` can take them; a device's do not know.
        let showExport = credentials.contains { $0.counter != nil }
        var rows = [["RP ID", "USER", "USER HANDLE", "CREDENTIAL ID", "ALG"] + (showCreated ? ["CREATED"] : []) + ["PROTECT"]
                    + (showExport ? ["EXPORT", "AUTOFILL"] : []) + (showHidden ? ["HIDDEN SINCE"] : [])]
        for credential in credentials {
            var row = [credential.shownRPID, credential.userLabel, credential.shownUserHandle.map(shortened) ?? "-",
                       shortened(credential.encodedID),
                       (credential.algorithm.map(algorithmName) ?? "-") + (credential.keyStorage == "tpm" ? " (TPM)" : "")]
            if showCreated { row.append(credential.createdAt.map(timestamp) ?? "-") }
            row.append(credential.credProtect.map(String.init) ?? "-")
            if showExport {
                row.append(credential.exportable.map { $0 ? "yes" : "no" } ?? "-")
                row.append(credential.autofill.map { $0 ? "yes" : "no" } ?? "-")
            }
            if showHidden { row.append(credential.hiddenSince.map(timestamp) ?? "-") }
            rows.append(row)
        }
        let widths = (0..<rows[0].count).map { column in rows.map { $0[column].count }.max() ?? 0 }
        return rows.map { row in
            row.enumerated().map { column, cell in
                column == row.count - 1 ? cell : cell.padding(toLength: widths[column], withPad: " ", startingAt: 0)
            }.joined(separator: "  ")
        }
    }

    /// The prefix `argument` gives: without padding, the ellipsis `list` shows, or blanks.
    static func prefixText(_ argument: String) -> String {
        var prefix = argument.trimmingCharacters(in: .whitespaces)
        while prefix.hasSuffix("=") { prefix.removeLast() }
        if prefix.hasSuffix("…") { prefix.removeLast() }
        return prefix
    }

    /// The one rule for naming a credential on the command line, checked before anything is
    /// opened: its whole ID, or at least 6 of its first characters (a usage error otherwise).
    static func checkArgument(_ argument: String) throws(CLIError) {
        guard prefixText(argument).count >= 6 else {
            throw .usage("'\(argument)' is too short to name a credential: give at least 6 characters of its ID, "
                         + "as `latchkey credentials list` shows it (or the whole ID)")
        }
    }

    /// Finds the credential `argument` names among `candidates`: its full base64url (padded or
    /// not), or a prefix of it of at least 6 characters that only one credential has (what
    /// `list` shows). nil when none matches; a failure when several do.
    static func find(_ argument: String, in candidates: [CredentialSummary]) throws(CLIError) -> CredentialSummary? {
        if let bytes = Base64URL.decode(argument), let exact = candidates.first(where: { $0.credentialID == bytes }) {
            return exact
        }
        try checkArgument(argument)
        let prefix = prefixText(argument)
        let matches = candidates.filter { $0.encodedID.hasPrefix(prefix) }
        guard matches.count <= 1 else {
            throw .failure("'\(argument)' is the start of \(matches.count) credential IDs; give more of it (`--json` shows them in full)")
        }
        return matches.first
    }
}

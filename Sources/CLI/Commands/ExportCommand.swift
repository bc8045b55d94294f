import Authenticator
import CBOR
import CredentialStore
import Exchange
import FIDOClient
import FIDOCrypto
import Foundation
import Encoding

/// `latchkey export`: the key's passkeys as a FIDO CXF 1.0 document, encrypted to a recipient's
/// X25519 key (HPKE) or with a passphrase (scrypt + AES-256-GCM), or plain when asked — never
/// plain to a terminal. Only counterless passkeys leave (PasskeyExport); the others are listed
/// on standard error with the reason. The key's PIN is asked when it has one.
public enum ExportCommand {
    public static let spec = CommandSpec(
        name: "export", abstract: "Export the key's passkeys as a CXF 1.0 document (encrypted; see Moving passkeys).",
        options: CommandTarget.storeOptions + [
            .init("rp", value: "RPID,RPID,…", help: "Only passkeys of these relying parties."),
            .init("out", value: "FILE", help: "Write to FILE (mode 0600; default: standard output, never a terminal)."),
            .init("to", value: "RECIPIENT.pub", help: "Encrypt to this X25519 public key (HPKE; `latchkey import --new-key` makes one)."),
            .init("passphrase-file", value: "FILE", help: "Encrypt with the passphrase in FILE (default without --to: typed twice)."),
            .init("plaintext", help: "Do not encrypt: the private keys in the clear (refused to a terminal)."),
            .init("pin-file", value: "FILE", help: "The key's PIN, when it has one (else $LATCHKEY_PIN, else the terminal)."),
            ExchangeFiles.scryptOption,
            CredentialsCommand.jsonOption,
        ])

    public static func run(_ parsed: ParsedArguments) throws(UsageError) -> Int32 { try run(parsed, io: .standard) }

    static func run(_ parsed: ParsedArguments, io: CommandIO, stdoutIsTerminal: Bool = isatty(1) == 1) throws(UsageError) -> Int32 {
        try CLIError.run(io) { () throws(CLIError) -> Int32 in
            guard case let .store(directory, name) = try CommandTarget.resolve(parsed, environment: io.environment, storeTakesPIN: true) else {
                throw .usage("export works on a key's store (--name or --store)")
            }
            let rpIDs = parsed.value("rp").map { $0.split(separator: ",").map(String.init) }
            let out = parsed.value("out")
            if parsed.flag("plaintext"), out == nil, stdoutIsTerminal {
                throw .usage("--plaintext would print private keys on the terminal: give --out FILE")
            }
            // Everything the user must give is asked for before the store is read.
            let encryption = try ExchangeFiles.encryption(parsed, io: io, allowsPlaintext: true)

            let store = try LocalStore.openExisting(directory: directory)
            defer { store.close() }
            try checkPIN(parsed, store: store, directory: directory, name: name, io: io)
            let (credentials, blobs) = try LocalStore.perform(directory) { () throws(StoreError) in
                (try store.allResidentCredentials(includeHidden: true), try LargeBlobStorage.serializedArray(in: store))
            }
            let (document, excluded) = PasskeyExport.document(of: credentials, rpIDs: rpIDs, largeBlobArray: blobs,
                                                              keyName: name, now: Int64(Date().timeIntervalSince1970))
            for exclusion in excluded {
                io.err("not exported: \(DisplayText.safe(exclusion.rpID)) \(Base64URL.encode(exclusion.credentialID)): \(exclusion.reason)")
            }
            // Never a "success" that wrote nothing: an empty export is an error that says why.
            guard document.passkeyCount > 0 else {
                let scope = rpIDs.map { " for " + $0.map { DisplayText.safe($0) }.joined(separator: ", ") } ?? ""
                if excluded.isEmpty {
                    throw .failure("nothing to export: the key at \(directory) has no passkeys\(scope); nothing was written")
                }
                throw .failure("nothing to export: none of the \(excluded.count) passkey(s)\(scope) at \(directory) can leave the key "
                               + "(reasons above); nothing was written. Passkeys made while the key runs with `serve --counter zero` "
                               + "(the desktop unit's setting) can be exported; `latchkey backup` copies the whole key instead")
            }
            var plaintext = try ExchangeFiles.perform { () throws(ExchangeError) in try document.json() }
            defer { plaintext.wipe() }
            let file = try ExchangeFiles.seal(plaintext, contents: .cxf, encryption)
            if let out {
                try ExchangeFiles.writePrivately(file, to: out)
            } else {
                Console.raw(Data(file))
            }
            let method = switch encryption {
            case .recipient: "encrypted to \(parsed.value("to") ?? "")"
            case .passphrase: "encrypted with a passphrase"
            case .none: "NOT encrypted"
            }
            let summary = "Exported \(document.passkeyCount) passkey(s) of \(directory) (\(method))"
                + (excluded.isEmpty ? "" : "; \(excluded.count) left on the key (listed above)")
                + (out.map { " to \($0)." } ?? ".")
            if parsed.flag("json") {
                let report = JSONValue.object([
                    ("store", .string(directory)), ("exported", .int(document.passkeyCount)), ("out", out.map(JSONValue.string) ?? .null),
                    ("excluded", .array(excluded.map { JSONValue.object([("rpId", .string($0.rpID)),
                                                                         ("credentialId", .string(Base64URL.encode($0.credentialID))),
                                                                         ("reason", .string($0.reason))]) })),
                ]).rendered
                if out == nil { io.err(report) } else { io.out(report) }
            } else {
                // The document itself may be on standard output: the summary goes beside it.
                if out == nil { io.err(summary) } else { io.out(summary) }
            }
            return 0
        }
    }

    /// When the key has a PIN, exporting its private keys needs it, as a PIN-protected
    /// credential management does over CTAP: a wrong PIN costs a retry.
    static func checkPIN(_ parsed: ParsedArguments, store: SQLiteCredentialStore, directory: String, name: String,
                         io: CommandIO) throws(CLIError) {
        guard try LocalStore.perform(directory, { () throws(StoreError) in try StorePINCheck.isPINSet(store: store) }) else { return }
        let pin = try PINInput.current(file: parsed.value("pin-file"), io: io, label: "the key \(name)")
        let outcome = try LocalStore.perform(directory) { () throws(StoreError) in
            try StorePINCheck.verify(pinHash: pin.leftHash(), store: store)
        }
        switch outcome {
        case .noPIN, .verified: return
        case let .wrong(retriesLeft): throw .failure("wrong PIN; \(retriesLeft) retries left before the key blocks its PIN")
        case .blocked: throw .failure("the key's PIN is blocked (no retries left); only a reset unblocks it, and deletes every passkey")
        }
    }
}

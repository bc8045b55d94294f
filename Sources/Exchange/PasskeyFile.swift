import CBOR
import FIDOCrypto
import Foundation
import Encoding

/// One passkey read from a file, in whichever format it came: what an import validates and
/// stores. `origin` says where in the file it was, for the report.
public struct ImportedPasskey: Sendable {
    public var origin: String
    public var credentialID: [UInt8]
    public var rpID: String
    public var rpName: String?
    public var userHandle: [UInt8]
    public var userName: String?
    public var userDisplayName: String?
    /// PKCS#8 DER.
    public var privateKey: SecretBytes
    public var hmacCredentials: CXFDocument.HMACCredentials?
    public var credBlob: [UInt8]?
    public var largeBlob: CXFDocument.LargeBlob?
    /// The credProtect level a Latchkey export carried (nil: level 1, as other managers' passkeys).
    public var credProtect: Int? = nil
    /// UNIX seconds, when the file says.
    public var createdAt: Int64?
}

/// A file to import, read: its passkeys, and what else it held (skipped and counted).
public struct PasskeyFile: Sendable {
    public enum Format: String, Sendable {
        case cxf = "CXF 1.0"
        case bitwarden = "Bitwarden JSON"
        case keepassxc = "KeePassXC passkey"
    }

    public var format: Format
    public var passkeys: [ImportedPasskey]
    /// Items or credentials that are not passkeys, by kind ("password", "totp", "login without a passkey", …).
    public var skipped: [String: Int]

    /// Whether `bytes` is an encrypted export (to be opened first) rather than a plain file.
    public static func encryptedExport(in bytes: [UInt8]) throws(ExchangeError) -> EncryptedExport? {
        let object = try jsonObject(bytes)
        return EncryptedExport.isEncryptedExport(object) ? try EncryptedExport(object: object) : nil
    }

    /// Reads a plain (decrypted) file, telling the format by its members.
    public init(_ bytes: [UInt8]) throws(ExchangeError) {
        let object = try Self.jsonObject(bytes)
        if EncryptedExport.isEncryptedExport(object) {
            throw .malformed("the file is an encrypted export: open it with --key or --passphrase-file")
        }
        if CXFDocument.isHeader(object) {
            try self.init(cxf: CXFDocument(object: object))
        } else if case .array? = object["items"], object["encrypted"] != nil || object["folders"] != nil || object["collections"] != nil {
            try self.init(bitwarden: ExchangeJSON(object, path: ""))
        } else if object["privateKey"]?.stringValue != nil, object["relyingParty"]?.stringValue != nil {
            try self.init(keepassxc: ExchangeJSON(object, path: ""))
        } else {
            throw .unknownFormat("not a CXF document, a Bitwarden JSON export or a KeePassXC .passkey file "
                                 + "(its top-level members: \(object.keys.sorted().prefix(8).joined(separator: ", ")))")
        }
    }

    static func jsonObject(_ bytes: [UInt8]) throws(ExchangeError) -> [String: JSONDocument] {
        guard !bytes.isEmpty else { throw .malformed("the file is empty") }
        guard let parsed = JSONDocument.parse(bytes) else {
            throw .malformed("not JSON (cut short, or not an export)")
        }
        guard let object = parsed.objectValue else { throw .malformed("the JSON is not an object") }
        return object
    }

    // MARK: CXF

    public init(cxf document: CXFDocument) {
        format = .cxf
        skipped = [:]
        passkeys = []
        for (accountIndex, account) in document.accounts.enumerated() {
            skipped.merge(account.otherCredentials, uniquingKeysWith: +)
            for (itemIndex, item) in account.items.enumerated() {
                for (credentialIndex, passkey) in item.passkeys.enumerated() {
                    passkeys.append(ImportedPasskey(
                        origin: "accounts[\(accountIndex)].items[\(itemIndex)].credentials[\(credentialIndex)]",
                        credentialID: passkey.credentialId, rpID: passkey.rpId, rpName: item.title.isEmpty ? nil : item.title,
                        userHandle: passkey.userHandle, userName: passkey.username.isEmpty ? nil : passkey.username,
                        userDisplayName: passkey.userDisplayName.isEmpty ? nil : passkey.userDisplayName,
                        privateKey: passkey.key, hmacCredentials: passkey.hmacCredentials, credBlob: passkey.credBlob,
                        largeBlob: passkey.largeBlob, credProtect: passkey.credProtect, createdAt: item.creationAt))
                }
            }
        }
    }

    // MARK: Bitwarden

    /// Bitwarden's unencrypted JSON export: `items[].login.fido2Credentials[]`.
    init(bitwarden export: ExchangeJSON) throws(ExchangeError) {
        format = .bitwarden
        skipped = [:]
        passkeys = []
        if try export.optionalFlag("encrypted") == true {
            throw .unsupportedVersion("an encrypted Bitwarden export: export from Bitwarden as JSON (not encrypted) and "
                                      + "encrypt the file in transit yourself")
        }
        for item in try export.objects("items") {
            let credentials = try item.optionalObject("login")?.optionalObjects("fido2Credentials") ?? []
            if credentials.isEmpty {
                skipped[Self.bitwardenKind(try item.optionalInteger("type")), default: 0] += 1
                continue
            }
            for credential in credentials {
                passkeys.append(try Self.bitwardenPasskey(credential, itemName: try item.optionalString("name")))
            }
        }
    }

    private static func bitwardenKind(_ type: Int64?) -> String {
        switch type {
        case 1: "login without a passkey"
        case 2: "secure note"
        case 3: "card"
        case 4: "identity"
        case 5: "SSH key"
        default: "other item"
        }
    }

    private static func bitwardenPasskey(_ credential: ExchangeJSON, itemName: String?) throws(ExchangeError) -> ImportedPasskey {
        let keyType = try credential.optionalString("keyType") ?? "public-key"
        let algorithm = try credential.optionalString("keyAlgorithm") ?? "ECDSA"
        let curve = try credential.optionalString("keyCurve") ?? "P-256"
        guard keyType == "public-key", algorithm == "ECDSA", curve == "P-256" else {
            throw .malformed("\(credential.path): a \(keyType) \(algorithm) \(curve) key; Bitwarden passkeys are ECDSA P-256")
        }
        var key = try credential.bytes("keyValue")
        defer { key.wipe() }
        let idText = try credential.string("credentialId")
        guard let credentialID = bitwardenCredentialID(idText) else {
            throw .malformed("\(credential.name("credentialId")) is neither a GUID nor b64. followed by base64url")
        }
        let rpID = try credential.string("rpId")
        return ImportedPasskey(
            origin: "\(credential.path) (\(itemName ?? rpID))", credentialID: credentialID, rpID: rpID,
            rpName: try credential.optionalString("rpName"), userHandle: try credential.bytes("userHandle"),
            userName: try credential.optionalString("userName"), userDisplayName: try credential.optionalString("userDisplayName"),
            privateKey: SecretBytes(key), createdAt: try credential.optionalString("creationDate").flatMap(parseISO8601))
    }

    /// A GUID's 16 bytes (Bitwarden's own credential IDs), or `b64.` and base64url (others').
    static func bitwardenCredentialID(_ text: String) -> [UInt8]? {
        if text.hasPrefix("b64.") { return Base64URL.decode(String(text.dropFirst(4))).flatMap { $0.isEmpty ? nil : $0 } }
        let hex = text.filter { $0 != "-" }
        guard text.count == 36, hex.count == 32, [8, 13, 18, 23].allSatisfy({ text[text.index(text.startIndex, offsetBy: $0)] == "-" }) else {
            return nil
        }
        var bytes: [UInt8] = []
        var index = hex.startIndex
        while index < hex.endIndex {
            let next = hex.index(index, offsetBy: 2)
            guard let byte = UInt8(hex[index..<next], radix: 16) else { return nil }
            bytes.append(byte)
            index = next
        }
        return bytes
    }

    static func parseISO8601(_ text: String) -> Int64? {
        InternetDateTime.unixSeconds(text)
    }

    // MARK: KeePassXC

    /// KeePassXC's single-passkey `.passkey` file: relyingParty, url, username, credentialId,
    /// userHandle (base64url) and privateKey (a PKCS#8 PEM).
    init(keepassxc file: ExchangeJSON) throws(ExchangeError) {
        format = .keepassxc
        skipped = [:]
        var der = try Self.pemPrivateKey(try file.string("privateKey"), member: file.name("privateKey"))
        defer { der.wipe() }
        let rpID = try file.string("relyingParty")
        let userName = try file.optionalString("username")
        passkeys = [ImportedPasskey(origin: "the passkey of \(rpID)", credentialID: try file.bytes("credentialId"), rpID: rpID,
                                    rpName: nil, userHandle: try file.bytes("userHandle"), userName: userName,
                                    userDisplayName: userName, privateKey: SecretBytes(der))]
    }

    /// The DER inside a `-----BEGIN PRIVATE KEY-----` PEM.
    static func pemPrivateKey(_ pem: String, member: String) throws(ExchangeError) -> [UInt8] {
        let lines = pem.split(whereSeparator: \.isNewline).map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
        guard lines.first == "-----BEGIN PRIVATE KEY-----", lines.last == "-----END PRIVATE KEY-----", lines.count >= 3 else {
            throw .malformed("\(member) is not a PEM PKCS#8 private key (-----BEGIN PRIVATE KEY-----)")
        }
        guard let der = Data(base64Encoded: lines.dropFirst().dropLast().joined()) else {
            throw .malformed("\(member): the PEM's base64 does not decode")
        }
        return Array(der)
    }
}

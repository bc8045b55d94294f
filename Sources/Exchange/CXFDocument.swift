import CBOR
import FIDOCrypto
import Foundation
import Encoding

/// A FIDO Alliance Credential Exchange Format 1.0 document (Proposed Standard 2025-08-14,
/// errata 2026-03-09), the part of it a security key has: a header, accounts, items, and each
/// item's passkey credentials. Other credential types are counted, not kept. Binary members are
/// base64url without padding when written; padding is tolerated when read; unknown members are
/// ignored.
public struct CXFDocument: Sendable {
    public var versionMajor = 1
    public var versionMinor = 0
    public var exporterRpId: String
    public var exporterDisplayName: String
    /// UNIX seconds.
    public var timestamp: Int64
    public var accounts: [Account]

    public struct Account: Sendable {
        public var id: [UInt8]
        public var username: String
        public var email: String
        public var items: [Item]
        /// Credentials of other types (passwords, TOTP, notes, …) in this account's items.
        public var otherCredentials: [String: Int] = [:]
        public init(id: [UInt8], username: String, email: String, items: [Item]) {
            self.id = id; self.username = username; self.email = email; self.items = items
        }
    }

    public struct Item: Sendable {
        public var id: [UInt8]
        public var creationAt: Int64?
        public var modifiedAt: Int64?
        public var title: String
        public var urls: [String]
        public var passkeys: [Passkey]
        public init(id: [UInt8], creationAt: Int64?, modifiedAt: Int64?, title: String, urls: [String], passkeys: [Passkey]) {
            self.id = id; self.creationAt = creationAt; self.modifiedAt = modifiedAt; self.title = title
            self.urls = urls; self.passkeys = passkeys
        }
    }

    /// A `passkey` credential.
    public struct Passkey: Sendable {
        public var credentialId: [UInt8]
        public var rpId: String
        public var username: String
        public var userDisplayName: String
        public var userHandle: [UInt8]
        /// PKCS#8 DER of the private key.
        public var key: SecretBytes
        public var hmacCredentials: HMACCredentials?
        public var credBlob: [UInt8]?
        public var largeBlob: LargeBlob?
        /// The credProtect level (CTAP 2.1 §12.1) when above 1. CXF has no member for it; Latchkey
        /// writes `fido2Extensions.latchkeyCredProtect` (other readers ignore unknown members), so
        /// a passkey that needed UV still needs it on the key it moves to.
        public var credProtect: Int?
        public init(credentialId: [UInt8], rpId: String, username: String, userDisplayName: String,
                    userHandle: [UInt8], key: SecretBytes) {
            self.credentialId = credentialId; self.rpId = rpId; self.username = username
            self.userDisplayName = userDisplayName; self.userHandle = userHandle; self.key = key
        }
    }

    /// fido2Extensions.hmacCredentials: the hmac-secret CredRandoms (the PRF extension's).
    public struct HMACCredentials: Sendable {
        public var withUV: SecretBytes
        public var withoutUV: SecretBytes
        public init(withUV: SecretBytes, withoutUV: SecretBytes) { self.withUV = withUV; self.withoutUV = withoutUV }
    }

    /// fido2Extensions.largeBlob: the blob DEFLATE-compressed, and its size before.
    public struct LargeBlob: Sendable {
        public var uncompressedSize: Int
        public var data: [UInt8]
        public init(uncompressedSize: Int, data: [UInt8]) { self.uncompressedSize = uncompressedSize; self.data = data }
    }

    public init(exporterRpId: String, exporterDisplayName: String, timestamp: Int64, accounts: [Account]) {
        self.exporterRpId = exporterRpId; self.exporterDisplayName = exporterDisplayName
        self.timestamp = timestamp; self.accounts = accounts
    }

    public var passkeyCount: Int { accounts.reduce(0) { $0 + $1.items.reduce(0) { $0 + $1.passkeys.count } } }
}

// MARK: Writing

extension CXFDocument {
    /// The document as JSON (UTF-8). It holds private keys: the caller encrypts it or writes it
    /// only where the user asked.
    public func json() throws(ExchangeError) -> [UInt8] {
        let document = JSONValue.sorted([
            "version": .sorted(["major": .int(versionMajor), "minor": .int(versionMinor)]),
            "exporterRpId": .string(exporterRpId),
            "exporterDisplayName": .string(exporterDisplayName),
            "timestamp": .int(Int(timestamp)),
            "accounts": .array(accounts.map { account in
                .sorted(["id": .string(Base64URL.encode(account.id)), "username": .string(account.username),
                         "email": .string(account.email), "collections": .array([]),
                         "items": .array(account.items.map(Self.itemValue))])
            }),
        ])
        return Array(document.rendered.utf8)
    }

    private static func itemValue(_ item: Item) -> JSONValue {
        var members: [String: JSONValue] = [
            "id": .string(Base64URL.encode(item.id)), "title": .string(item.title),
            "credentials": .array(item.passkeys.map(passkeyValue)),
        ]
        if let creationAt = item.creationAt { members["creationAt"] = .int(Int(creationAt)) }
        if let modifiedAt = item.modifiedAt { members["modifiedAt"] = .int(Int(modifiedAt)) }
        if !item.urls.isEmpty { members["scope"] = .sorted(["urls": .array(item.urls.map(JSONValue.string)), "androidApps": .array([])]) }
        return .sorted(members)
    }

    private static func passkeyValue(_ passkey: Passkey) -> JSONValue {
        var members: [String: JSONValue] = [
            "type": .string("passkey"),
            "credentialId": .string(Base64URL.encode(passkey.credentialId)),
            "rpId": .string(passkey.rpId),
            "username": .string(passkey.username),
            "userDisplayName": .string(passkey.userDisplayName),
            "userHandle": .string(Base64URL.encode(passkey.userHandle)),
            "key": .string(passkey.key.withUnsafeBytes { Base64URL.encode(Array($0)) }),
        ]
        var extensions: [String: JSONValue] = [:]
        if let hmac = passkey.hmacCredentials {
            extensions["hmacCredentials"] = .sorted([
                "algorithm": .string("hmac-sha256"),
                "credWithUV": .string(hmac.withUV.withUnsafeBytes { Base64URL.encode(Array($0)) }),
                "credWithoutUV": .string(hmac.withoutUV.withUnsafeBytes { Base64URL.encode(Array($0)) }),
            ])
        }
        if let credBlob = passkey.credBlob { extensions["credBlob"] = .string(Base64URL.encode(credBlob)) }
        if let largeBlob = passkey.largeBlob {
            extensions["largeBlob"] = .sorted(["uncompressedSize": .int(largeBlob.uncompressedSize),
                                               "data": .string(Base64URL.encode(largeBlob.data))])
        }
        if let credProtect = passkey.credProtect { extensions["latchkeyCredProtect"] = .int(credProtect) }
        if !extensions.isEmpty { members["fido2Extensions"] = .sorted(extensions) }
        return .sorted(members)
    }
}

// MARK: Reading

extension CXFDocument {
    /// Whether a parsed JSON object looks like a CXF header (its `version` and `accounts`).
    static func isHeader(_ object: [String: JSONDocument]) -> Bool {
        guard case .array? = object["accounts"], case .object? = object["version"] else { return false }
        return true
    }

    /// Reads a CXF document. Refuses a major version other than 1, a passkey missing a required
    /// member or with one of the wrong type, naming where (`accounts[0].items[2].credentials[0].rpId`).
    public init(json: [UInt8]) throws(ExchangeError) {
        guard let object = JSONDocument.parse(json)?.objectValue else {
            throw .malformed("not a JSON object")
        }
        try self.init(object: object)
    }

    init(object: [String: JSONDocument]) throws(ExchangeError) {
        let reader = ExchangeJSON(object, path: "")
        let version = try reader.object("version")
        let major = try version.integer("major")
        guard major == 1 else {
            throw .unsupportedVersion("CXF version \(major).\((try? version.integer("minor")) ?? 0): this reads version 1.x")
        }
        versionMajor = 1
        versionMinor = Int((try? version.integer("minor")) ?? 0)
        exporterRpId = try reader.optionalString("exporterRpId") ?? ""
        exporterDisplayName = try reader.optionalString("exporterDisplayName") ?? ""
        timestamp = try reader.optionalInteger("timestamp") ?? 0
        accounts = try reader.objects("accounts").map { (account) throws(ExchangeError) -> Account in
            var result = Account(id: try account.optionalBytes("id") ?? [], username: try account.optionalString("username") ?? "",
                                 email: try account.optionalString("email") ?? "", items: [])
            for item in try account.optionalObjects("items") ?? [] {
                var passkeys: [Passkey] = []
                for credential in try item.optionalObjects("credentials") ?? [] {
                    let type = try credential.string("type")
                    guard type == "passkey" else {
                        result.otherCredentials[type, default: 0] += 1
                        continue
                    }
                    passkeys.append(try Self.passkey(credential))
                }
                let scope = try item.optionalObject("scope")
                result.items.append(Item(id: try item.optionalBytes("id") ?? [], creationAt: try item.optionalInteger("creationAt"),
                                         modifiedAt: try item.optionalInteger("modifiedAt"),
                                         title: try item.optionalString("title") ?? "",
                                         urls: try scope?.optionalStrings("urls") ?? [], passkeys: passkeys))
            }
            return result
        }
    }

    private static func passkey(_ credential: ExchangeJSON) throws(ExchangeError) -> Passkey {
        var keyBytes = try credential.bytes("key")
        defer { keyBytes.wipe() }
        var passkey = Passkey(credentialId: try credential.bytes("credentialId"), rpId: try credential.string("rpId"),
                              username: try credential.optionalString("username") ?? "",
                              userDisplayName: try credential.optionalString("userDisplayName") ?? "",
                              userHandle: try credential.bytes("userHandle"), key: SecretBytes(keyBytes))
        if let extensions = try credential.optionalObject("fido2Extensions") {
            if let hmac = try extensions.optionalObject("hmacCredentials") {
                let algorithm = try hmac.string("algorithm")
                guard algorithm == "hmac-sha256" else {
                    throw .malformed("\(hmac.path).algorithm is \(algorithm); only hmac-sha256 is hmac-secret's")
                }
                var withUV = try hmac.bytes("credWithUV"), withoutUV = try hmac.bytes("credWithoutUV")
                defer { withUV.wipe(); withoutUV.wipe() }
                passkey.hmacCredentials = HMACCredentials(withUV: SecretBytes(withUV), withoutUV: SecretBytes(withoutUV))
            }
            passkey.credBlob = try extensions.optionalBytes("credBlob")
            if let level = try extensions.optionalInteger("latchkeyCredProtect") {
                guard (1...3).contains(level) else { throw .malformed("\(extensions.path).latchkeyCredProtect is not 1, 2 or 3") }
                passkey.credProtect = Int(level)
            }
            if let largeBlob = try extensions.optionalObject("largeBlob") {
                let size = try largeBlob.integer("uncompressedSize")
                guard size >= 0, size <= Int64(Int32.max) else { throw .malformed("\(largeBlob.path).uncompressedSize is out of range") }
                passkey.largeBlob = LargeBlob(uncompressedSize: Int(size), data: try largeBlob.bytes("data"))
            }
        }
        return passkey
    }
}

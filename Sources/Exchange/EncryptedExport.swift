import CBOR
import FIDOCrypto
import Foundation
import Encoding

/// An encrypted Latchkey export: a small JSON object whose header says how its contents were
/// encrypted, and the contents (a CXF document, or a whole-key backup) as AES-256-GCM
/// ciphertext. The header is the AEAD's associated data, so changing any member of it (a
/// weaker scrypt cost, another recipient) makes the file fail to open rather than open
/// differently.
///
/// - `hpke`: RFC 9180 base mode to the recipient's X25519 key (DHKEM(X25519, HKDF-SHA256),
///   HKDF-SHA256, AES-256-GCM); `recipient` is that key's public half, so a wrong key file is
///   told apart from a damaged file.
/// - `passphrase`: scrypt (the file's parameters; 2^17, 8, 1 by default: 128 MiB a guess) to
///   an AES-256-GCM key, a fresh salt and nonce.
public struct EncryptedExport: Sendable {
    public static let formatMember = "latchkeyEncryptedExport"
    public static let hpkeSuite = "DHKEM(X25519, HKDF-SHA256), HKDF-SHA256, AES-256-GCM"
    static let hpkeInfo = Array("latchkey export v1".utf8)

    public enum Contents: String, Sendable {
        /// A CXF 1.0 document (JSON).
        case cxf
        /// A whole key (`KeyBackup`).
        case backup
    }

    public enum Method: Sendable, Equatable {
        case hpke(recipient: X25519.PublicKey, enc: [UInt8])
        case passphrase(parameters: Scrypt.Parameters, salt: [UInt8], nonce: [UInt8])
    }

    public var contents: Contents
    public var method: Method
    public var ciphertext: [UInt8]

    /// Whether a parsed JSON object is one of these.
    public static func isEncryptedExport(_ object: [String: JSONDocument]) -> Bool { object[formatMember] != nil }

    // MARK: Sealing

    public static func seal(_ plaintext: [UInt8], contents: Contents, to recipient: X25519.PublicKey) throws(ExchangeError) -> EncryptedExport {
        // The associated data names the recipient; `enc` is bound through HPKE's key schedule.
        let aad = associatedData(contents: contents, method: .hpke(recipient: recipient, enc: []))
        do {
            let (enc, ciphertext) = try HPKE.seal(plaintext, to: recipient, info: hpkeInfo, aad: aad)
            return EncryptedExport(contents: contents, method: .hpke(recipient: recipient, enc: enc), ciphertext: ciphertext)
        } catch {
            throw .encryption("encrypting to the recipient's key failed: \(error)")
        }
    }

    public static func seal(_ plaintext: [UInt8], contents: Contents, passphrase: SecretBytes,
                            parameters: Scrypt.Parameters = .default) throws(ExchangeError) -> EncryptedExport {
        let salt = SecureRandom.bytes(count: 16)
        let nonce = SecureRandom.bytes(count: 12)
        let method = Method.passphrase(parameters: parameters, salt: salt, nonce: nonce)
        do {
            let key = try Scrypt.deriveKey(passphrase: passphrase, salt: salt, parameters: parameters)
            let (ciphertext, tag) = try AES256GCM.seal(plaintext, key: key, nonce: nonce,
                                                       authenticating: associatedData(contents: contents, method: method))
            return EncryptedExport(contents: contents, method: method, ciphertext: ciphertext + tag)
        } catch {
            throw .encryption("encrypting with the passphrase failed: \(error)")
        }
    }

    // MARK: Opening

    public func open(with key: X25519.PrivateKey) throws(ExchangeError) -> SecretBytes {
        guard case let .hpke(recipient, enc) = method else {
            throw .decryption("this file is encrypted with a passphrase, not to a key: give --passphrase-file")
        }
        guard recipient == key.publicKey else {
            throw .decryption("this file is encrypted to another key (its recipient's public key begins "
                              + "\(Base64URL.encode(recipient.rawRepresentation).prefix(12))…, this key's "
                              + "\(Base64URL.encode(key.publicKey.rawRepresentation).prefix(12))…)")
        }
        do {
            return try HPKE.open(ciphertext, enc: enc, recipient: key, info: Self.hpkeInfo,
                                 aad: Self.associatedData(contents: contents, method: method))
        } catch {
            // The recipient is this key (checked above): what fails to open was changed after.
            switch error {
            case .openFailed: throw .decryption("the file was made for this key but does not open with it: it was altered or cut short")
            default: throw .decryption("the file's encryption is damaged (\(error)): it was altered or cut short")
            }
        }
    }

    public func open(passphrase: SecretBytes) throws(ExchangeError) -> SecretBytes {
        guard case let .passphrase(parameters, salt, nonce) = method else {
            throw .decryption("this file is encrypted to a key, not with a passphrase: give --key with the recipient's private key")
        }
        guard ciphertext.count >= 16 else { throw .decryption("the ciphertext is cut short") }
        let key: SecretBytes
        do {
            key = try Scrypt.deriveKey(passphrase: passphrase, salt: salt, parameters: parameters)
        } catch {
            throw .decryption("scrypt failed: \(error)")
        }
        do {
            var plaintext = try AES256GCM.open(Array(ciphertext.dropLast(16)), tag: Array(ciphertext.suffix(16)), key: key,
                                               nonce: nonce, authenticating: Self.associatedData(contents: contents, method: method))
            defer { plaintext.wipe() }
            return SecretBytes(plaintext)
        } catch {
            throw .decryption("wrong passphrase, or the file was altered")
        }
    }

    // MARK: The file

    static func associatedData(contents: Contents, method: Method) -> [UInt8] {
        switch method {
        case let .hpke(recipient, _):
            associatedData(contents: contents, method: "hpke", details: [hpkeSuite, Base64URL.encode(recipient.rawRepresentation)])
        case let .passphrase(parameters, salt, nonce):
            associatedData(contents: contents, method: "passphrase",
                           details: ["scrypt", "\(parameters.logN)", "\(parameters.r)", "\(parameters.p)",
                                     Base64URL.encode(salt), Base64URL.encode(nonce)])
        }
    }

    static func associatedData(contents: Contents, method: String, details: [String]) -> [UInt8] {
        Array((["\(formatMember)/1", contents.rawValue, method] + details).joined(separator: "\n").utf8)
    }

    /// The file's JSON text.
    public func json() -> [UInt8] {
        var members: [String: JSONValue] = [Self.formatMember: .int(1), "contents": .string(contents.rawValue),
                                            "ciphertext": .string(Base64URL.encode(ciphertext))]
        switch method {
        case let .hpke(recipient, enc):
            members["method"] = .string("hpke")
            members["suite"] = .string(Self.hpkeSuite)
            members["recipient"] = .string(Base64URL.encode(recipient.rawRepresentation))
            members["enc"] = .string(Base64URL.encode(enc))
        case let .passphrase(parameters, salt, nonce):
            members["method"] = .string("passphrase")
            members["kdf"] = Self.scrypt(parameters, salt: salt)
            members["nonce"] = .string(Base64URL.encode(nonce))
        }
        return Array(JSONValue.sorted(members).rendered.utf8) + [0x0A]
    }

    /// `{"name": "scrypt", "logN", "r", "p", "salt"}`, as both encrypted formats name their KDF.
    static func scrypt(_ parameters: Scrypt.Parameters, salt: [UInt8]) -> JSONValue {
        .sorted(["name": .string("scrypt"), "logN": .int(Int(parameters.logN)), "r": .int(Int(parameters.r)),
                 "p": .int(Int(parameters.p)), "salt": .string(Base64URL.encode(salt))])
    }

    public init(contents: Contents, method: Method, ciphertext: [UInt8]) {
        self.contents = contents; self.method = method; self.ciphertext = ciphertext
    }

    init(object: [String: JSONDocument]) throws(ExchangeError) {
        let reader = ExchangeJSON(object, path: "")
        let version = try reader.integer(Self.formatMember)
        guard version == 1 else { throw .unsupportedVersion("encrypted export version \(version): this reads version 1") }
        let contentsName = try reader.string("contents")
        guard let contents = Contents(rawValue: contentsName) else { throw .unknownFormat("encrypted contents '\(contentsName)' is not one this reads (cxf, backup)") }
        self.contents = contents
        ciphertext = try reader.bytes("ciphertext")
        switch try reader.string("method") {
        case "hpke":
            let suite = try reader.string("suite")
            guard suite == Self.hpkeSuite else { throw .unsupportedVersion("HPKE suite '\(suite)': this reads \(Self.hpkeSuite)") }
            let recipient: X25519.PublicKey
            do {
                recipient = try X25519.PublicKey(rawRepresentation: try reader.bytes("recipient"))
            } catch {
                throw .malformed("recipient is not an X25519 public key")
            }
            let enc = try reader.bytes("enc")
            guard enc.count == 32 else { throw .malformed("enc is not an X25519 public key") }
            method = .hpke(recipient: recipient, enc: enc)
        case "passphrase":
            let kdf = try reader.object("kdf")
            guard try kdf.string("name") == "scrypt" else { throw .unsupportedVersion("kdf.name: only scrypt is read") }
            let logN = try kdf.integer("logN"), r = try kdf.integer("r"), p = try kdf.integer("p")
            guard let logN = UInt8(exactly: logN), let r = UInt32(exactly: r), let p = UInt32(exactly: p) else {
                throw .malformed("kdf: scrypt parameters out of range (logN 10 to 22, r and p at most 2^32)")
            }
            // Checked before anything is derived: the file is not authenticated yet.
            if let problem = Scrypt.Parameters(logN: logN, r: r, p: p).problem { throw .malformed("kdf: \(problem)") }
            let salt = try kdf.bytes("salt"), nonce = try reader.bytes("nonce")
            guard salt.count >= 16, nonce.count == 12 else { throw .malformed("kdf.salt or nonce has the wrong length") }
            method = .passphrase(parameters: Scrypt.Parameters(logN: logN, r: r, p: p), salt: salt, nonce: nonce)
        case let other:
            throw .unknownFormat("method '\(other)' is not one this reads (hpke, passphrase)")
        }
    }
}

import CBOR
import Encoding
import FIDOCrypto
import Foundation

/// A `latchkey backup` file, version 2: written and read a chunk at a time, so backing up and
/// restoring take the same memory whatever the store's size (version 1, one AES-GCM message
/// inside JSON, held the whole store in memory twice; it still restores).
///
///     line 1: {"latchkeyEncryptedExport":2,"contents":"backup","chunkSize":65536,"method":…,…}\n
///     then:   chunk 0 ‖ chunk 1 ‖ … ‖ chunk n   (each AES-256-GCM(≤ chunkSize bytes) ‖ 16-byte tag)
///
/// Every chunk is sealed under a random 32-byte file key with the nonce 11-byte big-endian chunk
/// number ‖ 1 byte "last" flag (age's STREAM construction), and the header line as associated
/// data: chunks cannot be reordered, dropped, cut off at a chunk boundary, moved to another file
/// or put under another header. Only the last chunk may be shorter than `chunkSize`. The file
/// key travels in the header, sealed to the recipient (HPKE, the export's suite) or under the
/// passphrase (scrypt, then AES-256-GCM), with the rest of the header as associated data.
///
/// The plaintext is a 4-byte big-endian length, a CBOR map {1: "latchkey backup", 2: 2, 3: the
/// master key, 5: when it was made (UNIX seconds), 6: the database's length}, then the database.
public enum BackupStream {
    public static let version = 2
    public static let chunkSize = 64 * 1024
    public static let tagSize = 16
    /// The longest header line read (a header is a few hundred bytes).
    public static let maximumHeaderLine = 16 * 1024
    static let hpkeInfo = Array("latchkey backup v2".utf8)

    public enum Method: Sendable, Equatable {
        case hpke(recipient: X25519.PublicKey, enc: [UInt8], sealedKey: [UInt8])
        case passphrase(parameters: Scrypt.Parameters, salt: [UInt8], nonce: [UInt8], sealedKey: [UInt8])
    }

    /// Whether a file's first line is a version 2 header (else: version 1, or not a backup).
    public static func isVersion2(headerLine: [UInt8]) -> Bool {
        JSONDocument.parse(headerLine)?[EncryptedExport.formatMember] == .number(Double(version))
    }

    // MARK: - Writing

    /// A new file's header line (ending in a newline) and the sealer of its chunks, to `recipient`.
    public static func start(to recipient: X25519.PublicKey) throws(ExchangeError) -> (header: [UInt8], sealer: Sealer) {
        let fileKey = SecretBytes(randomCount: 32)
        let keyAAD = keyAssociatedData(method: "hpke", details: [EncryptedExport.hpkeSuite, Base64URL.encode(recipient.rawRepresentation)])
        let (enc, sealed): ([UInt8], [UInt8])
        do {
            (enc, sealed) = try HPKE.seal(fileKey.copyBytes(), to: recipient, info: hpkeInfo, aad: keyAAD)
        } catch {
            throw .encryption("encrypting to the recipient's key failed: \(error)")
        }
        let header = headerLine(.hpke(recipient: recipient, enc: enc, sealedKey: sealed))
        return (header, Sealer(key: fileKey, header: header))
    }

    /// As `start(to:)`, the file key sealed under `passphrase` (scrypt with `parameters`).
    public static func start(passphrase: SecretBytes, parameters: Scrypt.Parameters) throws(ExchangeError) -> (header: [UInt8], sealer: Sealer) {
        let fileKey = SecretBytes(randomCount: 32)
        let salt = SecureRandom.bytes(count: 16), nonce = SecureRandom.bytes(count: 12)
        do {
            let wrapping = try Scrypt.deriveKey(passphrase: passphrase, salt: salt, parameters: parameters)
            let (ciphertext, tag) = try AES256GCM.seal(fileKey.copyBytes(), key: wrapping, nonce: nonce,
                                                       authenticating: passphraseAAD(parameters, salt: salt, nonce: nonce))
            let header = headerLine(.passphrase(parameters: parameters, salt: salt, nonce: nonce, sealedKey: ciphertext + tag))
            return (header, Sealer(key: fileKey, header: header))
        } catch {
            throw .encryption("encrypting with the passphrase failed: \(error)")
        }
    }

    /// Seals a file's chunks in order: every chunk but the last exactly `chunkSize` bytes.
    public final class Sealer {
        let key: SecretBytes
        let header: [UInt8]
        private var counter: UInt64 = 0
        private var finished = false

        init(key: SecretBytes, header: [UInt8]) { self.key = key; self.header = header }

        public func seal(_ chunk: [UInt8], last: Bool) throws(ExchangeError) -> [UInt8] {
            guard !finished else { throw .encryption("a chunk after the last one") }
            guard chunk.count == BackupStream.chunkSize || (last && chunk.count <= BackupStream.chunkSize) else {
                throw .encryption("a chunk of \(chunk.count) bytes that is not the last")
            }
            defer { counter += 1; finished = last }
            do {
                let (ciphertext, tag) = try AES256GCM.seal(chunk, key: key, nonce: BackupStream.nonce(counter, last: last),
                                                           authenticating: header)
                return ciphertext + tag
            } catch {
                throw .encryption("encrypting the backup failed: \(error)")
            }
        }
    }

    // MARK: - Reading

    /// The header of a version 2 file, from its first line (without the newline).
    public struct Header: Sendable {
        public var method: Method
        public var chunkSize: Int
        /// The line as it is in the file (the chunks' associated data), newline included.
        public var line: [UInt8]

        public init(line: [UInt8]) throws(ExchangeError) {
            guard let object = JSONDocument.parse(line)?.objectValue else {
                throw .malformed("the backup's first line is not a JSON object")
            }
            let reader = ExchangeJSON(object, path: "")
            guard try reader.integer(EncryptedExport.formatMember) == BackupStream.version,
                  try reader.string("contents") == EncryptedExport.Contents.backup.rawValue else {
                throw .unsupportedVersion("not a version 2 Latchkey backup")
            }
            chunkSize = Int(try reader.integer("chunkSize"))
            guard chunkSize == BackupStream.chunkSize else { throw .malformed("chunkSize \(chunkSize): this reads \(BackupStream.chunkSize)") }
            switch try reader.string("method") {
            case "hpke":
                guard try reader.string("suite") == EncryptedExport.hpkeSuite else { throw .unsupportedVersion("HPKE suite: this reads \(EncryptedExport.hpkeSuite)") }
                let recipient: X25519.PublicKey
                do {
                    recipient = try X25519.PublicKey(rawRepresentation: try reader.bytes("recipient"))
                } catch {
                    throw .malformed("recipient is not an X25519 public key")
                }
                let enc = try reader.bytes("enc"), sealedKey = try reader.bytes("sealedKey")
                guard enc.count == 32, sealedKey.count == 32 + BackupStream.tagSize else { throw .malformed("enc or sealedKey has the wrong length") }
                method = .hpke(recipient: recipient, enc: enc, sealedKey: sealedKey)
            case "passphrase":
                let kdf = try reader.object("kdf")
                guard try kdf.string("name") == "scrypt" else { throw .unsupportedVersion("kdf.name: only scrypt is read") }
                guard let logN = UInt8(exactly: try kdf.integer("logN")), let r = UInt32(exactly: try kdf.integer("r")),
                      let p = UInt32(exactly: try kdf.integer("p")) else {
                    throw .malformed("kdf: scrypt parameters out of range (logN 10 to 22, r and p at most 2^32)")
                }
                // Checked before anything is derived: nothing is authenticated yet.
                if let problem = Scrypt.Parameters(logN: logN, r: r, p: p).problem { throw .malformed("kdf: \(problem)") }
                let salt = try kdf.bytes("salt"), nonce = try reader.bytes("nonce"), sealedKey = try reader.bytes("sealedKey")
                guard salt.count >= 16, nonce.count == 12, sealedKey.count == 32 + BackupStream.tagSize else {
                    throw .malformed("kdf.salt, nonce or sealedKey has the wrong length")
                }
                method = .passphrase(parameters: Scrypt.Parameters(logN: logN, r: r, p: p), salt: salt, nonce: nonce, sealedKey: sealedKey)
            case let other:
                throw .unknownFormat("method '\(other)' is not one this reads (hpke, passphrase)")
            }
            self.line = line + [0x0A]
        }

        /// The chunks' opener, the file key unsealed with the recipient's private key.
        public func opener(key: X25519.PrivateKey) throws(ExchangeError) -> Opener {
            guard case let .hpke(recipient, enc, sealedKey) = method else {
                throw .decryption("this backup is encrypted with a passphrase, not to a key: give --passphrase-file")
            }
            guard recipient == key.publicKey else {
                throw .decryption("this backup is encrypted to another key (its recipient's public key begins "
                                  + "\(Base64URL.encode(recipient.rawRepresentation).prefix(12))…)")
            }
            let aad = BackupStream.keyAssociatedData(method: "hpke", details: [EncryptedExport.hpkeSuite,
                                                                               Base64URL.encode(recipient.rawRepresentation)])
            do {
                return Opener(key: try HPKE.open(sealedKey, enc: enc, recipient: key, info: BackupStream.hpkeInfo, aad: aad), header: line)
            } catch {
                throw .decryption("the backup was made for this key but its header does not open with it: it was altered")
            }
        }

        /// The chunks' opener, the file key unsealed with `passphrase`.
        public func opener(passphrase: SecretBytes) throws(ExchangeError) -> Opener {
            guard case let .passphrase(parameters, salt, nonce, sealedKey) = method else {
                throw .decryption("this backup is encrypted to a key, not with a passphrase: give --key with the recipient's private key")
            }
            let wrapping: SecretBytes
            do {
                wrapping = try Scrypt.deriveKey(passphrase: passphrase, salt: salt, parameters: parameters)
            } catch {
                throw .decryption("scrypt failed: \(error)")
            }
            do {
                var key = try AES256GCM.open(Array(sealedKey.dropLast(BackupStream.tagSize)), tag: Array(sealedKey.suffix(BackupStream.tagSize)),
                                             key: wrapping, nonce: nonce,
                                             authenticating: BackupStream.passphraseAAD(parameters, salt: salt, nonce: nonce))
                defer { key.wipe() }
                return Opener(key: SecretBytes(key), header: line)
            } catch {
                throw .decryption("wrong passphrase, or the backup was altered")
            }
        }
    }

    /// Opens a file's chunks in order; the caller says which is the last (the file ends after it).
    public final class Opener {
        let key: SecretBytes
        let header: [UInt8]
        private var counter: UInt64 = 0
        private var finished = false

        init(key: SecretBytes, header: [UInt8]) { self.key = key; self.header = header }

        /// One sealed chunk (`chunkSize` + 16 bytes, or fewer for the last one).
        public func open(_ sealed: [UInt8], last: Bool) throws(ExchangeError) -> [UInt8] {
            guard !finished else { throw .decryption("the backup goes on after its last chunk: it was altered") }
            guard sealed.count >= BackupStream.tagSize, sealed.count <= BackupStream.chunkSize + BackupStream.tagSize,
                  last || sealed.count == BackupStream.chunkSize + BackupStream.tagSize else {
                throw .decryption("the backup is cut short or altered (a chunk of \(sealed.count) bytes)")
            }
            defer { counter += 1; finished = last }
            do {
                return try AES256GCM.open(Array(sealed.dropLast(BackupStream.tagSize)), tag: Array(sealed.suffix(BackupStream.tagSize)),
                                          key: key, nonce: BackupStream.nonce(counter, last: last), authenticating: header)
            } catch {
                throw .decryption("the backup is altered or cut short (chunk \(counter) does not open)")
            }
        }
    }

    // MARK: - The plaintext's prologue

    /// The bytes before the database: a 4-byte length, then the CBOR map. The caller wipes them.
    public static func prologue(masterKey: SecretBytes, created: Int64, databaseLength: Int) -> [UInt8] {
        var key = masterKey.copyBytes()
        defer { key.wipe() }
        var map = CBORValue.map([1: .textString(KeyBackup.magic), 2: .unsignedInt(UInt64(version)), 3: .byteString(key),
                                 5: .unsignedInt(UInt64(max(0, created))), 6: .unsignedInt(UInt64(databaseLength))]).encoded()
        defer { map.wipe() }
        let length = UInt32(map.count)
        return [UInt8(length >> 24), UInt8(length >> 16 & 0xFF), UInt8(length >> 8 & 0xFF), UInt8(length & 0xFF)] + map
    }

    /// The prologue read from the start of the plaintext: the master key, when the backup was
    /// made, the database's length, and how many bytes the prologue took (nil: more are needed).
    public static func readPrologue(_ bytes: [UInt8]) throws(ExchangeError)
        -> (masterKey: SecretBytes, created: Int64, databaseLength: Int, consumed: Int)? {
        guard bytes.count >= 4 else { return nil }
        let length = Int(bytes[0]) << 24 | Int(bytes[1]) << 16 | Int(bytes[2]) << 8 | Int(bytes[3])
        guard length <= 4096 else { throw .malformed("the backup's header map is \(length) bytes") }
        guard bytes.count >= 4 + length else { return nil }
        var encoded = Array(bytes[4..<(4 + length)])
        defer { encoded.wipe() }
        guard let value = try? CBORDecoder.decode(encoded, limits: CBORDecodingLimits(maxDepth: 2, maxItems: 16, maxLength: 4096)),
              value[1]?.stringValue == KeyBackup.magic, value[2]?.intValue == version,
              var key = value[3]?.bytesValue, key.count == 32, let databaseLength = value[6]?.intValue, databaseLength >= 0 else {
            throw .malformed("the backup's header map is not a version 2 Latchkey backup's")
        }
        defer { key.wipe() }
        return (SecretBytes(key), Int64(value[5]?.intValue ?? 0), databaseLength, 4 + length)
    }

    // MARK: - Parts

    static func nonce(_ counter: UInt64, last: Bool) -> [UInt8] {
        [0, 0, 0] + (0..<8).reversed().map { UInt8(truncatingIfNeeded: counter >> (8 * UInt64($0))) } + [last ? 1 : 0]
    }

    static func keyAssociatedData(method: String, details: [String]) -> [UInt8] {
        Array((["\(EncryptedExport.formatMember)/\(version)", EncryptedExport.Contents.backup.rawValue, method] + details)
            .joined(separator: "\n").utf8)
    }

    static func passphraseAAD(_ parameters: Scrypt.Parameters, salt: [UInt8], nonce: [UInt8]) -> [UInt8] {
        keyAssociatedData(method: "passphrase", details: ["scrypt", "\(parameters.logN)", "\(parameters.r)", "\(parameters.p)",
                                                          Base64URL.encode(salt), Base64URL.encode(nonce)])
    }

    static func headerLine(_ method: Method) -> [UInt8] {
        var members: [String: JSONValue] = [EncryptedExport.formatMember: .int(version),
                                            "contents": .string(EncryptedExport.Contents.backup.rawValue), "chunkSize": .int(chunkSize)]
        switch method {
        case let .hpke(recipient, enc, sealedKey):
            members["method"] = .string("hpke")
            members["suite"] = .string(EncryptedExport.hpkeSuite)
            members["recipient"] = .string(Base64URL.encode(recipient.rawRepresentation))
            members["enc"] = .string(Base64URL.encode(enc))
            members["sealedKey"] = .string(Base64URL.encode(sealedKey))
        case let .passphrase(parameters, salt, nonce, sealedKey):
            members["method"] = .string("passphrase")
            members["kdf"] = EncryptedExport.scrypt(parameters, salt: salt)
            members["nonce"] = .string(Base64URL.encode(nonce))
            members["sealedKey"] = .string(Base64URL.encode(sealedKey))
        }
        return Array(JSONValue.sorted(members).rendered.utf8) + [0x0A]
    }
}

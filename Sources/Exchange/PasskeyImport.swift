import Authenticator
import CredentialStore
import CTAP
import FIDOCrypto

/// An import planned against a key's store: every passkey of the file checked, turned into a
/// counterless resident credential, and its conflicts with what the key holds decided. Applying
/// it is one transaction (`SQLiteCredentialStore.saveResidentCredentials(_:updatingSetting:_:)`),
/// and it is applied only when nothing in the file was refused: an import never half happens.
public struct PasskeyImport: Sendable {
    /// What to do with a passkey for an account (RP ID and user handle) or credential ID the key
    /// already has.
    public enum ConflictRule: Sendable {
        /// Import nothing and say which (the default: nothing is overwritten unasked).
        case refuse
        /// The file's passkey replaces the key's.
        case replace
        /// The key's stays; the file's is skipped.
        case skipExisting
    }

    public enum Action: Sendable, Equatable {
        case imported
        case replaced
        case skipped(String)
        /// Not importable; the whole import is refused.
        case refused(String)
        /// Conflicts with the key's credential under `.refuse`; the whole import is refused.
        case conflict(String)
    }

    public struct Outcome: Sendable {
        public var origin: String
        public var rpID: String
        public var credentialID: [UInt8]
        public var userName: String?
        public var action: Action
    }

    public var outcomes: [Outcome] = []
    /// The credentials to store, and the large blobs to put in the array under their keys.
    public var credentials: [ResidentCredential] = []
    var largeBlobs: [(key: SecretBytes, blob: [UInt8])] = []

    /// Whether applying it is allowed: no passkey refused and no conflict left undecided.
    public var canApply: Bool {
        !outcomes.contains { if case .refused = $0.action { true } else if case .conflict = $0.action { true } else { false } }
    }

    /// Checks every passkey of `file` against what the key can hold (`algorithms` it makes,
    /// `maxCredBlobLength`) and what it has (`existing`: all its resident credentials, hidden ones too).
    public init(file: PasskeyFile, existing: [ResidentCredential], algorithms: [COSEAlgorithm], maxCredBlobLength: Int,
                conflicts rule: ConflictRule, now: Int64, random: RandomSource) {
        var seenAccounts = Set<[UInt8]>(), seenIDs = Set<[UInt8]>()
        for passkey in file.passkeys {
            var outcome = Outcome(origin: passkey.origin, rpID: passkey.rpID, credentialID: passkey.credentialID,
                                  userName: passkey.userName, action: .imported)
            defer { outcomes.append(outcome) }
            let credential: ResidentCredential
            let largeBlob: [UInt8]?
            do throws(ExchangeError) {
                (credential, largeBlob) = try Self.credential(from: passkey, algorithms: algorithms,
                                                              maxCredBlobLength: maxCredBlobLength, now: now, random: random)
            } catch {
                outcome.action = .refused(error.description)
                continue
            }
            let account = Self.accountKey(rpID: passkey.rpID, userHandle: passkey.userHandle)
            guard seenAccounts.insert(account).inserted, seenIDs.insert(passkey.credentialID).inserted else {
                outcome.action = .refused("the file has another passkey for this account or with this credential ID")
                continue
            }
            let clash = existing.first {
                $0.credentialID == passkey.credentialID || Self.accountKey(rpID: $0.rpID, userHandle: $0.userHandle) == account
            }
            if let clash {
                let what = clash.credentialID == passkey.credentialID ? "a credential with this ID" : "a passkey for this account"
                let hidden = clash.hiddenSince == nil ? "" : " (hidden by a signal)"
                switch rule {
                case .refuse:
                    outcome.action = .conflict("the key already has \(what)\(hidden): give --replace or --skip-existing")
                    continue
                case .skipExisting:
                    outcome.action = .skipped("the key already has \(what)\(hidden)")
                    continue
                case .replace:
                    outcome.action = .replaced
                }
            }
            credentials.append(credential)
            if let largeBlob, let key = credential.largeBlobKey { largeBlobs.append((key, largeBlob)) }
        }
    }

    static func accountKey(rpID: String, userHandle: [UInt8]) -> [UInt8] {
        SHA256.hash(Array(rpID.utf8)) + userHandle
    }

    /// The counterless resident credential a passkey makes, and its large blob; refused with the
    /// reason when the key could not hold it or it would not work.
    static func credential(from passkey: ImportedPasskey, algorithms: [COSEAlgorithm], maxCredBlobLength: Int,
                           now: Int64, random: RandomSource) throws(ExchangeError) -> (ResidentCredential, [UInt8]?) {
        guard !passkey.rpID.isEmpty, passkey.rpID.utf8.count <= 253, !passkey.rpID.contains(where: { $0.isWhitespace || $0 == "/" }) else {
            throw .malformed("rpId '\(passkey.rpID.prefix(80))' is not an RP ID")
        }
        guard (1...64).contains(passkey.userHandle.count) else {
            throw .malformed("the user handle is \(passkey.userHandle.count) bytes; WebAuthn's are 1 to 64")
        }
        guard (1...1023).contains(passkey.credentialID.count) else {
            throw .malformed("the credential ID is \(passkey.credentialID.count) bytes; WebAuthn's are 1 to 1023")
        }
        let (keyType, secret): (PKCS8PrivateKey.Algorithm, SecretBytes)
        do {
            (keyType, secret) = try passkey.privateKey.withUnsafeBytes { bytes throws(PKCS8PrivateKey.Failure) in
                try PKCS8PrivateKey.decode(Array(bytes))
            }
        } catch {
            throw .malformed("the private key: \(error)")
        }
        let rsaAlgorithm = algorithms.first { $0.rsaPadding != nil }
        guard let algorithm = keyType == .rsa ? rsaAlgorithm : COSEAlgorithm(pkcs8: keyType), algorithms.contains(algorithm) else {
            throw .malformed("the private key is of an algorithm this key does not make (it makes "
                             + algorithms.map(\.name).joined(separator: ", ") + ")")
        }
        guard CredentialKeyCheck.publicKey(algorithm: algorithm, secret: secret) != nil else {
            throw .malformed("the private key does not sign as \(algorithm.name)")
        }
        var credential = ResidentCredential(
            credentialID: passkey.credentialID, rpID: passkey.rpID, rpIDHash: SHA256.hash(Array(passkey.rpID.utf8)),
            rpName: passkey.rpName, userHandle: passkey.userHandle, userName: passkey.userName,
            userDisplayName: passkey.userDisplayName, algorithm: algorithm.rawValue, privateKey: secret,
            createdAt: passkey.createdAt ?? now)
        credential.counterless = true
        if let level = passkey.credProtect {
            guard let policy = UInt8(exactly: level).flatMap(CredentialProtectionPolicy.init(rawValue:)) else {
                throw .malformed("credProtect \(level) is not a level")
            }
            credential.credProtect = policy
        }
        if let hmac = passkey.hmacCredentials {
            guard hmac.withUV.count == 32, hmac.withoutUV.count == 32 else {
                throw .malformed("hmacCredentials: credWithUV and credWithoutUV must be 32 bytes each")
            }
            credential.hmacSecretWithUV = hmac.withUV
            credential.hmacSecretWithoutUV = hmac.withoutUV
            // Unknown whether a site used it: assume so, so that a deletion warns.
            credential.usedHMACSecret = true
        }
        if let credBlob = passkey.credBlob {
            guard credBlob.count <= maxCredBlobLength else {
                throw .malformed("credBlob is \(credBlob.count) bytes; this key keeps at most \(maxCredBlobLength)")
            }
            credential.credBlob = credBlob
        }
        var blob: [UInt8]?
        if let largeBlob = passkey.largeBlob {
            guard largeBlob.uncompressedSize <= LargeBlobStorage.maxBlobLength,
                  let inflated = try? RawDeflate.inflate(largeBlob.data, maxOutput: largeBlob.uncompressedSize),
                  inflated.count == largeBlob.uncompressedSize else {
                throw .malformed("largeBlob: its data does not inflate to its uncompressedSize (\(largeBlob.uncompressedSize))")
            }
            blob = inflated
            credential.largeBlobKey = random.secret(count: 32)
        }
        return (credential, blob)
    }

    /// The large-blob array with the imported blobs added (each under its credential's new key),
    /// within `maxLength` bytes.
    public func largeBlobArray(adding to: [UInt8], maxLength: Int, random: RandomSource) throws(LargeBlobStorage.Failure) -> [UInt8] {
        var array = to
        for (key, blob) in largeBlobs {
            array = try LargeBlobStorage.replacingBlob(in: array, key: key, with: blob, maxLength: maxLength, random: random)
        }
        return array
    }

    public var hasLargeBlobs: Bool { !largeBlobs.isEmpty }

    public enum ApplyFailure: Error, Sendable {
        case store(StoreError)
        case largeBlobs(LargeBlobStorage.Failure)
    }

    /// Stores the planned credentials, and their large blobs in the key's array (at most
    /// `maxLargeBlobArray` bytes), in one transaction: all or nothing.
    public func apply(to store: SQLiteCredentialStore, maxLargeBlobArray: Int, random: RandomSource) throws(ApplyFailure) {
        var blobFailure: LargeBlobStorage.Failure?
        do {
            try store.saveResidentCredentials(credentials, updatingSetting: LargeBlobStorage.settingName) {
                (old: [UInt8]?) throws(StoreError) -> [UInt8]? in
                guard hasLargeBlobs else { return old }
                do throws(LargeBlobStorage.Failure) {
                    return try largeBlobArray(adding: old ?? LargeBlobStorage.emptyArray, maxLength: maxLargeBlobArray, random: random)
                } catch {
                    blobFailure = error
                    throw StoreError.io("the large blobs do not fit")
                }
            }
        } catch {
            if let blobFailure { throw .largeBlobs(blobFailure) }
            throw .store(error)
        }
    }
}

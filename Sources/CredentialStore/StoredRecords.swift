import Authenticator
import CTAP
import FIDOCrypto

// The field numbers of each record kind (SealedRecord). Never renumber: stores in the field
// hold these numbers. New fields take new numbers; readers ignore numbers they do not know.

/// Fields of a `RecordKind.residentCredential` record.
enum CredentialField {
    static let credentialID: UInt8 = 1
    static let rpID: UInt8 = 2
    static let rpIDHash: UInt8 = 3
    static let rpName: UInt8 = 4
    static let userHandle: UInt8 = 5
    static let userName: UInt8 = 6
    static let userDisplayName: UInt8 = 7
    static let algorithm: UInt8 = 8
    static let privateKey: UInt8 = 9
    static let credProtect: UInt8 = 10
    static let credBlob: UInt8 = 11
    static let largeBlobKey: UInt8 = 12
    static let hmacSecretWithUV: UInt8 = 13
    static let hmacSecretWithoutUV: UInt8 = 14
    /// Bit 0: backup eligible (BE); bit 1: backed up (BS). Absent: neither.
    static let backup: UInt8 = 15
    /// Present (true) only for a credential that is not discoverable (`ResidentCredential.discoverable`).
    static let notDiscoverable: UInt8 = 16
    /// Present (true) only for a third-party payment credential (`ResidentCredential.thirdPartyPayment`).
    static let thirdPartyPayment: UInt8 = 17
    /// Present (true) only for a counterless credential (`ResidentCredential.counterless`).
    static let counterless: UInt8 = 18
    /// Present (true) once the credential gave an hmac-secret output (`ResidentCredential.usedHMACSecret`).
    static let usedHMACSecret: UInt8 = 19
}

/// Fields of a `RecordKind.relyingParty` record.
enum RelyingPartyField {
    static let rpID: UInt8 = 1
    static let rpIDHash: UInt8 = 2
    static let name: UInt8 = 3
}

/// Fields of a `RecordKind.deviceSecrets` record.
enum DeviceSecretsField {
    static let aaguid: UInt8 = 1
    static let wrappingKey: UInt8 = 2
    static let attestationPrivateKey: UInt8 = 3
    static let attestationCertificate: UInt8 = 4
    static let attestationCACertificate: UInt8 = 5
}

/// Fields of a `RecordKind.pinState` record.
enum PINStateField {
    static let pinHash: UInt8 = 1
    static let pinCodePoints: UInt8 = 2
    static let retries: UInt8 = 3
    static let forcePINChange: UInt8 = 4
}

/// Fields of `RecordKind.setting` and `RecordKind.keyCheck` records.
enum ValueField {
    static let value: UInt8 = 1
}

extension ResidentCredential {
    /// The record sealed into `credentials.sealed`. `createdAt` and `hiddenSince` live in their
    /// own (non-identifying) columns, so that ordering and signals need no decryption.
    func record() -> [UInt8] {
        var writer = RecordWriter(kind: .residentCredential)
        writer.append(CredentialField.credentialID, bytes: credentialID)
        writer.append(CredentialField.rpID, string: rpID)
        writer.append(CredentialField.rpIDHash, bytes: rpIDHash)
        writer.append(CredentialField.rpName, string: rpName)
        writer.append(CredentialField.userHandle, bytes: userHandle)
        writer.append(CredentialField.userName, string: userName)
        writer.append(CredentialField.userDisplayName, string: userDisplayName)
        writer.append(CredentialField.algorithm, integer: Int64(algorithm))
        writer.append(CredentialField.privateKey, secret: privateKey)
        writer.append(CredentialField.credProtect, integer: Int64(credProtect.rawValue))
        writer.append(CredentialField.credBlob, bytes: credBlob)
        writer.append(CredentialField.largeBlobKey, secret: largeBlobKey)
        writer.append(CredentialField.hmacSecretWithUV, secret: hmacSecretWithUV)
        writer.append(CredentialField.hmacSecretWithoutUV, secret: hmacSecretWithoutUV)
        let backup = (backupEligible ? 1 : 0) | (backedUp ? 2 : 0)
        writer.append(CredentialField.backup, integer: backup == 0 ? nil : Int64(backup))
        if !discoverable { writer.append(CredentialField.notDiscoverable, bool: true) }
        if thirdPartyPayment { writer.append(CredentialField.thirdPartyPayment, bool: true) }
        if counterless { writer.append(CredentialField.counterless, bool: true) }
        if usedHMACSecret { writer.append(CredentialField.usedHMACSecret, bool: true) }
        return writer.bytes
    }

    init(record: RecordReader, createdAt: Int64, hiddenSince: Int64?) throws(StoreError) {
        let algorithm = try record.requiredInteger(CredentialField.algorithm, "algorithm")
        // An absent credProtect is the default level; a value that is not one of the three
        // levels is out of range, like any field whose value does not fit its type.
        let credProtect = try record.integer(CredentialField.credProtect) ?? 1
        let backup = try record.integer(CredentialField.backup) ?? 0
        guard let algorithm = Int(exactly: algorithm), (0...3).contains(backup),
              let credProtect = UInt8(exactly: credProtect).flatMap(CredentialProtectionPolicy.init(rawValue:)) else {
            throw .corrupt("credentials: field out of range")
        }
        self.init(credentialID: try record.requiredBytes(CredentialField.credentialID, "credential ID"),
                  rpID: try record.requiredString(CredentialField.rpID, "rpId"),
                  rpIDHash: try record.requiredBytes(CredentialField.rpIDHash, "rpIdHash"),
                  rpName: try record.string(CredentialField.rpName),
                  userHandle: try record.requiredBytes(CredentialField.userHandle, "user handle"),
                  userName: try record.string(CredentialField.userName),
                  userDisplayName: try record.string(CredentialField.userDisplayName),
                  algorithm: algorithm,
                  privateKey: try record.requiredSecret(CredentialField.privateKey, "private key"),
                  createdAt: createdAt,
                  credProtect: credProtect,
                  credBlob: record.bytes(CredentialField.credBlob),
                  largeBlobKey: record.secret(CredentialField.largeBlobKey),
                  hmacSecretWithUV: record.secret(CredentialField.hmacSecretWithUV),
                  hmacSecretWithoutUV: record.secret(CredentialField.hmacSecretWithoutUV),
                  hiddenSince: hiddenSince)
        backupEligible = backup & 1 != 0
        backedUp = backup & 2 != 0
        discoverable = !(try record.bool(CredentialField.notDiscoverable) ?? false)
        thirdPartyPayment = try record.bool(CredentialField.thirdPartyPayment) ?? false
        counterless = try record.bool(CredentialField.counterless) ?? false
        usedHMACSecret = try record.bool(CredentialField.usedHMACSecret) ?? false
    }

    /// The `credentials.cred_protect` column: the credProtect level, or 0 for a credential that
    /// is not discoverable (so the discoverable statements and counts leave it out).
    var protectionColumn: Int64 {
        discoverable ? Int64(credProtect.rawValue) : 0
    }
}

extension RelyingPartyEntry {
    func record() -> [UInt8] {
        var writer = RecordWriter(kind: .relyingParty)
        writer.append(RelyingPartyField.rpID, string: rpID)
        writer.append(RelyingPartyField.rpIDHash, bytes: rpIDHash)
        writer.append(RelyingPartyField.name, string: name)
        return writer.bytes
    }

    init(record: RecordReader) throws(StoreError) {
        self.init(rpID: try record.requiredString(RelyingPartyField.rpID, "rpId"),
                  rpIDHash: try record.requiredBytes(RelyingPartyField.rpIDHash, "rpIdHash"),
                  name: try record.string(RelyingPartyField.name))
    }
}

extension DeviceSecrets {
    func record() -> [UInt8] {
        var writer = RecordWriter(kind: .deviceSecrets)
        writer.append(DeviceSecretsField.aaguid, bytes: aaguid)
        writer.append(DeviceSecretsField.wrappingKey, secret: wrappingKey)
        writer.append(DeviceSecretsField.attestationPrivateKey, secret: attestationPrivateKey)
        writer.append(DeviceSecretsField.attestationCertificate, bytes: attestationCertificate)
        writer.append(DeviceSecretsField.attestationCACertificate, bytes: attestationCACertificate)
        return writer.bytes
    }

    init(record: RecordReader) throws(StoreError) {
        self.init(aaguid: try record.requiredBytes(DeviceSecretsField.aaguid, "AAGUID"),
                  wrappingKey: try record.requiredSecret(DeviceSecretsField.wrappingKey, "wrapping key"),
                  attestationPrivateKey: try record.requiredSecret(DeviceSecretsField.attestationPrivateKey,
                                                                   "attestation key"),
                  attestationCertificate: try record.requiredBytes(DeviceSecretsField.attestationCertificate,
                                                                   "attestation certificate"),
                  attestationCACertificate: try record.requiredBytes(DeviceSecretsField.attestationCACertificate,
                                                                     "attestation CA certificate"))
    }
}

extension PINState {
    func record() -> [UInt8] {
        var writer = RecordWriter(kind: .pinState)
        writer.append(PINStateField.pinHash, secret: pinHash)
        writer.append(PINStateField.pinCodePoints, integer: Int64(pinCodePoints))
        writer.append(PINStateField.retries, integer: Int64(retries))
        writer.append(PINStateField.forcePINChange, bool: forcePINChange)
        return writer.bytes
    }

    init(record: RecordReader) throws(StoreError) {
        let codePoints = try record.requiredInteger(PINStateField.pinCodePoints, "PIN length")
        let retries = try record.requiredInteger(PINStateField.retries, "PIN retries")
        guard let codePoints = Int(exactly: codePoints), let retries = Int(exactly: retries) else {
            throw .corrupt("device: PIN state out of range")
        }
        self.init(pinHash: record.secret(PINStateField.pinHash), pinCodePoints: codePoints,
                  retries: retries, forcePINChange: try record.bool(PINStateField.forcePINChange) ?? false)
    }
}

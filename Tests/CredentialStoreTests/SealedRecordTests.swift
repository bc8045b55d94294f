import Authenticator
@testable import CredentialStore
import CTAP
import FIDOCrypto
import XCTest

/// The sealed plaintext format (SealedRecord): round trips, total parsing, tolerance of
/// unknown fields (architecture rule 4).
final class SealedRecordTests: XCTestCase {
    func testCredentialRecordRoundTrips() throws {
        let credential = makeCredential()
        let reader = try RecordReader(credential.record(), kind: .residentCredential, context: "test")
        assertSameCredential(try ResidentCredential(record: reader, createdAt: credential.createdAt,
                                                    hiddenSince: nil), credential)
    }

    /// A record larger than the writer's reserved 4 KiB (a planted RSA-4096 key's 2.3 KB DER and
    /// long names) still round trips: the writer moves to a larger buffer, wiping the old one.
    func testARecordLargerThanTheReservedRoomRoundTrips() throws {
        var credential = makeCredential(userName: String(repeating: "n", count: 1500), displayName: String(repeating: "d", count: 1500))
        credential.algorithm = -257
        credential.privateKey = SecretBytes(randomCount: 2350)
        let record = credential.record()
        XCTAssertGreaterThan(record.count, 4096)
        let reader = try RecordReader(record, kind: .residentCredential, context: "test")
        assertSameCredential(try ResidentCredential(record: reader, createdAt: credential.createdAt, hiddenSince: nil), credential)
    }

    /// BE/BS: field 15, written only when set (the records of a security key's credentials do
    /// not change), read back as they were; a value outside 0...3 is corrupt.
    func testBackupFlagsRoundTripAndAreWrittenOnlyWhenSet() throws {
        let credential = makeCredential()
        XCTAssertNil(try RecordReader(credential.record(), kind: .residentCredential, context: "test").integer(CredentialField.backup))
        for (eligible, backedUp) in [(true, false), (true, true), (false, true)] {
            var flagged = credential
            flagged.backupEligible = eligible
            flagged.backedUp = backedUp
            let reader = try RecordReader(flagged.record(), kind: .residentCredential, context: "test")
            let read = try ResidentCredential(record: reader, createdAt: 0, hiddenSince: nil)
            XCTAssertEqual([read.backupEligible, read.backedUp], [eligible, backedUp])
        }
        var storedOnly = credential
        storedOnly.discoverable = false
        let storedOnlyReader = try RecordReader(storedOnly.record(), kind: .residentCredential, context: "test")
        XCTAssertFalse(try ResidentCredential(record: storedOnlyReader, createdAt: 0, hiddenSince: nil).discoverable)
        XCTAssertEqual(storedOnly.protectionColumn, 0, "out of the discoverable statements")
        XCTAssertNil(try RecordReader(credential.record(), kind: .residentCredential, context: "test")
            .bool(CredentialField.notDiscoverable), "written only when set")
        var writer = RecordWriter(kind: .residentCredential)
        writer.append(CredentialField.credentialID, bytes: credential.credentialID)
        writer.append(CredentialField.rpID, string: credential.rpID)
        writer.append(CredentialField.rpIDHash, bytes: credential.rpIDHash)
        writer.append(CredentialField.userHandle, bytes: credential.userHandle)
        writer.append(CredentialField.algorithm, integer: -7)
        writer.append(CredentialField.privateKey, bytes: [UInt8](repeating: 1, count: 32))
        writer.append(CredentialField.backup, integer: 4)
        let reader = try RecordReader(writer.bytes, kind: .residentCredential, context: "test")
        XCTAssertThrowsError(try ResidentCredential(record: reader, createdAt: 0, hiddenSince: nil)) { error in
            XCTAssertEqual(error as? StoreError, .corrupt("credentials: field out of range"))
        }
    }

    func testKnownLayout() throws {
        var writer = RecordWriter(kind: .setting)
        writer.append(1, bytes: [0xAA, 0xBB])
        writer.append(2, integer: -2)
        writer.append(3, bool: true)
        writer.append(4, string: nil)   // absent
        XCTAssertEqual(writer.bytes, [
            0x01,                                   // format version
            0x05,                                   // kind: setting
            0x01, 0x00, 0x00, 0x00, 0x02, 0xAA, 0xBB,   // tag 1, length 2
            0x02, 0x00, 0x00, 0x00, 0x08,           // tag 2, length 8
            0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFE,
            0x03, 0x00, 0x00, 0x00, 0x01, 0x01,     // tag 3, true
        ])
        let reader = try RecordReader(writer.bytes, kind: .setting, context: "test")
        XCTAssertEqual(reader.bytes(1), [0xAA, 0xBB])
        XCTAssertEqual(try reader.integer(2), -2)
        XCTAssertEqual(try reader.bool(3), true)
        XCTAssertNil(try reader.string(4))
    }

    /// Fed every prefix, the reader accepts exactly those that end between fields (a record
    /// with fewer fields) and rejects every other as corrupt; nothing traps.
    func testEveryTruncationIsCorruptUnlessItEndsBetweenFields() throws {
        let bytes = makeCredential().record()
        var boundaries: Set<Int> = [2]
        var offset = 2
        while offset < bytes.count {
            let length = Int(bytes[offset + 1]) << 24 | Int(bytes[offset + 2]) << 16
                | Int(bytes[offset + 3]) << 8 | Int(bytes[offset + 4])
            offset += 5 + length
            boundaries.insert(offset)
        }
        XCTAssertEqual(offset, bytes.count)
        for length in 0..<bytes.count {
            let reader = try? RecordReader(Array(bytes.prefix(length)), kind: .residentCredential, context: "test")
            XCTAssertEqual(reader != nil, boundaries.contains(length), "prefix \(length)")
        }
        // The first fields alone miss required ones: decoding them is corrupt, not a default.
        let reader = try RecordReader(Array(bytes.prefix(boundaries.sorted()[2])), kind: .residentCredential, context: "test")
        XCTAssertThrowsError(try ResidentCredential(record: reader, createdAt: 0, hiddenSince: nil))
    }

    /// `record` with its credProtect field set to `level` (nil: left out), other fields as they are.
    private func credentialRecord(_ record: [UInt8], credProtect level: Int64?) -> [UInt8] {
        var writer = RecordWriter(kind: .residentCredential)
        var offset = 2
        while offset < record.count {
            let tag = record[offset]
            let length = Int(record[offset + 1]) << 24 | Int(record[offset + 2]) << 16
                | Int(record[offset + 3]) << 8 | Int(record[offset + 4])
            let value = Array(record[(offset + 5)..<(offset + 5 + length)])
            offset += 5 + length
            if tag == CredentialField.credProtect { continue }
            writer.append(tag, bytes: value)
        }
        writer.append(CredentialField.credProtect, integer: level)
        return writer.bytes
    }

    /// A stored credProtect is one of the three levels (CTAP 2.1 §12.1), written as its wire
    /// byte; a record without one is level 1, and one with anything else is corrupt (an error
    /// for the lookups that meet it, never a trap).
    func testStoredCredProtectIsItsWireByteAndAnythingElseIsCorrupt() throws {
        let credential = makeCredential()
        for level in CredentialProtectionPolicy.allCases {
            var leveled = credential
            leveled.credProtect = level
            let reader = try RecordReader(leveled.record(), kind: .residentCredential, context: "test")
            XCTAssertEqual(try reader.integer(CredentialField.credProtect), Int64(level.rawValue))
            XCTAssertEqual(try ResidentCredential(record: reader, createdAt: 0, hiddenSince: nil).credProtect, level)
        }
        let absent = try RecordReader(credentialRecord(credential.record(), credProtect: nil), kind: .residentCredential,
                                      context: "test")
        XCTAssertEqual(try ResidentCredential(record: absent, createdAt: 0, hiddenSince: nil).credProtect, .userVerificationOptional)
        for invalid: Int64 in [0, 4, 255, 256, -1, .max] {
            let reader = try RecordReader(credentialRecord(credential.record(), credProtect: invalid), kind: .residentCredential,
                                          context: "test")
            XCTAssertThrowsError(try ResidentCredential(record: reader, createdAt: 0, hiddenSince: nil), "\(invalid)") { error in
                XCTAssertEqual(error as? StoreError, .corrupt("credentials: field out of range"))
            }
        }
    }

    func testUnknownFieldsAreSkippedDuplicatesRejected() throws {
        var writer = RecordWriter(kind: .relyingParty)
        writer.append(RelyingPartyField.rpID, string: "example.com")
        writer.append(RelyingPartyField.rpIDHash, bytes: rpIDHash("example.com"))
        writer.append(200, bytes: [1, 2, 3])   // a field from a later version
        let entry = try RelyingPartyEntry(record: RecordReader(writer.bytes, kind: .relyingParty, context: "test"))
        XCTAssertEqual(entry, RelyingPartyEntry(rpID: "example.com", rpIDHash: rpIDHash("example.com"), name: nil))

        writer.append(200, bytes: [4])
        XCTAssertThrowsError(try RecordReader(writer.bytes, kind: .relyingParty, context: "test"))
    }

    func testWrongKindVersionAndEncodingAreCorrupt() {
        let record = PINState(pinHash: nil, pinCodePoints: 4, retries: 8, forcePINChange: false).record()
        XCTAssertThrowsError(try RecordReader(record, kind: .setting, context: "test"))
        var newer = record
        newer[0] = 2
        XCTAssertThrowsError(try RecordReader(newer, kind: .pinState, context: "test"))
        var writer = RecordWriter(kind: .relyingParty)
        writer.append(RelyingPartyField.rpID, bytes: [0xFF, 0xFE])   // not UTF-8
        writer.append(RelyingPartyField.rpIDHash, bytes: [1])
        XCTAssertThrowsError(try RelyingPartyEntry(record: RecordReader(writer.bytes, kind: .relyingParty, context: "test")))
    }

    func testSealedBlobIsBoundToItsRow() throws {
        let sealer = RowSealer(masterKey: SecretBytes(randomCount: 32))
        var plaintext: [UInt8] = [1, 2, 3]
        let sealed = try sealer.seal(&plaintext, binding: .device(name: "pin"))
        XCTAssertEqual(plaintext, [], "plaintext is wiped")
        XCTAssertEqual(sealed.count, 12 + 3 + 16)
        XCTAssertEqual(try sealer.open(sealed, binding: .device(name: "pin")), [1, 2, 3])
        XCTAssertThrowsError(try sealer.open(sealed, binding: .device(name: "secrets")))
        XCTAssertThrowsError(try sealer.open(sealed, binding: .relyingParty(relyingPartyKey: Array("pin".utf8))))
        XCTAssertThrowsError(try RowSealer(masterKey: SecretBytes(randomCount: 32)).open(sealed, binding: .device(name: "pin")))
    }

    func testLookupKeysAreKeyedAndSeparated() {
        let key = SecretBytes(randomCount: 32)
        let sealer = RowSealer(masterKey: key)
        let id = SecureRandom.bytes(count: 32)
        XCTAssertEqual(sealer.credentialKey(credentialID: id), sealer.credentialKey(credentialID: id))
        XCTAssertNotEqual(sealer.credentialKey(credentialID: id), RowSealer(masterKey: SecretBytes(randomCount: 32)).credentialKey(credentialID: id))
        XCTAssertNotEqual(sealer.credentialKey(credentialID: id), sealer.relyingPartyKey(rpIDHash: id))
        XCTAssertNotEqual(sealer.credentialKey(credentialID: id), FIDOCrypto.SHA256.hash(id))
    }
}

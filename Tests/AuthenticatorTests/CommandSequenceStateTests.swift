@testable import Authenticator
import CTAP
import FIDOCrypto
import XCTest

/// The state that spans requests of one command, tested as plain values (no authenticator).
final class CommandSequenceStateTests: XCTestCase {
    private func handed(_ index: UInt8) -> DiscoverableCredential {
        DiscoverableCredential(
            credential: ResidentCredential(credentialID: [index], rpID: "rp.example", rpIDHash: SHA256.hash(Array("rp.example".utf8)),
                                           rpName: nil, userHandle: [index], userName: nil, userDisplayName: nil, algorithm: -7,
                                           privateKey: SecretBytes([UInt8](repeating: 1, count: 32)), createdAt: 0),
            position: CredentialReference([index]))
    }

    private func pendingAssertions(channel: UInt32 = 7, remaining: Int = 2, now: UInt64 = 1_000) -> PendingAssertions {
        PendingAssertions(channel: channel, rpIDHash: SHA256.hash(Array("rp.example".utf8)), clientDataHash: [1],
                          flags: [.userPresent], userVerified: false, wantsCredBlob: false, wantsLargeBlobKey: false,
                          hmacSecret: nil, position: CredentialReference([0]), remaining: remaining, now: now)
    }

    // MARK: PendingAssertions (CTAP 2.1 §6.3)

    func testGetNextAssertionSequenceEndsOnAnyOtherCommandFromItsChannelOnly() {
        let pending = pendingAssertions(channel: 7)
        XCTAssertFalse(pending.isEnded(by: .getNextAssertion, on: 7))
        for command in CTAPCommand.allCases where command != .getNextAssertion {
            XCTAssertTrue(pending.isEnded(by: command, on: 7), command.name)
            XCTAssertFalse(pending.isEnded(by: command, on: 8), "\(command.name) from another channel")
        }
    }

    func testGetNextAssertionContinuesAfterWhatItHandedOutThenIsExhausted() {
        var pending = pendingAssertions(remaining: 2, now: 1_000)
        XCTAssertEqual(pending.position, CredentialReference([0]), "the first, handed out by getAssertion")
        pending.handedOut(handed(1), now: 2_000)
        XCTAssertEqual(pending.position, CredentialReference([1]))
        XCTAssertFalse(pending.isExhausted)
        pending.handedOut(handed(2), now: 3_000)
        XCTAssertEqual(pending.position, CredentialReference([2]))
        XCTAssertTrue(pending.isExhausted)
    }

    func testGetNextAssertionExpiresThirtySecondsAfterTheLastUse() {
        var pending = pendingAssertions(remaining: 2, now: 1_000)
        XCTAssertFalse(pending.hasExpired(now: 31_000, timeout: 30_000))
        XCTAssertTrue(pending.hasExpired(now: 31_001, timeout: 30_000))
        pending.handedOut(handed(1), now: 20_000)
        XCTAssertFalse(pending.hasExpired(now: 50_000, timeout: 30_000), "a use restarts the timer")
        XCTAssertTrue(pending.hasExpired(now: 50_001, timeout: 30_000))
    }

    // MARK: CredentialEnumeration (CTAP 2.1 §6.8.3, §6.8.4)

    func testEnumerationEndsOnOtherCommandsAndSubcommandsFromItsChannelOnly() {
        let enumeration = CredentialEnumeration(channel: 7, items: .credentials(rpIDHash: [1], count: 3), position: CredentialReference([0]), now: 0)
        for command in CTAPCommand.allCases {
            let continues = command == .credentialManagement || command == .credentialManagementPreview
            XCTAssertEqual(enumeration.isEnded(by: command, on: 7), !continues, command.name)
            XCTAssertFalse(enumeration.isEnded(by: command, on: 8), "\(command.name) from another channel")
        }
        for subcommand in CredentialManagementSubcommand.allCases {
            let continues = subcommand == .enumerateRPsGetNextRP || subcommand == .enumerateCredentialsGetNextCredential
            XCTAssertEqual(enumeration.isEnded(by: subcommand, on: 7), !continues, "\(subcommand)")
            XCTAssertFalse(enumeration.isEnded(by: subcommand, on: 8), "\(subcommand) from another channel")
        }
        XCTAssertTrue(enumeration.isEnded(by: nil as CredentialManagementSubcommand?, on: 7), "an unknown subcommand")
    }

    func testEnumerationExpiresThirtySecondsAfterTheLastGetNext() {
        var enumeration = CredentialEnumeration(channel: 7, items: .credentials(rpIDHash: [1], count: 3),
                                                position: CredentialReference([0]), now: 1_000)
        XCTAssertFalse(enumeration.hasExpired(now: 31_000, timeout: 30_000))
        XCTAssertTrue(enumeration.hasExpired(now: 31_001, timeout: 30_000))
        XCTAssertEqual(enumeration.nextCredentialQuery()?.after, CredentialReference([0]), "Begin handed out item 0")
        enumeration.handedOut(handed(1), now: 20_000)
        XCTAssertEqual(enumeration.nextCredentialQuery()?.after, CredentialReference([1]))
        XCTAssertFalse(enumeration.hasExpired(now: 50_000, timeout: 30_000))
        enumeration.handedOut(handed(2), now: 20_000)
        XCTAssertTrue(enumeration.isExhausted)
        XCTAssertNil(enumeration.nextCredentialQuery(), "all 3 handed out")
        XCTAssertNil(enumeration.nextRelyingParty(now: 20_000), "a credential enumeration lists no RPs")
    }

    // MARK: LargeBlobWrite (CTAP 2.1 §6.10.2)

    private func status(_ body: () throws -> Void, file: StaticString = #filePath, line: UInt = #line) -> CTAP2StatusCode? {
        do {
            try body()
            return nil
        } catch let error as CTAP2StatusCode {
            return error
        } catch {
            XCTFail("not a CTAP2 status: \(error)", file: file, line: line)
            return nil
        }
    }

    func testFirstFragmentMustAnnounceALengthBetween17AndTheMaximum() {
        XCTAssertEqual(status { _ = try LargeBlobWrite(announcedLength: nil, maxLength: 1024) }, .invalidParameter)
        XCTAssertEqual(status { _ = try LargeBlobWrite(announcedLength: 16, maxLength: 1024) }, .invalidParameter)
        XCTAssertEqual(status { _ = try LargeBlobWrite(announcedLength: 1025, maxLength: 1024) }, .largeBlobStorageFull)
        XCTAssertEqual(status { _ = try LargeBlobWrite(announcedLength: .max, maxLength: 1024) }, .largeBlobStorageFull)
        XCTAssertNil(status { _ = try LargeBlobWrite(announcedLength: 17, maxLength: 1024) })
        XCTAssertNil(status { _ = try LargeBlobWrite(announcedLength: 1024, maxLength: 1024) })
    }

    func testFragmentsAppendUpToTheAnnouncedLengthAndNoFurther() throws {
        let array: [UInt8] = [0x81, 0x01] + Array(SHA256.hash([0x81, 0x01]).prefix(16))
        var write = try LargeBlobWrite(announcedLength: UInt64(array.count), maxLength: 1024)
        try write.append(Array(array[..<5]))
        XCTAssertEqual(write.expectedNextOffset, 5)
        XCTAssertFalse(write.isComplete)
        XCTAssertEqual(status { try write.append(Array(array[5...]) + [0]) }, .invalidParameter)
        XCTAssertEqual(write.expectedNextOffset, 5, "a fragment that does not fit changes nothing")
        try write.append(Array(array[5...]))
        XCTAssertTrue(write.isComplete)
        XCTAssertEqual(try write.verifiedArray(), array)
    }

    func testWrittenArrayMustEndWithTheLeftSixteenBytesOfItsHash() throws {
        var array: [UInt8] = [0x80] + Array(SHA256.hash([0x80]).prefix(16))
        array[16] ^= 0x01
        var write = try LargeBlobWrite(announcedLength: UInt64(array.count), maxLength: 1024)
        try write.append(array)
        XCTAssertEqual(status { _ = try write.verifiedArray() }, .integrityFailure)
    }
}

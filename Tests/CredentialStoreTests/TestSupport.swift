import Authenticator
@testable import CredentialStore
import FIDOCrypto
import Foundation
import Synchronization
import XCTest

/// A fresh directory under the system temp directory, removed on deinit. The store directory
/// itself is `path/store` (not yet created), so tests see the store create it.
final class TemporaryDirectory {
    let root: String
    var storePath: String { root + "/store" }

    init() {
        var template = Array((NSTemporaryDirectory() + "/latchkey-store-XXXXXX").utf8CString)
        let created = template.withUnsafeMutableBufferPointer { mkdtemp($0.baseAddress!) }
        precondition(created != nil, "mkdtemp failed")
        root = String(decoding: template.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    deinit {
        try? FileManager.default.removeItem(atPath: root)
    }
}

/// A clock tests move by hand (architecture rule 6).
final class ManualClock: Sendable {
    private let seconds: Atomic<Int64>

    init(_ start: Int64 = 1_700_000_000) {
        seconds = Atomic(start)
    }

    var now: Int64 { seconds.load(ordering: .relaxed) }

    func advance(by delta: Int64) {
        seconds.add(delta, ordering: .relaxed)
    }

    var function: @Sendable () -> Int64 { { [self] in now } }
}

func rpIDHash(_ rpID: String) -> [UInt8] {
    FIDOCrypto.SHA256.hash(Array(rpID.utf8))
}

/// A resident credential with every field set (override what the test is about).
func makeCredential(rpID: String = "example.com", rpName: String? = "Example",
                    userHandle: [UInt8] = SecureRandom.bytes(count: 16),
                    userName: String? = "alice@example.com", displayName: String? = "Alice",
                    id: [UInt8] = SecureRandom.bytes(count: 48), createdAt: Int64 = 1_700_000_000,
                    hiddenSince: Int64? = nil, full: Bool = true) -> ResidentCredential {
    ResidentCredential(credentialID: id, rpID: rpID, rpIDHash: rpIDHash(rpID), rpName: rpName,
                       userHandle: userHandle, userName: userName, userDisplayName: displayName,
                       algorithm: -7, privateKey: SecretBytes(randomCount: 32), createdAt: createdAt,
                       credProtect: full ? .userVerificationOptionalWithCredentialIDList : .userVerificationOptional,
                       credBlob: full ? SecureRandom.bytes(count: 20) : nil,
                       largeBlobKey: full ? SecretBytes(randomCount: 32) : nil,
                       hmacSecretWithUV: full ? SecretBytes(randomCount: 32) : nil,
                       hmacSecretWithoutUV: full ? SecretBytes(randomCount: 32) : nil,
                       hiddenSince: hiddenSince)
}

func makeDeviceSecrets() -> DeviceSecrets {
    DeviceSecrets(aaguid: SecureRandom.bytes(count: 16), wrappingKey: SecretBytes(randomCount: 32),
                  attestationPrivateKey: SecretBytes(randomCount: 32),
                  attestationCertificate: SecureRandom.bytes(count: 600),
                  attestationCACertificate: SecureRandom.bytes(count: 500))
}

func assertSameSecret(_ a: SecretBytes?, _ b: SecretBytes?, _ what: String,
                      file: StaticString = #filePath, line: UInt = #line) {
    XCTAssertEqual(a?.copyBytes(), b?.copyBytes(), what, file: file, line: line)
}

func assertSameCredential(_ a: ResidentCredential?, _ b: ResidentCredential?,
                          file: StaticString = #filePath, line: UInt = #line) {
    guard let a, let b else {
        XCTAssertTrue(a == nil && b == nil, "one credential is nil", file: file, line: line)
        return
    }
    XCTAssertEqual(a.credentialID, b.credentialID, "credentialID", file: file, line: line)
    XCTAssertEqual(a.rpID, b.rpID, "rpID", file: file, line: line)
    XCTAssertEqual(a.rpIDHash, b.rpIDHash, "rpIDHash", file: file, line: line)
    XCTAssertEqual(a.rpName, b.rpName, "rpName", file: file, line: line)
    XCTAssertEqual(a.userHandle, b.userHandle, "userHandle", file: file, line: line)
    XCTAssertEqual(a.userName, b.userName, "userName", file: file, line: line)
    XCTAssertEqual(a.userDisplayName, b.userDisplayName, "userDisplayName", file: file, line: line)
    XCTAssertEqual(a.algorithm, b.algorithm, "algorithm", file: file, line: line)
    assertSameSecret(a.privateKey, b.privateKey, "privateKey", file: file, line: line)
    XCTAssertEqual(a.createdAt, b.createdAt, "createdAt", file: file, line: line)
    XCTAssertEqual(a.credProtect, b.credProtect, "credProtect", file: file, line: line)
    XCTAssertEqual(a.credBlob, b.credBlob, "credBlob", file: file, line: line)
    assertSameSecret(a.largeBlobKey, b.largeBlobKey, "largeBlobKey", file: file, line: line)
    assertSameSecret(a.hmacSecretWithUV, b.hmacSecretWithUV, "hmacSecretWithUV", file: file, line: line)
    assertSameSecret(a.hmacSecretWithoutUV, b.hmacSecretWithoutUV, "hmacSecretWithoutUV", file: file, line: line)
    XCTAssertEqual(a.backupEligible, b.backupEligible, "backupEligible", file: file, line: line)
    XCTAssertEqual(a.backedUp, b.backedUp, "backedUp", file: file, line: line)
    XCTAssertEqual(a.hiddenSince, b.hiddenSince, "hiddenSince", file: file, line: line)
}

func assertSameSecrets(_ a: DeviceSecrets, _ b: DeviceSecrets, file: StaticString = #filePath, line: UInt = #line) {
    XCTAssertEqual(a.aaguid, b.aaguid, file: file, line: line)
    assertSameSecret(a.wrappingKey, b.wrappingKey, "wrappingKey", file: file, line: line)
    assertSameSecret(a.attestationPrivateKey, b.attestationPrivateKey, "attestationPrivateKey", file: file, line: line)
    XCTAssertEqual(a.attestationCertificate, b.attestationCertificate, file: file, line: line)
    XCTAssertEqual(a.attestationCACertificate, b.attestationCACertificate, file: file, line: line)
}

/// Asserts that `body` throws exactly `expected`.
func assertThrows<R>(_ expected: StoreError, file: StaticString = #filePath, line: UInt = #line,
                     _ body: () throws(StoreError) -> R) {
    do {
        _ = try body()
        XCTFail("expected \(expected), nothing was thrown", file: file, line: line)
    } catch {
        XCTAssertEqual(error, expected, file: file, line: line)
    }
}

/// Asserts that `body` throws `.permissions` with a message naming `path`.
func assertPermissionsError<R>(naming path: String, file: StaticString = #filePath, line: UInt = #line,
                               _ body: () throws(StoreError) -> R) {
    do {
        _ = try body()
        XCTFail("expected .permissions, nothing was thrown", file: file, line: line)
    } catch {
        guard case .permissions(let message) = error else {
            return XCTFail("expected .permissions, got \(error)", file: file, line: line)
        }
        XCTAssertTrue(message.contains(path), "message names the path: \(message)", file: file, line: line)
        XCTAssertTrue(message.contains("chmod"), "message tells the fix: \(message)", file: file, line: line)
    }
}

func fileMode(_ path: String) -> Int {
    var info = stat()
    guard stat(path, &info) == 0 else { return -1 }
    return Int(info.st_mode & 0o7777)
}

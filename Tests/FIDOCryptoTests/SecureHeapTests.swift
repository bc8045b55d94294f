import Foundation
import XCTest
import FIDOCrypto

/// The secure heap as the key process uses it (`LatchkeyCLI.runProcess` starts it): secrets in
/// one mapping that core dumps leave out, locked in RAM where RLIMIT_MEMLOCK allows.
final class SecureHeapTests: XCTestCase {
    override func setUp() {
        super.setUp()
        XCTAssertNotEqual(SecureHeap.start(), .off, "OpenSSL gave no secure heap")
    }

    func testSecretsLiveInAMappingCoreDumpsLeaveOut() throws {
        let secret = SecretBytes(randomCount: 32)
        XCTAssertTrue(secret.isInSecureHeap)
        let address = secret.withUnsafeBytes { UInt(bitPattern: $0.baseAddress) }
        let flags = try XCTUnwrap(Self.vmFlags(containing: address), "no mapping holds the secret")
        XCTAssertTrue(flags.contains("dd"), "VmFlags \(flags): not MADV_DONTDUMP")
        if SecureHeap.start() == .locked {
            XCTAssertTrue(flags.contains("lo"), "VmFlags \(flags): reported locked, not mlocked")
        }
    }

    func testEverySecretKindGoesThere() throws {
        let kinds: [(String, SecretBytes)] = [
            ("copied", SecretBytes([1, 2, 3])),
            ("wiping", SecretBytes(wiping: [4, 5, 6])),
            ("slice", SecretBytes([7, 8, 9, 10][1...])),
            ("P-256 scalar", try P256.Signing.PrivateKey().rawRepresentation),
            ("Ed25519 seed", try Ed25519.PrivateKey().rawRepresentation),
            ("empty", SecretBytes([])),
        ]
        for (name, secret) in kinds { XCTAssertTrue(secret.isInSecureHeap, name) }
    }

    func testOpenSSLKeepsItsOwnCopyOfAPrivateKeyThere() throws {
        let scalar = try P256.Signing.PrivateKey().rawRepresentation
        let before = SecureHeap.bytesInUse
        let imported = try P256.Signing.PrivateKey(secret: scalar)   // keeps `scalar`: no copy of ours
        let grown = SecureHeap.bytesInUse - before
        XCTAssertGreaterThanOrEqual(grown, 32, "OpenSSL's copy of the scalar is not in the secure heap")
        XCTAssertNoThrow(try imported.signature(for: [1, 2, 3]))
        // A generated Ed25519 key's seed is there too. (OpenSSL 3.0 copies an *imported* raw
        // Ed25519 seed with OPENSSL_malloc, outside the secure heap; later releases fix that.)
        let beforeEd = SecureHeap.bytesInUse
        let generated = try Ed25519.PrivateKey()
        XCTAssertGreaterThanOrEqual(SecureHeap.bytesInUse - beforeEd, 64, "OpenSSL's copy of the seed is not in the secure heap")
        XCTAssertNoThrow(try generated.signature(for: [1, 2, 3]))
    }

    /// Past its capacity secrets go to the ordinary heap and keep working; the heap's room
    /// comes back when they are released, and signing never fails for it.
    func testAFullHeapFallsBackAndRecovers() throws {
        var held: [SecretBytes] = []
        for size in [1024, 32] {   // big blocks, then the small ones left between them
            repeat {
                held.append(SecretBytes(randomCount: size))
            } while held.last!.isInSecureHeap && held.count < 2 * SecureHeap.defaultByteCount / 32
        }
        XCTAssertFalse(held.last!.isInSecureHeap, "the secure heap never filled")
        let overflow = SecretBytes([9, 8, 7])
        XCTAssertFalse(overflow.isInSecureHeap)
        XCTAssertEqual(overflow.copyBytes(), [9, 8, 7])
        held.removeAll()
        XCTAssertTrue(SecretBytes([1]).isInSecureHeap)
        XCTAssertNoThrow(try P256.Signing.PrivateKey().signature(for: [1]))
    }

    /// The VmFlags line of the /proc/self/smaps entry whose range holds `address`.
    static func vmFlags(containing address: UInt) -> String? {
        // /proc files have no size, so read to the end rather than by stat.
        guard let data = FileHandle(forReadingAtPath: "/proc/self/smaps")?.readDataToEndOfFile(),
              let smaps = String(data: data, encoding: .utf8) else { return nil }
        var inside = false
        for line in smaps.split(separator: "\n") {
            let fields = line.split(separator: " ", maxSplits: 1)
            if let range = fields.first, range.contains("-"), !range.hasSuffix(":") {
                let bounds = range.split(separator: "-").compactMap { UInt($0, radix: 16) }
                inside = bounds.count == 2 && bounds[0] <= address && address < bounds[1]
            } else if inside, line.hasPrefix("VmFlags:") {
                return String(line.dropFirst("VmFlags:".count))
            }
        }
        return nil
    }
}

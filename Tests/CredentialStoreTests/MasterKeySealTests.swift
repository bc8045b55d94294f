import Authenticator
@testable import CredentialStore
import FIDOCrypto
import Foundation
import XCTest

/// A store's master key sealed with a passphrase (MasterKeySeal): the directory alone opens
/// nothing, the right passphrase opens everything as before, a wrong one changes nothing, and
/// every rewrite leaves master.key whole.
final class MasterKeySealTests: XCTestCase {
    /// Cheap scrypt for tests (the default costs 128 MiB and about a second).
    let quick = Scrypt.Parameters(logN: 10, r: 8, p: 1)
    let passphrase = SecretBytes(Array("correct horse battery staple".utf8))

    override func tearDown() { MasterKeySeal.installPassphraseSource(nil) }

    func storeWithACredential() throws -> (TemporaryDirectory, ResidentCredential) {
        let temporary = TemporaryDirectory()
        let store = try SQLiteCredentialStore.open(directory: temporary.storePath)
        let credential = makeCredential()
        try store.saveResidentCredential(credential)
        store.close()
        return (temporary, credential)
    }

    func masterKeyFile(_ temporary: TemporaryDirectory) throws -> Data {
        try Data(contentsOf: URL(fileURLWithPath: temporary.storePath + "/master.key"))
    }

    func testASealedStoreOpensOnlyWithItsPassphrase() throws {
        let (temporary, credential) = try storeWithACredential()
        let raw = try masterKeyFile(temporary)
        XCTAssertEqual(try MasterKeySeal.state(directory: temporary.storePath), .unsealed)
        try MasterKeySeal.seal(directory: temporary.storePath, passphrase: passphrase, parameters: quick)
        XCTAssertEqual(try MasterKeySeal.state(directory: temporary.storePath), .sealedWithPassphrase(quick))
        let sealed = try masterKeyFile(temporary)
        XCTAssertTrue(sealed.starts(with: Array("latchkey sealed master key\n".utf8)))
        XCTAssertNil(sealed.range(of: raw), "the raw key is not in the sealed file")
        XCTAssertEqual(fileMode(temporary.storePath + "/master.key"), 0o600)

        // No passphrase: refused, saying how to give one.
        XCTAssertThrowsError(try SQLiteCredentialStore.open(directory: temporary.storePath, lock: .none)) { error in
            guard case let .sealed(message) = error as? StoreError else { return XCTFail("\(error)") }
            XCTAssertTrue(message.contains("--passphrase-file"), message)
        }
        // A wrong one: refused, nothing changed.
        MasterKeySeal.installPassphraseSource { _ in SecretBytes(Array("Tr0ub4dor&3".utf8)) }
        XCTAssertThrowsError(try SQLiteCredentialStore.open(directory: temporary.storePath, lock: .none)) { error in
            guard case let .sealed(message) = error as? StoreError else { return XCTFail("\(error)") }
            XCTAssertTrue(message.contains("wrong passphrase"), message)
        }
        XCTAssertEqual(try masterKeyFile(temporary), sealed)
        // The right one: the store as it was.
        let asked = ManualCounter()
        MasterKeySeal.installPassphraseSource { [passphrase] directory in
            asked.bump(directory)
            return passphrase
        }
        let store = try SQLiteCredentialStore.open(directory: temporary.storePath, lock: .none)
        assertSameCredential(try store.residentCredential(id: credential.credentialID), credential)
        store.close()
        XCTAssertEqual(asked.directories, [temporary.storePath])

        // A copy of the directory elsewhere is just as locked.
        MasterKeySeal.installPassphraseSource(nil)
        let copy = TemporaryDirectory()
        try FileManager.default.copyItem(atPath: temporary.storePath, toPath: copy.storePath)
        XCTAssertThrowsError(try SQLiteCredentialStore.open(directory: copy.storePath, lock: .none))
    }

    func testChangingThePassphraseAndUnsealing() throws {
        let (temporary, credential) = try storeWithACredential()
        let raw = try masterKeyFile(temporary)
        try MasterKeySeal.seal(directory: temporary.storePath, passphrase: passphrase, parameters: quick)
        let next = SecretBytes(Array("another long passphrase".utf8))
        // Changing it needs the current one.
        XCTAssertThrowsError(try MasterKeySeal.seal(directory: temporary.storePath, passphrase: next,
                                                    current: SecretBytes(Array("nope".utf8)), parameters: quick))
        try MasterKeySeal.seal(directory: temporary.storePath, passphrase: next, current: passphrase, parameters: quick)
        XCTAssertThrowsError(try MasterKeySeal.unseal(directory: temporary.storePath, passphrase: passphrase), "the old one no longer opens it")
        try MasterKeySeal.unseal(directory: temporary.storePath, passphrase: next)
        XCTAssertEqual(try masterKeyFile(temporary), raw, "unsealed: the very same key, raw")
        let store = try SQLiteCredentialStore.open(directory: temporary.storePath, lock: .none)
        assertSameCredential(try store.residentCredential(id: credential.credentialID), credential)
        store.close()
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: temporary.storePath).filter { $0.contains(".new-") }, [],
                       "no temporary file left behind")
    }

    /// An unseal killed before its rename leaves the raw key in a temporary file: the next open
    /// (or seal) removes it; a temporary whose writer still runs is left alone.
    func testATemporaryLeftByAKilledWriterIsRemoved() throws {
        let (temporary, _) = try storeWithACredential()
        let stale = temporary.storePath + "/master.key.new-2147483646-ab"
        let live = temporary.storePath + "/master.key.new-\(getpid())-cd"
        for path in [stale, live] {
            try Data(repeating: 7, count: 32).write(to: URL(fileURLWithPath: path))
            XCTAssertEqual(chmod(path, 0o600), 0)
        }
        try SQLiteCredentialStore.open(directory: temporary.storePath, lock: .none).close()
        XCTAssertFalse(FileManager.default.fileExists(atPath: stale))
        XCTAssertTrue(FileManager.default.fileExists(atPath: live))
        try FileManager.default.removeItem(atPath: live)
    }

    func testDamagedOrForeignSealsAreErrorsNotTraps() throws {
        let (temporary, _) = try storeWithACredential()
        try MasterKeySeal.seal(directory: temporary.storePath, passphrase: passphrase, parameters: quick)
        let good = try masterKeyFile(temporary)
        let path = temporary.storePath + "/master.key"
        for damaged in [good.prefix(40), good.prefix(good.count - 1), Data("latchkey sealed master key\n".utf8) + Data([0xA0]),
                        Data(repeating: 0x41, count: 33)] {
            try Data(damaged).write(to: URL(fileURLWithPath: path))
            XCTAssertEqual(chmod(path, 0o600), 0)
            XCTAssertThrowsError(try MasterKeySeal.state(directory: temporary.storePath)) { error in
                guard case .corrupt = error as? StoreError else { return XCTFail("\(error)") }
            }
        }
        // scrypt parameters that would take the machine's memory are refused before any work.
        let greedy = MasterKeySeal.Sealed(wrapping: .passphrase(Scrypt.Parameters(logN: 30, r: 8, p: 1),
                                                                salt: [UInt8](repeating: 1, count: 16)),
                                          nonce: [UInt8](repeating: 2, count: 12), sealed: [UInt8](repeating: 3, count: 48))
        try Data(greedy.encoded()).write(to: URL(fileURLWithPath: path))
        XCTAssertThrowsError(try MasterKeySeal.state(directory: temporary.storePath)) { error in
            XCTAssertEqual(error as? StoreError, .corrupt("\(path) asks for scrypt parameters out of range"))
        }
    }

    /// The TPM and keyring records (their methods are tested against swtpm here, and against
    /// gnome-keyring in the socket suite): each decodes to what was written, and the method is
    /// bound to the sealed key — the same bytes relabelled as another method do not open.
    func testTPMAndKeyringRecordsRoundTripAndBindTheirMethod() throws {
        let key = SecretBytes(randomCount: 32), wrapping = SecretBytes(randomCount: 32)
        let blob = TPMSeal.Blob(publicArea: [1, 2, 3], privateArea: [4, 5, 6, 7], pcrs: [0, 7],
                                storageKeyName: [0x00, 0x0B] + Array(repeating: 0x5A, count: 32))
        let unpinned = TPMSeal.Blob(publicArea: [1, 2, 3], privateArea: [4, 5, 6, 7], pcrs: [0, 7])   // a record of 2026-12-02
        let path = "/x/master.key"
        for kind in [MasterKeySeal.Sealed.Wrapping.tpm(blob), .tpm(unpinned), .keyring(item: String(repeating: "ab", count: 16))] {
            let record = try MasterKeySeal.Sealed.seal(key, under: wrapping, wrapping: kind)
            let decoded = try MasterKeySeal.Sealed(decoding: record.encoded(), path: path)
            XCTAssertEqual(decoded.wrapping, kind)
            XCTAssertEqual(decoded.open(under: wrapping)?.copyBytes(), key.copyBytes())
            XCTAssertNil(decoded.open(under: SecretBytes(randomCount: 32)), "another wrapping key opens nothing")
            var relabelled = decoded
            relabelled.wrapping = kind.method == "tpm" ? .keyring(item: String(repeating: "cd", count: 16)) : .tpm(blob)
            XCTAssertNil(relabelled.open(under: wrapping), "a record relabelled as another method does not open")
        }
        XCTAssertEqual(try MasterKeySeal.Sealed(decoding: MasterKeySeal.Sealed.seal(key, under: wrapping, wrapping: .tpm(blob))
            .encoded(), path: path).state, .sealedWithTPM(pcrs: [0, 7]))
        // Malformed fields are named, not trapped on.
        var bad = try MasterKeySeal.Sealed.seal(key, under: wrapping, wrapping: .keyring(item: "../../not-hex"))
        XCTAssertThrowsError(try MasterKeySeal.Sealed(decoding: bad.encoded(), path: path)) { error in
            XCTAssertEqual(error as? StoreError, .corrupt("\(path) is a keyring-sealed master key with a missing or malformed item name"))
        }
        bad.wrapping = .tpm(TPMSeal.Blob(publicArea: [1], privateArea: [2], pcrs: [24]))
        XCTAssertThrowsError(try MasterKeySeal.Sealed(decoding: bad.encoded(), path: path)) { error in
            XCTAssertEqual(error as? StoreError, .corrupt("\(path) is a TPM-sealed master key with missing or malformed fields"))
        }
        bad.wrapping = .tpm(TPMSeal.Blob(publicArea: [1], privateArea: [2], pcrs: [7], storageKeyName: [0x0B]))
        XCTAssertThrowsError(try MasterKeySeal.Sealed(decoding: bad.encoded(), path: path)) { error in
            XCTAssertEqual(error as? StoreError, .corrupt("\(path) is a TPM-sealed master key with a malformed storage key name"))
        }
    }
}

/// Which directories a passphrase source was asked for.
final class ManualCounter: @unchecked Sendable {
    private let lock = NSLock()
    private var asked: [String] = []
    func bump(_ directory: String) { lock.lock(); asked.append(directory); lock.unlock() }
    var directories: [String] { lock.lock(); defer { lock.unlock() }; return asked }
}

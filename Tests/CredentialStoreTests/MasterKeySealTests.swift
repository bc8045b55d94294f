import Authenticator
@testable import CredentialStore
@testable import KeySealing
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

    /// Issue 34, finding 8: the raw key renamed over by `store seal` stayed in freed blocks. Now
    /// the old file's bytes are overwritten (a hard link the test keeps to it reads zeros) before
    /// its last name goes; a stale retired name is overwritten too — unless it is master.key's
    /// own file (a crash between link and unlink), which must survive.
    func testSealOverwritesTheOldKeyInPlace() throws {
        let (temporary, credential) = try storeWithACredential()
        let path = temporary.storePath + "/master.key"
        let witness = temporary.storePath + "/witness"
        XCTAssertEqual(link(path, witness), 0)
        let raw = try Data(contentsOf: URL(fileURLWithPath: witness))
        XCTAssertEqual(raw.count, 32)
        XCTAssertNotEqual(raw, Data(count: 32))
        try MasterKeySeal.seal(directory: temporary.storePath, passphrase: passphrase, parameters: quick)
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: witness)), Data(count: 32), "the raw key was not overwritten")
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: temporary.storePath).filter { $0.contains(".old-") }, [])

        // A retired file left by a killed seal: overwritten, then removed.
        let retired = temporary.storePath + "/master.key.old-2147483646-ab"
        let retiredWitness = temporary.storePath + "/witness2"
        try Data(repeating: 9, count: 32).write(to: URL(fileURLWithPath: retired))
        XCTAssertEqual(chmod(retired, 0o600), 0)
        XCTAssertEqual(link(retired, retiredWitness), 0)
        // A crash between link and unlink: the extra name of master.key itself.
        let alias = temporary.storePath + "/master.key.old-2147483645-cd"
        XCTAssertEqual(link(path, alias), 0)
        let sealed = try Data(contentsOf: URL(fileURLWithPath: path))
        MasterKeyFile(directory: temporary.storePath).removeStaleTemporaries()
        XCTAssertFalse(FileManager.default.fileExists(atPath: retired))
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: retiredWitness)), Data(count: 32))
        XCTAssertFalse(FileManager.default.fileExists(atPath: alias))
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: path)), sealed, "master.key itself was left alone")
        MasterKeySeal.installPassphraseSource { [passphrase] _ in passphrase }
        defer { MasterKeySeal.installPassphraseSource(nil) }
        let store = try SQLiteCredentialStore.open(directory: temporary.storePath, lock: .none)
        defer { store.close() }
        assertSameCredential(try store.residentCredential(id: credential.credentialID), credential)
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
            XCTAssertEqual(error as? StoreError, .corrupt("\(path) asks for more than Latchkey allows: scrypt logN 30 is outside 10 to 22"))
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

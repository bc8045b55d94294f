import Foundation
@testable import KeyService
import XCTest

/// A key start that fails removes what it made and nothing else.
final class NewStoreTests: XCTestCase {
    private var root = ""

    override func setUpWithError() throws {
        root = NSTemporaryDirectory() + "latchkey-newstore-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: false)
    }

    override func tearDown() { try? FileManager.default.removeItem(atPath: root) }

    /// A file with `bytes` at `path`, or the test fails there.
    private func write(_ path: String, _ bytes: Data, line: UInt = #line) {
        XCTAssertTrue(FileManager.default.createFile(atPath: path, contents: bytes), "cannot create \(path)", line: line)
    }

    func testADirectoryTheStartMadeGoesWhole() throws {
        let store = root + "/made"
        let start = NewStore(directory: store)
        try FileManager.default.createDirectory(atPath: store, withIntermediateDirectories: false)
        write(store + "/master.key", Data([1]))
        start.discard()
        XCTAssertFalse(FileManager.default.fileExists(atPath: store))
    }

    func testInADirectoryThatWasThereOnlyTheNewFilesGo() throws {
        let store = root + "/kept"
        try FileManager.default.createDirectory(atPath: store, withIntermediateDirectories: false)
        write(store + "/notes.txt", Data([1]))
        let start = NewStore(directory: store)
        write(store + "/master.key", Data([2]))
        start.discard()
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: store), ["notes.txt"])
    }

    /// A file where the store was to be (`serve --store FILE`, a rig id naming a file in a kept
    /// root): the start fails on it and must not delete it.
    func testAFileNamedAsTheStoreIsLeftAlone() throws {
        let file = root + "/notes.txt"
        write(file, Data("mine".utf8))
        let start = NewStore(directory: file)
        XCTAssertTrue(start.isNew)
        start.discard()
        XCTAssertEqual(FileManager.default.contents(atPath: file), Data("mine".utf8))
    }

    /// A store with a database is never removed, whatever happens to the start.
    func testAStoreWithADatabaseIsNeverRemoved() throws {
        let store = root + "/old"
        try FileManager.default.createDirectory(atPath: store, withIntermediateDirectories: false)
        write(store + "/credentials.sqlite", Data([1]))
        let start = NewStore(directory: store)
        write(store + "/new", Data([2]))
        start.discard()
        XCTAssertTrue(FileManager.default.fileExists(atPath: store + "/new"))
        XCTAssertTrue(FileManager.default.fileExists(atPath: store + "/credentials.sqlite"))
    }
}

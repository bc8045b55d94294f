import Foundation

/// A private temporary directory, removed at deinit. Short paths (UNIX socket paths are ≤ 107 bytes).
public final class ShortTempDirectory {
    public let path: String
    public init() throws {
        var template = Array("/tmp/lk-test-XXXXXX".utf8CString)
        guard let created = template.withUnsafeMutableBufferPointer({ mkdtemp($0.baseAddress!) }) else {
            throw NSError(domain: "mkdtemp", code: Int(errno))
        }
        path = String(cString: created)
    }
    deinit { try? FileManager.default.removeItem(atPath: path) }
}

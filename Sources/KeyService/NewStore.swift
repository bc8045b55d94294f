import Foundation
import SystemIO

/// The store a key's start may create: what was there before it, so that a start that fails
/// removes what it made and nothing else.
struct NewStore {
    let directory: String
    /// Whether anything was at the path before the start (a directory, a file, a link: lstat).
    let existed: Bool
    /// The directory's entries before the start (nil: nothing there, or nothing that lists).
    let entriesBefore: Set<String>?
    /// Whether this start makes the store (there was no database).
    let isNew: Bool

    init(directory: String) {
        self.directory = directory
        existed = (try? FileSystem.linkStatus(directory)) != nil
        entriesBefore = (try? FileSystem.entries(directory)).map(Set.init)
        isNew = !FileManager.default.fileExists(atPath: directory + "/credentials.sqlite")
    }

    /// Removes what the start made: the whole directory if it made it, else the new files in
    /// the directory that was there. Something at the path that was not a directory (a file
    /// named as the store) is never touched: the start failed on it and made nothing there.
    func discard() {
        guard isNew else { return }
        guard existed else {
            try? FileManager.default.removeItem(atPath: directory)
            return
        }
        guard let entriesBefore else { return }
        for entry in (try? FileSystem.entries(directory)) ?? [] where !entriesBefore.contains(entry) {
            try? FileManager.default.removeItem(atPath: directory + "/" + entry)
        }
    }
}

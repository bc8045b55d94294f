import Foundation
import SystemIO

/// The store a key's start may create: what was there before it, so that a start that fails
/// removes what it made and nothing else.
struct NewStore {
    let directory: String
    /// The directory's entries before the start (nil: there was no directory).
    let entriesBefore: Set<String>?
    /// Whether this start makes the store (there was no database).
    let isNew: Bool

    init(directory: String) {
        self.directory = directory
        entriesBefore = (try? FileSystem.entries(directory)).map(Set.init)
        isNew = !FileManager.default.fileExists(atPath: directory + "/credentials.sqlite")
    }

    /// Removes what the start made: the whole directory if it made it, else the new files.
    func discard() {
        guard isNew else { return }
        guard let entriesBefore else {
            try? FileManager.default.removeItem(atPath: directory)
            return
        }
        for entry in (try? FileSystem.entries(directory)) ?? [] where !entriesBefore.contains(entry) {
            try? FileManager.default.removeItem(atPath: directory + "/" + entry)
        }
    }
}

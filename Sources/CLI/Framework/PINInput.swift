import CTAP
import FIDOClient
import FIDOCrypto
import Foundation
import SystemIO

/// Where PINs come from: a file (`--pin-file`, `--new-pin-file`), an environment variable
/// (`LATCHKEY_PIN`, `LATCHKEY_NEW_PIN`) for rigs, or the terminal without echo. Never argv,
/// never a log line.
enum PINInput {
    static let environmentName = PINEnvironment.pinName
    static let newEnvironmentName = PINEnvironment.newPINName
    /// A PIN file is one line; anything longer than this is not a PIN file.
    static let fileLimit = 1024

    /// The key's current PIN.
    static func current(file: String?, io: CommandIO, label: String) throws(CLIError) -> PIN {
        try read(file: file, fileOption: "pin-file", environmentName: environmentName, io: io,
                 prompt: "PIN for \(label): ", confirm: nil)
    }

    /// A new PIN, `LATCHKEY_NEW_PIN` in the environment (for `pin set` also `LATCHKEY_PIN`, which
    /// older scripts set: `fallbackEnvironmentName`). From the terminal it is typed twice, and one
    /// shorter than the key's `minimumLength` is refused before the second typing, as ykman does.
    static func new(file: String?, fileOption: String, fallbackEnvironmentName: String? = nil, io: CommandIO,
                    label: String, minimumLength: Int) throws(CLIError) -> PIN {
        var environmentName = newEnvironmentName
        if io.pins[newEnvironmentName] == nil, let fallback = fallbackEnvironmentName, io.pins[fallback] != nil {
            environmentName = fallback
        }
        let pin = try read(file: file, fileOption: fileOption, environmentName: environmentName, io: io,
                           prompt: "New PIN for \(label): ", confirm: "Repeat the new PIN: ", minimumLength: minimumLength)
        do {
            try pin.check(minimumLength: minimumLength)
        } catch {
            throw .failure(error.message)
        }
        return pin
    }

    private static func read(file: String?, fileOption: String, environmentName: String, io: CommandIO,
                             prompt: String, confirm: String?, minimumLength: Int? = nil) throws(CLIError) -> PIN {
        var bytes: [UInt8]
        if let file {
            bytes = try readFile(file, option: fileOption)
        } else if let value = io.pins[environmentName] {
            bytes = value.copyBytes()   // PIN(consuming:) wipes it
        } else if let terminal = io.terminal {
            guard let typed = terminal.readSecret(prompt) else { throw .failure("no PIN was entered") }
            bytes = typed
            if let minimumLength, let length = PINText.codePointCount(ofUTF8: bytes), length < minimumLength {
                bytes.wipe()
                throw .failure(PIN.Problem.tooShort(minimum: minimumLength, length: length).message)
            }
            if let confirm {
                guard var again = terminal.readSecret(confirm) else { throw .failure("no PIN was entered") }
                defer { again.wipe() }
                guard again == bytes else {
                    bytes.wipe()
                    throw .failure(PIN.Problem.mismatch.message)
                }
            }
        } else {
            throw .usage("no terminal to read the PIN from: give --\(fileOption) FILE or set \(environmentName)")
        }
        do {
            return try PIN(consuming: &bytes)
        } catch {
            throw .failure(error.message)
        }
    }

    /// The file's first line (a trailing newline, LF or CRLF, is not part of the PIN).
    static func readFile(_ path: String, option: String) throws(CLIError) -> [UInt8] {
        var bytes = try readPrivateFile(path, option: option, limit: fileLimit, what: "a PIN file (one line)")
        if let newline = bytes.firstIndex(of: 0x0A) {
            let tail = bytes[newline...]
            guard tail.allSatisfy({ $0 == 0x0A || $0 == 0x0D }) else {
                bytes.wipe()
                throw .failure("--\(option) \(path) has more than one line; it must hold the PIN alone")
            }
            for index in newline..<bytes.count { bytes[index] = 0 }
            bytes.removeLast(bytes.count - newline)
        }
        if bytes.last == 0x0D { bytes.removeLast() }
        return bytes
    }

    /// A secret file's bytes (at most `limit`): like ssh with a private key, a file others can
    /// read (or replace) is refused, checked on the opened file (no race with a rename). Pipes
    /// (`--pin-file <(…)`) are not files.
    static func readPrivateFile(_ path: String, option: String, limit: Int, what: String = "that file") throws(CLIError) -> [UInt8] {
        let file: FileDescriptor
        do {
            file = try FileDescriptor.open(path, flags: O_RDONLY)
        } catch {
            throw .failure("cannot read --\(option) \(path): \(error.description)")
        }
        if let status = try? file.status(), status.st_mode & S_IFMT == S_IFREG {
            guard status.st_uid == getuid() else {
                throw .failure("--\(option) \(path) belongs to another user (uid \(status.st_uid)); a secret's file must be yours")
            }
            guard status.st_mode & 0o077 == 0 else {
                throw .failure("--\(option) \(path) is open to other users (mode \(String(status.st_mode & 0o777, radix: 8))): "
                               + "chmod 600 \(path)")
            }
        }
        var bytes: [UInt8]
        do {
            bytes = try readUpTo(limit + 1, from: file)
        } catch {
            throw .failure("cannot read --\(option) \(path): \(error.description)")
        }
        guard bytes.count <= limit else {
            bytes.wipe()
            throw .failure("--\(option) \(path) is longer than \(what)")
        }
        return bytes
    }

    /// At most `limit` bytes, read straight into one buffer that is never reallocated
    /// (FileHandle's Data would leave an unwiped copy of the PIN behind).
    private static func readUpTo(_ limit: Int, from file: FileDescriptor) throws(Errno) -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: limit)
        var filled = 0
        do throws(Errno) {
            while filled < limit {
                let read = bytes.withUnsafeMutableBytes { buffer in
                    Result { () throws(Errno) in try file.read(into: UnsafeMutableRawBufferPointer(rebasing: buffer[filled...])) }
                }
                let count = try read.get()
                guard count > 0 else { break }
                filled += count
            }
        } catch {
            bytes.wipe()
            throw error
        }
        bytes.removeLast(limit - filled)   // in place: capacity stays, nothing is copied
        return bytes
    }
}

import Foundation
import SystemIO
import Encoding

/// A trace file on disk (format: `TraceRecord`). `create` makes it private (mode 0600, a
/// regular file, symlinks not followed); `write` buffers lines and `flush` writes them, so the
/// poll loop pays one write(2) per turn. A write failure is reported once and ends tracing —
/// the key keeps running.
public final class TraceFile {
    public struct Failure: Error, CustomStringConvertible, Equatable {
        public var description: String
        init(_ description: String) { self.description = description }
    }

    public let path: String
    private let descriptor: FileDescriptor
    private var buffer: [UInt8] = []
    private let encoder: JSONEncoder
    /// Set once a write failed: nothing more is written.
    public private(set) var failure: Failure?

    private init(path: String, descriptor: FileDescriptor) {
        self.path = path
        self.descriptor = descriptor
        encoder = JSONEncoder()
        encoder.outputFormatting = [.withoutEscapingSlashes]
    }

    deinit { close() }

    /// Creates (or truncates) the trace file at `path` and writes its header line.
    public static func create(path: String, header: TraceHeader) throws(Failure) -> TraceFile {
        // O_NOFOLLOW: a symlink planted at PATH is an error, not a redirect; O_NONBLOCK so a FIFO
        // there cannot hang the open (it is refused below, as is anything but a regular file).
        let descriptor: FileDescriptor
        do {
            descriptor = try FileDescriptor.open(path, flags: O_WRONLY | O_CREAT | O_NOFOLLOW | O_NONBLOCK, permissions: 0o600)
        } catch {
            throw Failure("cannot create the trace file \(path): \(error)")
        }
        guard let status = try? descriptor.status(), status.st_mode & S_IFMT == S_IFREG else {
            throw Failure("the trace file \(path) exists and is not a regular file")
        }
        // An existing file keeps its mode under O_CREAT: make it private before anything is written.
        do {
            try descriptor.setNonBlocking(false)
            try descriptor.setMode(0o600)
            try descriptor.truncate(to: 0)
        } catch {
            throw Failure("cannot make the trace file \(path) private and empty: \(error)")
        }
        let file = TraceFile(path: path, descriptor: descriptor)
        file.append(line: try file.encode(header))
        file.flush()
        if let failure = file.failure { throw failure }
        return file
    }

    /// Queues records; call `flush` to write them.
    public func write(_ records: [TraceRecord]) {
        guard failure == nil else { return }
        for record in records {
            guard let line = try? encode(record) else { continue }
            append(line: line)
        }
    }

    /// Writes what is queued. Returns the failure if this flush failed (it is reported once).
    @discardableResult
    public func flush() -> Failure? {
        guard failure == nil, descriptor.isOpen, !buffer.isEmpty else { return nil }
        do {
            try descriptor.writeAll(buffer)
        } catch {
            failure = Failure("writing the trace file \(path) failed: \(error); tracing stopped")
            buffer.removeAll()
            return failure
        }
        buffer.removeAll(keepingCapacity: true)
        return nil
    }

    /// Flushes and closes. Idempotent.
    public func close() {
        guard descriptor.isOpen else { return }
        flush()
        descriptor.close()
    }

    private func encode<T: Encodable>(_ value: T) throws(Failure) -> [UInt8] {
        do {
            return Array(try encoder.encode(value))
        } catch {
            throw Failure("cannot encode a trace record: \(error)")
        }
    }

    private func append(line: [UInt8]) {
        buffer += line
        buffer.append(UInt8(ascii: "\n"))
    }

    // MARK: Reading

    /// A trace file's contents. A last line cut short (the key was killed mid-write) is
    /// skipped and counted; any other bad line is an error naming its number.
    public struct Contents: Equatable, Sendable {
        public var header: TraceHeader
        public var records: [TraceRecord]
        public var truncatedLines: Int

        public init(header: TraceHeader, records: [TraceRecord], truncatedLines: Int = 0) {
            self.header = header; self.records = records; self.truncatedLines = truncatedLines
        }
    }

    /// The largest trace `read` takes (a day of a busy key's traffic is a few MB).
    public static let readLimit = 1 << 30

    public static func read(path: String) throws(Failure) -> Contents {
        let bytes: [UInt8]
        do throws(Errno) {
            let file = try FileDescriptor.open(path, flags: O_RDONLY)
            defer { file.close() }
            let info = try file.status()
            if info.st_mode & S_IFMT == S_IFDIR { throw Errno(rawValue: EISDIR) }
            bytes = try file.readAll(limit: readLimit)
        } catch {
            // strerror's words ("No such file or directory"), never Foundation's.
            throw Failure("cannot read the trace file \(path): \(error.message)")
        }
        guard bytes.count <= readLimit else { throw Failure("the trace file \(path) is over \(readLimit >> 20) MiB") }
        return try parse(bytes, name: path)
    }

    public static func parse(_ bytes: [UInt8], name: String = "trace") throws(Failure) -> Contents {
        let lines = bytes.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false)
        let decoder = JSONDecoder()
        guard let first = lines.first, !first.isEmpty,
              let header = try? decoder.decode(TraceHeader.self, from: Data(first)),
              header.format == TraceHeader.formatName else {
            throw Failure("\(name) is not a Latchkey trace (its first line is not a latchkey-trace header)")
        }
        guard header.version == TraceHeader.currentVersion else {
            throw Failure("\(name) is a version \(header.version) trace; this latchkey reads version \(TraceHeader.currentVersion)")
        }
        var records: [TraceRecord] = []
        var truncated = 0
        for (index, line) in lines.enumerated().dropFirst() where !line.isEmpty {
            do {
                records.append(try decoder.decode(TraceRecord.self, from: Data(line)))
            } catch {
                // Only the last line may be cut short (no newline after it).
                if index == lines.count - 1 {
                    truncated += 1
                    continue
                }
                let why = (error as? DecodingError)?.memberPath(root: "") ?? "not JSON"
                throw Failure("\(name), line \(index + 1): not a trace record (\(why))")
            }
        }
        return Contents(header: header, records: records, truncatedLines: truncated)
    }
}

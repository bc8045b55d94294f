import Foundation

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
    private var descriptor: Int32
    private var buffer: [UInt8] = []
    private let encoder: JSONEncoder
    /// Set once a write failed: nothing more is written.
    public private(set) var failure: Failure?

    private init(path: String, descriptor: Int32) {
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
        let descriptor = open(path, O_WRONLY | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else {
            throw Failure("cannot create the trace file \(path): \(String(cString: strerror(errno)))")
        }
        var status = stat()
        guard fstat(descriptor, &status) == 0, status.st_mode & S_IFMT == S_IFREG else {
            Glibc.close(descriptor)
            throw Failure("the trace file \(path) exists and is not a regular file")
        }
        // An existing file keeps its mode under O_CREAT: make it private before anything is written.
        let flags = fcntl(descriptor, F_GETFL)
        guard flags >= 0, fcntl(descriptor, F_SETFL, flags & ~O_NONBLOCK) == 0,
              fchmod(descriptor, 0o600) == 0, ftruncate(descriptor, 0) == 0 else {
            let message = String(cString: strerror(errno))
            Glibc.close(descriptor)
            throw Failure("cannot make the trace file \(path) private and empty: \(message)")
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
        guard failure == nil, descriptor >= 0, !buffer.isEmpty else { return nil }
        var written = 0
        while written < buffer.count {
            let result = buffer.withUnsafeBytes { bytes in
                Glibc.write(descriptor, bytes.baseAddress! + written, bytes.count - written)
            }
            if result < 0 {
                if errno == EINTR { continue }
                failure = Failure("writing the trace file \(path) failed: \(String(cString: strerror(errno))); tracing stopped")
                buffer.removeAll()
                return failure
            }
            written += result
        }
        buffer.removeAll(keepingCapacity: true)
        return nil
    }

    /// Flushes and closes. Idempotent.
    public func close() {
        guard descriptor >= 0 else { return }
        flush()
        Glibc.close(descriptor)
        descriptor = -1
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
    }

    public static func read(path: String) throws(Failure) -> Contents {
        let data: Data
        do {
            data = try Data(contentsOf: URL(fileURLWithPath: path))
        } catch {
            throw Failure("cannot read the trace file \(path): \(error.localizedDescription)")
        }
        return try parse(Array(data), name: path)
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
                throw Failure("\(name), line \(index + 1): not a trace record (\(error))")
            }
        }
        return Contents(header: header, records: records, truncatedLines: truncated)
    }
}

/// The browsers' native-messaging framing: each message is a 32-bit length in native byte order
/// followed by that many bytes of UTF-8 JSON, in both directions. Latchkey takes at most 1 MiB
/// per message either way (Chromium's limit for what a host sends; nothing Latchkey is sent
/// comes close).
public enum NativeMessageFraming {
    public static let maximumMessageSize = 1 << 20

    public static func frame(_ message: [UInt8]) -> [UInt8] {
        withUnsafeBytes(of: UInt32(message.count)) { Array($0) } + message
    }

    public static func frame(_ text: String) -> [UInt8] { frame(Array(text.utf8)) }
}

/// Cuts a byte stream into messages (sans-IO): `append` what was read, take messages with
/// `next`, and call `finish` at end of input. A length over the limit is refused as soon as its
/// four bytes arrive, before any of the body is buffered.
public struct NativeMessageReader: Sendable {
    public enum Failure: Error, Equatable, Sendable {
        case tooLarge(Int)
        /// End of input inside a message: how many bytes of it had come, and of how many.
        case truncated(received: Int, expected: Int)

        public var message: String {
            switch self {
            case .tooLarge(let count):
                "a message of \(count) bytes is over the limit of \(NativeMessageFraming.maximumMessageSize)"
            case .truncated(let received, let expected):
                "the input ended inside a message (\(received) of \(expected) bytes)"
            }
        }
    }

    private var buffer: [UInt8] = []
    private var start = 0

    public init() {}

    public mutating func append(_ bytes: [UInt8]) {
        if start > 0, start == buffer.count {
            buffer.removeAll(keepingCapacity: true)
            start = 0
        }
        buffer += bytes
    }

    /// The next whole message, or nil until more input arrives.
    public mutating func next() throws(Failure) -> [UInt8]? {
        guard buffer.count - start >= 4 else { return nil }
        let length = buffer[start..<(start + 4)].withUnsafeBytes { Int($0.loadUnaligned(as: UInt32.self)) }
        guard length <= NativeMessageFraming.maximumMessageSize else { throw .tooLarge(length) }
        guard buffer.count - start - 4 >= length else { return nil }
        let message = Array(buffer[(start + 4)..<(start + 4 + length)])
        start += 4 + length
        if start > 1 << 16 {
            buffer.removeFirst(start)
            start = 0
        }
        return message
    }

    /// At end of input: bytes left over are a truncated message.
    public func finish() throws(Failure) {
        let left = buffer.count - start
        guard left > 0 else { return }
        guard left >= 4 else { throw .truncated(received: left, expected: 4) }
        let length = buffer[start..<(start + 4)].withUnsafeBytes { Int($0.loadUnaligned(as: UInt32.self)) }
        throw .truncated(received: left - 4, expected: length)
    }
}

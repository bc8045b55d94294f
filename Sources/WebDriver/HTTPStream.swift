import Glibc
import SystemIO

/// HTTP messages over a connected stream socket, blocking with deadlines: the intermediary's side
/// of a client's connection, and its connection to the driver.
final class HTTPStream {
    let descriptor: FileDescriptor
    private var reader = HTTPMessageReader()
    /// Whether a message has been read on this connection (a reused one may have been closed by its peer meanwhile).
    private(set) var messagesRead = 0

    init(_ descriptor: FileDescriptor) { self.descriptor = descriptor }

    enum ReadOutcome<Message> {
        case message(Message)
        /// The peer closed the connection before a message began.
        case closed
        case timedOut
        case failed(HTTPError)
    }

    /// The next request; `shouldStop` is asked every `pollMilliseconds` while none is whole.
    func readRequest(idleMilliseconds: Int32, shouldStop: () -> Bool) -> ReadOutcome<HTTPRequest> {
        read(idleMilliseconds: idleMilliseconds, shouldStop: shouldStop) { reader throws(HTTPError) in try reader.nextRequest() }
    }

    func readResponse(toHEAD: Bool, timeoutMilliseconds: Int32, shouldStop: () -> Bool) -> ReadOutcome<HTTPResponse> {
        read(idleMilliseconds: timeoutMilliseconds, shouldStop: shouldStop) { reader throws(HTTPError) in
            try reader.nextResponse(toHEAD: toHEAD)
        }
    }

    static let pollMilliseconds: Int32 = 250

    private func read<Message>(idleMilliseconds: Int32, shouldStop: () -> Bool,
                               next: (inout HTTPMessageReader) throws(HTTPError) -> Message?) -> ReadOutcome<Message> {
        let deadline = MonotonicClock.milliseconds() + UInt64(max(idleMilliseconds, 0))
        while true {
            do {
                if let message = try next(&reader) {
                    messagesRead += 1
                    return .message(message)
                }
            } catch {
                return .failed(error)
            }
            let now = MonotonicClock.milliseconds()
            guard now < deadline else { return .timedOut }
            guard !shouldStop() else { return .closed }
            let wait = Int32(clamping: min(deadline - now, UInt64(Self.pollMilliseconds)))
            guard let events = try? Poller.wait(for: descriptor.rawValue, events: Int16(POLLIN), timeoutMilliseconds: wait) else {
                return .closed
            }
            guard events != 0 else { continue }
            let chunk: [UInt8]
            do {
                chunk = try descriptor.receive(upToCount: 256 << 10)
            } catch {
                if error == .wouldBlock { continue }
                return reader.hasPartialMessage ? .failed(HTTPError(400, "the connection failed mid-message: \(error)")) : .closed
            }
            if chunk.isEmpty {
                // End of stream: a response framed by it is whole now; anything else is cut off.
                reader.finish()
                if let message = try? next(&reader) {
                    messagesRead += 1
                    return .message(message)
                }
                return reader.hasPartialMessage ? .failed(HTTPError(400, "the connection closed mid-message")) : .closed
            }
            reader.append(chunk)
        }
    }

    /// Writes all of `bytes`; false if the peer went away.
    @discardableResult
    func write(_ bytes: [UInt8]) -> Bool {
        LineSocket.write(bytes, to: descriptor)
    }
}

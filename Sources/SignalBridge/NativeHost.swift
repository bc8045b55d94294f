import Foundation
import SystemIO
import Encoding

/// `latchkey native-host`: the browser starts it, writes messages to its stdin and reads the
/// replies from its stdout (NativeMessageFraming). It answers every message in order and exits
/// 0 when stdin closes; a stream it cannot read (a length over the limit, input ending inside a
/// message, a message that is not JSON) gets an error reply where one can be sent, nothing of it
/// is applied, and the host exits 1.
public enum NativeHost {
    /// `received` runs before each message is handled (the CLI records the browser's contact).
    public static func run(session: NativeHostSession, input: FileDescriptor, output: FileDescriptor,
                           log: (String) -> Void, received: () -> Void = {}) -> Int32 {
        var reader = NativeMessageReader()
        func send(_ reply: String) -> Bool {
            var bytes = Array(reply.utf8)
            if bytes.count > NativeMessageFraming.maximumMessageSize {
                bytes = Array(NativeHostSession.failure(id: nil, .internal("the reply would be over 1 MiB")).utf8)
            }
            do throws(Errno) {
                try output.writeAll(NativeMessageFraming.frame(bytes))
                return true
            } catch {
                log("cannot write to the browser (\(error)); stopping")
                return false
            }
        }
        while true {
            let chunk: [UInt8]
            do throws(Errno) {
                chunk = try input.read(upToCount: 1 << 16)
            } catch {
                log("cannot read from the browser (\(error)); stopping")
                return 1
            }
            do throws(NativeMessageReader.Failure) {
                if chunk.isEmpty {
                    try reader.finish()
                    return 0
                }
                reader.append(chunk)
                while let message = try reader.next() {
                    received()
                    let (reply, understood) = session.handle(message)
                    guard send(reply) else { return 1 }
                    guard understood else {
                        log("a message was not JSON; stopping")
                        return 1
                    }
                }
            } catch {
                log("unreadable input: \(error.message); stopping")
                _ = send(NativeHostSession.failure(id: nil, .type(error.message)))
                return 1
            }
        }
    }
}

/// When the extension's last message reached the host (to the minute), kept beside the key's
/// store (`bridge-contact`), so
/// that `latchkey bridge status` and `doctor` can say whether the browser side works.
public struct BridgeContact: Equatable, Sendable {
    public var time: Int64
    /// What the browser passed the host: `chrome-extension://ID/` (Chromium, Chrome) or the
    /// extension's ID (Firefox).
    public var caller: String

    public init(time: Int64, caller: String) {
        self.time = time
        self.caller = caller
    }

    static let fileName = "bridge-contact"

    public static func read(storeDirectory: String) -> BridgeContact? {
        guard let data = FileManager.default.contents(atPath: storeDirectory + "/" + fileName),
              let json = JSONDocument.parse(Array(data)),
              case .number(let number)? = json["time"], let time = Int64(exactly: number.rounded()),
              case .string(let caller)? = json["caller"] else { return nil }
        return BridgeContact(time: time, caller: caller)
    }

    /// Written atomically (a temporary file renamed over the old one); best effort: a store
    /// directory that is not there yet is left alone.
    public func write(storeDirectory: String) {
        guard FileManager.default.fileExists(atPath: storeDirectory) else { return }
        var reply = JSONValue.Object()
        reply.add("time", time)
        reply.add("caller", caller)
        try? Data((reply.rendered + "\n").utf8).write(to: URL(fileURLWithPath: storeDirectory + "/" + Self.fileName),
                                                   options: .atomic)
    }

    /// Which browser family the caller is.
    public var browser: String {
        caller.hasPrefix("chrome-extension://") ? "Chromium/Chrome" : "Firefox"
    }
}

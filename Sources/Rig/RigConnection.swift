import CBOR
import Foundation
import SystemIO
import KeyService
import Presence
import Encoding

/// One connection to the rig's control socket (`RigProtocol`): request lines in, response
/// lines out in the same order, and — once `subscribe`d — event lines in between. Runs on the
/// connection's own thread (`ControlSocket`) until the client closes, the rig stops, or an event
/// queue overflows.
enum RigConnection {
    /// How often a connection looks at whether the rig is stopping.
    static let pollMilliseconds: Int32 = 250

    /// A client that reads nothing for this long while a line waits to go out is dropped (its
    /// thread and slot freed), as a subscriber that falls behind is.
    static let sendTimeoutMilliseconds = 5_000

    static func serve(_ client: FileDescriptor, rig: Rig) {
        try? client.setSendTimeout(milliseconds: sendTimeoutMilliseconds)
        guard let wakeup = try? WakeupEvent() else {
            LineSocket.write(RigProtocol.response(id: nil, failure: .failed("cannot create an event for this connection")), to: client)
            return
        }
        var subscriber: RigSubscriber?
        defer { if let subscriber { rig.events.unsubscribe(subscriber) } }
        var buffer: [UInt8] = []
        while !rig.isClosing {
            if let subscriber {
                let (lines, overflowed) = subscriber.take()
                for line in lines where !LineSocket.write(line, to: client) { return }
                if overflowed {
                    LineSocket.write(RigProtocol.line(["event": "overflow"]), to: client)
                    return
                }
            }
            guard let ready = try? Poller.wait(for: [client.rawValue, wakeup.descriptor], timeoutMilliseconds: pollMilliseconds) else {
                return
            }
            if ready.contains(wakeup.descriptor) { wakeup.drain() }
            guard ready.contains(client.rawValue) else { continue }
            guard let chunk = try? client.receive(upToCount: 65_536), !chunk.isEmpty else { return }   // closed
            buffer += chunk
            while let newline = buffer.firstIndex(of: 0x0A) {
                let line = Array(buffer[..<newline])
                buffer.removeSubrange(...newline)
                guard !line.allSatisfy({ $0 == 0x20 || $0 == 0x09 || $0 == 0x0D }) else { continue }
                let (response, subscription) = RigRequests.respond(to: line, rig: rig, isAbandoned: { LineSocket.peerClosed(client) })
                if let subscription {
                    if let subscriber { rig.events.unsubscribe(subscriber) }
                    let new = RigSubscriber(authenticatorID: subscription, wakeup: wakeup)
                    rig.events.subscribe(new)
                    subscriber = new
                }
                guard LineSocket.write(response, to: client) else { return }
            }
            if buffer.count > RigProtocol.maximumLineLength {
                LineSocket.write(RigProtocol.response(id: nil, failure: RigFailure(.parseError,
                    "a request line is longer than \(RigProtocol.maximumLineLength) bytes; closing")), to: client)
                return
            }
        }
    }
}

private struct EventLine: Decodable { var event: String? }

/// The client end, for `latchkey rig call`: one request, its response line (event lines, which
/// a fresh connection does not get, are skipped all the same).
public enum RigClient {
    public static func call(method: String, paramsJSON: [UInt8], path: String, pathIsDefault: Bool,
                            replyTimeoutMilliseconds: Int32) throws(ControlSocket.Failure) -> [UInt8] {
        let descriptor = try ControlClient.connect(to: path, directoryMustBePrivate: pathIsDefault, server: "rig",
                                                   nobodyListening: "start one with `latchkey rig`, or pass its --control PATH")
        defer { descriptor.close() }
        var text = #"{"v":1,"id":1,"method":"#
        JSONStringLiteral.append(method, to: &text)
        let request = Array((text + #","params":"#).utf8) + paramsJSON + Array("}\n".utf8)
        guard LineSocket.write(request, to: descriptor) else {
            throw .init("sending to the rig on \(path) failed: \(Errno.current)")
        }
        while true {
            guard let line = LineSocket.readLine(from: descriptor, timeoutMilliseconds: replyTimeoutMilliseconds,
                                                maximumLength: RigProtocol.maximumLineLength) else {
                throw .init("the rig on \(path) did not answer")
            }
            if let event = try? JSONDecoder().decode(EventLine.self, from: Data(line)), event.event != nil { continue }
            return line
        }
    }
}

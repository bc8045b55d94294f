import Foundation
import SystemIO

/// The client end of the control socket protocol (`ControlRequest`).
public enum ControlClient {
    /// Sends one request and waits for the response line. The connection stays open while
    /// waiting: closing it would withdraw an answer. `pathIsDefault`: the path is the default
    /// one, whose directory must be private (see `connect`).
    public static func exchange(_ request: ControlRequest, path: String, pathIsDefault: Bool,
                                replyTimeoutMilliseconds: Int32) throws(ControlSocket.Failure) -> ControlResponse {
        let descriptor = try connect(to: path, directoryMustBePrivate: pathIsDefault, server: "key", nobodyListening:
            "start one with `latchkey serve --presence control`, or pass its --name or --control PATH")
        guard LineSocket.write(ControlLine.encode(request), to: descriptor) else {
            throw .init("sending to the control socket \(path) failed: \(Errno.current)")
        }
        guard let line = LineSocket.readLine(from: descriptor, timeoutMilliseconds: replyTimeoutMilliseconds, maximumLength: ControlLine.maximumLength) else {
            throw .init("the key on \(path) did not answer")
        }
        guard let response = ControlLine.decode(ControlResponse.self, from: line) else {
            throw .init("the key on \(path) sent something that is not a control response")
        }
        return response
    }

    /// Connects to a control socket the way every client must: in a default directory only if
    /// it is private (as the servers require), and to a server of this user only (SO_PEERCRED),
    /// before a byte is sent — so a socket another local user put in the way hears nothing.
    /// `server` names what should listen ("key", "rig"); `nobodyListening` says how to start one.
    public static func connect(to path: String, directoryMustBePrivate: Bool, server: String,
                               nobodyListening: String) throws(ControlSocket.Failure) -> FileDescriptor {
        if directoryMustBePrivate, let problem = ControlSocket.privacyProblem((path as NSString).deletingLastPathComponent) {
            throw .init(problem)
        }
        let descriptor: FileDescriptor
        do {
            descriptor = try .unixSocket(type: SOCK_STREAM, nonBlocking: false)
        } catch {
            throw .init("socket failed: \(error)")
        }
        while true {
            do {
                try descriptor.connect(to: UnixSocketAddress(path: path))
                break
            } catch where error == .interrupted {
                continue
            } catch where error == .noSuchFileOrDirectory || error == .connectionRefused {
                throw .init("no \(server) is listening on the control socket \(path) (\(error)); \(nobodyListening)")
            } catch {
                throw .init(ControlIO.addressError(path, error, call: "connect"))
            }
        }
        let peer = try? descriptor.peerCredentials()
        guard let peer, PeerCredentials.isTrusted(uid: peer.uid) else {
            descriptor.close()
            let who = peer.map { PeerCredentials.describe(uid: $0.uid) } ?? "a user it cannot tell"
            throw .init("the control socket \(path) is served by \(who), not by you (\(PeerCredentials.describe(uid: getuid()))); "
                        + "nothing was sent to it. Remove it and start your own \(server), or pass --control PATH")
        }
        return descriptor
    }
}

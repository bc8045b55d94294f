import Foundation
import SystemIO

/// The client end of the control socket protocol (`ControlRequest`).
public enum ControlClient {
    /// Sends one request and waits for the response line. The connection stays open while
    /// waiting: closing it would withdraw an answer.
    public static func exchange(_ request: ControlRequest, path: String,
                                replyTimeoutMilliseconds: Int32) throws(ControlSocket.Failure) -> ControlResponse {
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
                throw .init("no key is listening on the control socket \(path) (\(error)); "
                            + "start one with `latchkey serve --presence control`, or pass its --name or --control PATH")
            } catch {
                throw .init(ControlIO.addressError(path, error, call: "connect"))
            }
        }
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
}

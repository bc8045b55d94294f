import Foundation

/// The client end of the control socket protocol (`ControlRequest`).
public enum ControlClient {
    /// Sends one request and waits for the response line. The connection stays open while
    /// waiting: closing it would withdraw an answer.
    public static func exchange(_ request: ControlRequest, path: String,
                                replyTimeoutMilliseconds: Int32) throws(ControlSocket.Failure) -> ControlResponse {
        let descriptor = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard descriptor >= 0 else { throw .init("socket failed: \(String(cString: strerror(errno)))") }
        defer { close(descriptor) }
        while ControlIO.withAddress(path, { connect(descriptor, $0, $1) }) != 0 {
            if errno == EINTR { continue }
            if errno == ENOENT || errno == ECONNREFUSED {
                throw .init("no key is listening on the control socket \(path) (\(String(cString: strerror(errno)))); "
                            + "start one with `latchkey serve --presence control`, or pass its --name or --control PATH")
            }
            throw .init(ControlIO.addressError(path, call: "connect"))
        }
        guard ControlIO.write(ControlLine.encode(request), to: descriptor) else {
            throw .init("sending to the control socket \(path) failed: \(String(cString: strerror(errno)))")
        }
        guard let line = ControlIO.readLine(from: descriptor, timeoutMilliseconds: replyTimeoutMilliseconds) else {
            throw .init("the key on \(path) did not answer")
        }
        guard let response = ControlLine.decode(ControlResponse.self, from: line) else {
            throw .init("the key on \(path) sent something that is not a control response")
        }
        return response
    }
}

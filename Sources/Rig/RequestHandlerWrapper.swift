import Authenticator
import KeyService

/// A rig handler around another (the key's Authenticator, or another wrapper): what it does not
/// change it forwards.
protocol RequestHandlerWrapper: RequestHandler {
    var inner: RequestHandler { get }
}

extension RequestHandlerWrapper {
    var neverWaitsForUser: Bool { inner.neverWaitsForUser }

    func mayRunLong(command: UInt8, payload: [UInt8]) -> Bool {
        inner.mayRunLong(command: command, payload: payload)
    }

    func powerCycle() { inner.powerCycle() }
}

import Authenticator
import KeyService

/// A rig key's handler that shows every request with its response to `observe` (the rig's
/// events, `RigWireEvents`), on the thread that ran it.
final class ObservingHandler: RequestHandlerWrapper {
    typealias Observer = @Sendable (_ command: UInt8, _ request: [UInt8], _ response: [UInt8]) -> Void

    let inner: RequestHandler
    let observe: Observer

    init(_ inner: RequestHandler, observe: @escaping Observer) {
        self.inner = inner
        self.observe = observe
    }

    func handle(command: UInt8, payload: [UInt8], context: RequestContext) -> [UInt8] {
        let response = inner.handle(command: command, payload: payload, context: context)
        observe(command, payload, response)
        return response
    }
}

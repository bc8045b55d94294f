import CBOR
import Foundation
import SystemIO
import KeyService
import Presence
import Encoding

/// One request line of the rig control API (docs/rig-protocol.md) and its response line, for a
/// control connection (`RigConnection`) and for callers in-process (`Rig.respond(to:)`).
enum RigRequests {
    /// The response line to one request, and for `subscribe` the authenticator it follows
    /// (`.some(nil)`: all of them).
    static func respond(to line: [UInt8], rig: Rig, allowSubscribe: Bool = true,
                        isAbandoned: @escaping () -> Bool = { false }) -> (response: [UInt8], subscription: String??) {
        let data = Data(line)
        guard let envelope = try? JSONDecoder().decode(RigProtocol.Envelope.self, from: data), let method = envelope.method else {
            return (RigProtocol.response(id: nil, failure: RigFailure(.parseError,
                "the line is not a JSON object with \"v\" and \"method\"")), nil)
        }
        guard envelope.v == RigProtocol.version else {
            let version = envelope.v.map(String.init) ?? "none"
            return (RigProtocol.response(id: envelope.id, failure: RigFailure(.parseError,
                "protocol version \(version) is not supported (this rig speaks \"v\":\(RigProtocol.version))")), nil)
        }
        do throws(RigFailure) {
            if method == "subscribe" {
                guard allowSubscribe else { throw RigFailure(.unsupported, "subscribe needs a control connection") }
                let id = try RigProtocol.params(SubscribeParams.self, from: data).authenticatorId
                if let id { _ = try rig.key(id) }
                rig.logger.debug("rig: subscribe → ok")
                return (RigProtocol.response(id: envelope.id, result: EmptyResult()), .some(id))
            }
            let result = try rig.handle(method: method, line: data, isAbandoned: isAbandoned)
            rig.logger.debug("rig: \(method) → ok")
            return (RigProtocol.response(id: envelope.id, result: AnyEncodable(result)), nil)
        } catch {
            // The log names the method and the code, never the params (private keys travel there).
            rig.logger.debug("rig: \(method) → \(error.code.rawValue)")
            return (RigProtocol.response(id: envelope.id, failure: error), nil)
        }
    }
}

struct SubscribeParams: Decodable { var authenticatorId: String? }

extension Rig {
    /// One request line in, its response line out: the control API without a socket, for
    /// embedding a rig in a process (benchmarks, tests). `subscribe` needs a connection and
    /// is refused here.
    public func respond(to line: [UInt8]) -> [UInt8] {
        let (response, subscription) = RigRequests.respond(to: line, rig: self, allowSubscribe: false)
        precondition(subscription == nil)
        return response
    }
}

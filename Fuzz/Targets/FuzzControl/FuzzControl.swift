import Foundation
import FuzzSupport
import KeyService
import Presence

/// The control socket's request line (`ControlCommand(line:)`, what `ControlSocket` acts on).
/// Invariants: never a trap; an answer only for a version-1 JSON object whose action is
/// approve or deny, and it names at most one target; a bare or request-id answer never waits
/// for a future request (its target is `.pending` / `.request`), an RP answer waits at most an hour.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let line = FuzzInput(data, size).bytes
    let command = ControlCommand(line: line)
    let request = try? JSONDecoder().decode(ControlRequest.self, from: Data(line))
    switch command {
    case .status:
        invariant(request?.version == 1 && request?.action == "status", "status from \(hex(line))")
    case let .answer(decision, target, timeout):
        invariant(request?.version == 1 && request?.action == decision.rawValue, "an answer from \(hex(line))")
        invariant(timeout <= ControlCommand.maximumAnswerTimeoutMilliseconds, "timeout \(timeout)")
        switch target {
        case .pending: invariant(request?.rpID == nil && request?.requestID == nil, "bare answer with a target")
        case .request(let id): invariant(request?.requestID == id && request?.rpID == nil, "request target mismatch")
        case .relyingParty(let rp): invariant(request?.rpID == rp && !rp.isEmpty && request?.requestID == nil, "rp target mismatch")
        }
    case .invalid(let message):
        invariant(!message.isEmpty, "an error without a message")
    }
    return 0
}

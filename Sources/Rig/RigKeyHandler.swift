import Authenticator
import CBOR
import CTAP
import CTAPHID
import KeyService
import Synchronization
import SystemIO

/// A rig key's Authenticator as its clients meet it. Each CTAP2 request is decoded once and
/// answered typed (Authenticator.exchangeCTAP2); the response overrides change the typed answer
/// (flags cleared in its authenticator data, the signature made again over it with the key that
/// made it — the credential's, or the attestation key of x5c[0] — and, for a bogus signature,
/// altered); the credential events are read from the request and the answer the client gets
/// (RigWireEvents); and only then is the answer encoded. U2F (CTAPHID_MSG) passes as bytes, its
/// events read from the APDUs. Requests run on the key's worker, one at a time.
final class RigKeyHandler: RequestHandlerWrapper, @unchecked Sendable {
    typealias Report = @Sendable ([RigWireEvents.Event]) -> Void

    let authenticator: Authenticator
    var inner: RequestHandler { authenticator }
    let overrides: ResponseOverrides
    let logger: Logger
    let report: Report
    /// The assertion sequence a getNextAssertion continues, kept as the Authenticator keeps its
    /// own (one at a time, begun by a getAssertion that found more than one account, ended by
    /// any other command on its channel): the clientDataHash its assertions are signed over (and
    /// signed again under overrides) and the RP its events name. Worker only.
    private var sequence: (channel: UInt32, clientDataHash: [UInt8], rpID: String)?

    init(_ authenticator: Authenticator, overrides: ResponseOverrides, logger: Logger, report: @escaping Report = { _ in }) {
        self.authenticator = authenticator
        self.overrides = overrides
        self.logger = logger
        self.report = report
    }

    func powerCycle() {
        sequence = nil
        authenticator.powerCycle()
    }

    func handle(command: UInt8, payload: [UInt8], context: RequestContext) -> [UInt8] {
        guard command == CTAPHIDCommand.cbor.rawValue else {
            let response = authenticator.handle(command: command, payload: payload, context: context)
            if command == CTAPHIDCommand.msg.rawValue {
                let events = RigWireEvents.u2fEvents(request: payload, response: response)
                if !events.isEmpty { report(events) }
            }
            return response
        }
        let continued = sequence.flatMap { $0.channel == context.channel ? $0 : nil }
        if continued != nil, payload.first != CTAPCommand.getNextAssertion.rawValue { sequence = nil }
        let (request, answered) = authenticator.exchangeCTAP2(payload, context: context)
        var outcome = answered
        let clientDataHash: [UInt8]?
        switch request {
        case let .makeCredential(made)?: clientDataHash = made.clientDataHash
        case let .getAssertion(asked)?:
            clientDataHash = asked.clientDataHash
            if case let .success(.assertion(first)) = outcome, (first.numberOfCredentials ?? 1) > 1 {
                sequence = (context.channel, asked.clientDataHash, asked.rpID)
            }
        case .getNextAssertion?: clientDataHash = continued?.clientDataHash
        default: clientDataHash = nil
        }
        if overrides.isActive, case let .success(response) = outcome, let clientDataHash {
            if let overridden = override(response, clientDataHash: clientDataHash) {
                outcome = .success(overridden)
            } else {
                logger.error("response overrides: the \(request?.command.name ?? "CTAP2") response could not be signed again; answered CTAP1_ERR_OTHER")
                outcome = .failure(.other)
            }
        }
        let events = RigWireEvents.events(request: request, outcome: outcome, continuing: continued?.rpID)
        if !events.isEmpty { report(events) }
        return outcome.encoded()
    }

    /// `response` with the overrides set now; nil when its signature cannot be made again.
    private func override(_ response: CTAP2Response, clientDataHash: [UInt8]) -> CTAP2Response? {
        let cleared = overrides.clearedFlags
        let bogus = overrides.bogusSignature.load(ordering: .acquiring)
        switch response {
        case var .credential(made):
            guard let authData = try? AuthenticatorData(decoding: made.authenticatorData) else { return nil }
            let changed = !authData.flags.isDisjoint(with: cleared)
            made.authenticatorData = AuthenticatorData.clearing(cleared, in: made.authenticatorData)
            // packed: alg, sig, x5c; `none` has no signature to make again.
            if case var .map(statement) = made.attestationStatement, var signature = statement["sig"]?.bytesValue {
                if changed {
                    guard let certificate = statement["x5c"]?.arrayValue?.first?.bytesValue,
                          let again = authenticator.attestationSignature(certifiedBy: certificate,
                                                                         for: made.authenticatorData + clientDataHash) else { return nil }
                    signature = again
                }
                statement["sig"] = .byteString(bogus ? ResponseOverrides.altered(signature) : signature)
                made.attestationStatement = .map(statement)
            }
            return .credential(made)
        case var .assertion(assertion):
            guard let authData = try? AuthenticatorData(decoding: assertion.authenticatorData) else { return nil }
            if !authData.flags.isDisjoint(with: cleared) {
                assertion.authenticatorData = AuthenticatorData.clearing(cleared, in: assertion.authenticatorData)
                guard let again = authenticator.signature(of: assertion.credential.id, rpIDHash: authData.rpIDHash,
                                                          for: assertion.authenticatorData + clientDataHash) else { return nil }
                assertion.signature = again
            }
            if bogus { assertion.signature = ResponseOverrides.altered(assertion.signature) }
            return .assertion(assertion)
        default:
            return response
        }
    }
}

import Authenticator
import CredentialStore
import CTAPHID
import FIDOCrypto

/// What KeyRunner runs each CBOR or MSG request on: a key's Authenticator, or something that
/// wraps one (whatever a test rig changes lives in such wrappers, never in the key's own
/// request path), or a recorded key's answers.
///
/// Called from one thread at a time: the loop's, or the runner's worker.
public protocol RequestHandler: AnyObject, Sendable {
    /// True when no request can wait for a person (auto or deny presence): the loop may then run
    /// a request itself rather than hand it to its worker.
    var neverWaitsForUser: Bool { get }
    /// Whether this request may take long all the same (a makeCredential that makes an RSA key):
    /// it then goes to the worker, which keeps KEEPALIVE going.
    func mayRunLong(command: UInt8, payload: [UInt8]) -> Bool
    /// The response to one request: a CTAP2 status byte and CBOR (`command` CTAPHID_CBOR), or a
    /// U2F response ending in its status word (CTAPHID_MSG).
    func handle(command: UInt8, payload: [UInt8], context: RequestContext) -> [UInt8]
    /// Volatile state dropped and the reset window reopened, as after a power cycle (SIGHUP).
    func powerCycle()
}

extension Authenticator: RequestHandler {
    public var neverWaitsForUser: Bool { presence.answersImmediately }

    public func mayRunLong(command: UInt8, payload: [UInt8]) -> Bool {
        command == CTAPHIDCommand.cbor.rawValue && mayRunLong(payload)
    }

    public func handle(command: UInt8, payload: [UInt8], context: RequestContext) -> [UInt8] {
        command == CTAPHIDCommand.cbor.rawValue ? handleCTAP2(payload, context: context) : handleU2F(payload, context: context)
    }
}

/// A key that answers `StoreProof`'s vendor command for its store (how a command that found it
/// by name knows it holds that store), and passes everything else to `inner`.
public final class StoreProvingHandler: RequestHandler, @unchecked Sendable {
    let inner: RequestHandler
    private let proofKey: SecretBytes

    public init(_ inner: RequestHandler, proofKey: SecretBytes) {
        self.inner = inner
        self.proofKey = proofKey
    }

    /// The vendor commands this handler answers (for the CTAPHID layer, which refuses others).
    public static let vendorCommands: Set<UInt8> = [StoreProof.command]

    public var neverWaitsForUser: Bool { inner.neverWaitsForUser }

    public func mayRunLong(command: UInt8, payload: [UInt8]) -> Bool {
        command == StoreProof.command ? false : inner.mayRunLong(command: command, payload: payload)
    }

    public func handle(command: UInt8, payload: [UInt8], context: RequestContext) -> [UInt8] {
        command == StoreProof.command ? StoreProof.answer(payload, key: proofKey) : inner.handle(command: command, payload: payload, context: context)
    }

    public func powerCycle() { inner.powerCycle() }
}

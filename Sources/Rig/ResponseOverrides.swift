import Authenticator
import CBOR
import CTAP
import CTAPHID
import KeyService
import Synchronization
import SystemIO

/// A rig key's response override bits (DevTools WebAuthn.setResponseOverrideBits, WebDriver's
/// virtual authenticators): while set, every makeCredential, getAssertion and getNextAssertion
/// response carries the fault a relying party must catch, and exactly that one: flags without UV
/// or UP under a valid signature (signed again by the key), or a well-formed signature that does
/// not verify.
final class ResponseOverrides: Sendable {
    /// The signature is altered (its last byte's low bit flipped: still well-formed DER or 64
    /// bytes, no longer valid).
    let bogusSignature = Atomic<Bool>(false)
    /// The UV flag is cleared.
    let badUV = Atomic<Bool>(false)
    /// The UP flag is cleared.
    let badUP = Atomic<Bool>(false)

    /// The flags to clear now (authenticator data's UP 0x01, UV 0x04).
    var clearedFlags: UInt8 {
        (badUP.load(ordering: .acquiring) ? 0x01 : 0) | (badUV.load(ordering: .acquiring) ? 0x04 : 0)
    }

    var isActive: Bool { clearedFlags != 0 || bogusSignature.load(ordering: .acquiring) }

    static func altered(_ signature: [UInt8]) -> [UInt8] {
        guard !signature.isEmpty else { return signature }
        var altered = signature
        altered[altered.count - 1] ^= 0x01
        return altered
    }
}

/// A rig key's Authenticator with its response overrides applied: the response is decoded, its
/// flags cleared, its signature made again over the new authenticator data with the key that
/// made it (the credential's, or the attestation key of x5c[0]) and, for a bogus signature,
/// altered. Requests run on the key's worker, one at a time.
final class ResponseOverridingHandler: RequestHandlerWrapper, @unchecked Sendable {
    let authenticator: Authenticator
    var inner: RequestHandler { authenticator }
    let overrides: ResponseOverrides
    let logger: Logger
    /// Each channel's last getAssertion clientDataHash, which its getNextAssertions sign over.
    /// Worker only.
    private var clientDataHashes: [UInt32: [UInt8]] = [:]

    init(_ authenticator: Authenticator, overrides: ResponseOverrides, logger: Logger) {
        self.authenticator = authenticator
        self.overrides = overrides
        self.logger = logger
    }

    func powerCycle() {
        clientDataHashes = [:]
        authenticator.powerCycle()
    }

    func handle(command: UInt8, payload: [UInt8], context: RequestContext) -> [UInt8] {
        let response = authenticator.handle(command: command, payload: payload, context: context)
        guard command == CTAPHIDCommand.cbor.rawValue, let operation = payload.first.flatMap(CTAPCommand.init(rawValue:)) else {
            return response
        }
        let clientDataHash: [UInt8]?
        switch operation {
        case .makeCredential:
            clientDataHash = Self.requestMember(1, of: payload)
        case .getAssertion:
            clientDataHash = Self.requestMember(2, of: payload)
            clientDataHashes[context.channel] = clientDataHash
        case .getNextAssertion:
            clientDataHash = clientDataHashes[context.channel]
        default:
            return response
        }
        guard overrides.isActive, response.first == CTAP2StatusCode.success.rawValue, let clientDataHash else { return response }
        guard let overridden = override(response, operation: operation, clientDataHash: clientDataHash) else {
            logger.error("response overrides: the \(operation.name) response could not be signed again; answered CTAP1_ERR_OTHER")
            return [CTAP2StatusCode.other.rawValue]
        }
        return overridden
    }

    /// A request's byte-string member (the clientDataHash), from a request the key accepted.
    private static func requestMember(_ key: UInt64, of payload: [UInt8]) -> [UInt8]? {
        (try? CBORDecoder.decode(Array(payload.dropFirst())))?[.unsignedInt(key)]?.bytesValue
    }

    private func override(_ response: [UInt8], operation: CTAPCommand, clientDataHash: [UInt8]) -> [UInt8]? {
        guard case var .map(body) = try? CBORDecoder.decode(Array(response.dropFirst())),
              var authenticatorData = body[2]?.bytesValue, authenticatorData.count >= 37 else { return nil }
        let cleared = overrides.clearedFlags
        let bogus = overrides.bogusSignature.load(ordering: .acquiring)
        let changed = authenticatorData[32] & cleared != 0
        authenticatorData[32] &= ~cleared
        body[2] = .byteString(authenticatorData)
        let message = authenticatorData + clientDataHash
        if operation == .makeCredential {
            // packed: alg, sig, x5c; `none` has no signature to make again.
            if case var .map(statement) = body[3], var signature = statement["sig"]?.bytesValue {
                if changed {
                    guard let certificate = statement["x5c"]?.arrayValue?.first?.bytesValue,
                          let again = authenticator.attestationSignature(certifiedBy: certificate, for: message) else { return nil }
                    signature = again
                }
                statement["sig"] = .byteString(bogus ? ResponseOverrides.altered(signature) : signature)
                body[3] = .map(statement)
            }
        } else {
            guard var signature = body[3]?.bytesValue else { return nil }
            if changed {
                guard let credentialID = body[1]?["id"]?.bytesValue,
                      let again = authenticator.signature(of: credentialID, rpIDHash: Array(authenticatorData.prefix(32)),
                                                          for: message) else { return nil }
                signature = again
            }
            body[3] = .byteString(bogus ? ResponseOverrides.altered(signature) : signature)
        }
        return [CTAP2StatusCode.success.rawValue] + CBORValue.map(body).encoded()
    }
}

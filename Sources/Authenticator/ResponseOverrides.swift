import CTAP
import Synchronization

/// A test rig's response override bits (DevTools WebAuthn.setResponseOverrideBits, WebDriver's
/// virtual authenticators): while set, every makeCredential and getAssertion response carries
/// the fault a relying party must catch. Applied before signing, so the RP sees exactly the
/// fault named: flags without UV or UP under a valid signature, or a well-formed signature that
/// does not verify. Only `latchkey rig` keys have them; `latchkey serve` keys never do.
public final class ResponseOverrides: Sendable {
    /// The signature is altered (its last byte's low bit flipped: still well-formed DER or 64
    /// bytes, no longer valid).
    public let bogusSignature = Atomic<Bool>(false)
    /// The UV flag is cleared.
    public let badUV = Atomic<Bool>(false)
    /// The UP flag is cleared.
    public let badUP = Atomic<Bool>(false)

    public init() {}

    func flags(_ flags: AuthenticatorData.Flags) -> AuthenticatorData.Flags {
        var result = flags
        if badUV.load(ordering: .acquiring) { result.remove(.userVerified) }
        if badUP.load(ordering: .acquiring) { result.remove(.userPresent) }
        return result
    }

    func signature(_ signature: [UInt8]) -> [UInt8] {
        guard bogusSignature.load(ordering: .acquiring), !signature.isEmpty else { return signature }
        var altered = signature
        altered[altered.count - 1] ^= 0x01
        return altered
    }
}

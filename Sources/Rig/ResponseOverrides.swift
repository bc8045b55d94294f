import CTAP
import Synchronization

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

    /// The flags to clear now.
    var clearedFlags: AuthenticatorData.Flags {
        var flags: AuthenticatorData.Flags = []
        if badUP.load(ordering: .acquiring) { flags.insert(.userPresent) }
        if badUV.load(ordering: .acquiring) { flags.insert(.userVerified) }
        return flags
    }

    var isActive: Bool { !clearedFlags.isEmpty || bogusSignature.load(ordering: .acquiring) }

    static func altered(_ signature: [UInt8]) -> [UInt8] {
        guard !signature.isEmpty else { return signature }
        var altered = signature
        altered[altered.count - 1] ^= 0x01
        return altered
    }
}

/// pinUvAuthToken permissions (CTAP 2.1 §6.5.5.7, "permissions" bit field).
public struct PinUvAuthPermissions: OptionSet, Sendable, Hashable {
    public let rawValue: UInt64
    public init(rawValue: UInt64) { self.rawValue = rawValue }

    /// mc: authenticatorMakeCredential (0x01); needs an rpId.
    public static let makeCredential = PinUvAuthPermissions(rawValue: 0x01)
    /// ga: authenticatorGetAssertion (0x02); needs an rpId.
    public static let getAssertion = PinUvAuthPermissions(rawValue: 0x02)
    /// cm: authenticatorCredentialManagement (0x04); rpId optional.
    public static let credentialManagement = PinUvAuthPermissions(rawValue: 0x04)
    /// be: authenticatorBioEnrollment (0x08).
    public static let bioEnrollment = PinUvAuthPermissions(rawValue: 0x08)
    /// lbw: authenticatorLargeBlobs write (0x10); rpId optional.
    public static let largeBlobWrite = PinUvAuthPermissions(rawValue: 0x10)
    /// acfg: authenticatorConfig (0x20).
    public static let authenticatorConfiguration = PinUvAuthPermissions(rawValue: 0x20)
    /// pcmr: persistent credential management, read only (0x40, CTAP 2.2 §6.5.5.7): granted
    /// alone, to the persistentPinUvAuthToken, which survives power cycles; rpId ignored.
    public static let persistentCredentialManagementReadOnly = PinUvAuthPermissions(rawValue: 0x40)

    /// Every permission CTAP 2.2 defines; other bits are "undefined permissions", which the
    /// authenticator ignores (CTAP 2.1 §6.5.5.7.2 step 4 and 15).
    public static let defined: PinUvAuthPermissions = [.makeCredential, .getAssertion, .credentialManagement,
                                                       .bioEnrollment, .largeBlobWrite, .authenticatorConfiguration,
                                                       .persistentCredentialManagementReadOnly]
    /// The permissions that bind a token to the rpId given with them.
    public static let requiringRPID: PinUvAuthPermissions = [.makeCredential, .getAssertion]
    /// getPinToken (0x05): the legacy default, mc and ga without an rpId (CTAP 2.1 §6.5.5.7.1).
    public static let legacyDefault: PinUvAuthPermissions = [.makeCredential, .getAssertion]
}

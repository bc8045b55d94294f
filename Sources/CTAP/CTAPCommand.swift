/// CTAP2 command bytes (CTAP 2.1 §6, "Authenticator API").
public enum CTAPCommand: UInt8, Sendable, CaseIterable {
    /// authenticatorMakeCredential (0x01)
    case makeCredential = 0x01
    /// authenticatorGetAssertion (0x02)
    case getAssertion = 0x02
    /// authenticatorGetInfo (0x04)
    case getInfo = 0x04
    /// authenticatorClientPIN (0x06)
    case clientPIN = 0x06
    /// authenticatorReset (0x07)
    case reset = 0x07
    /// authenticatorGetNextAssertion (0x08)
    case getNextAssertion = 0x08
    /// authenticatorBioEnrollment (0x09)
    case bioEnrollment = 0x09
    /// authenticatorCredentialManagement (0x0A)
    case credentialManagement = 0x0A
    /// authenticatorSelection (0x0B)
    case selection = 0x0B
    /// authenticatorLargeBlobs (0x0C)
    case largeBlobs = 0x0C
    /// authenticatorConfig (0x0D)
    case config = 0x0D
    /// Pre-2.1 credential management (0x41), used by libfido2 ≤ 1.14 and older OpenSSH.
    case credentialManagementPreview = 0x41

    /// The spec name, for logs and traces.
    public var name: String {
        switch self {
        case .makeCredential: "authenticatorMakeCredential"
        case .getAssertion: "authenticatorGetAssertion"
        case .getInfo: "authenticatorGetInfo"
        case .clientPIN: "authenticatorClientPIN"
        case .reset: "authenticatorReset"
        case .getNextAssertion: "authenticatorGetNextAssertion"
        case .bioEnrollment: "authenticatorBioEnrollment"
        case .credentialManagement: "authenticatorCredentialManagement"
        case .selection: "authenticatorSelection"
        case .largeBlobs: "authenticatorLargeBlobs"
        case .config: "authenticatorConfig"
        case .credentialManagementPreview: "authenticatorCredentialManagement (preview 0x41)"
        }
    }
}

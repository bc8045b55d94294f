/// authenticatorClientPIN subcommands (CTAP 2.1 §6.5.5, "subCommand" 0x02).
public enum ClientPINSubcommand: UInt64, Sendable, CaseIterable {
    /// getPINRetries (0x01)
    case getPINRetries = 0x01
    /// getKeyAgreement (0x02)
    case getKeyAgreement = 0x02
    /// setPIN (0x03)
    case setPIN = 0x03
    /// changePIN (0x04)
    case changePIN = 0x04
    /// getPinToken (0x05), superseded by 0x09 but still sent by CTAP 2.0 platforms
    case getPinToken = 0x05
    /// getPinUvAuthTokenUsingUvWithPermissions (0x06), built-in UV only
    case getPinUvAuthTokenUsingUvWithPermissions = 0x06
    /// getUVRetries (0x07), built-in UV only
    case getUVRetries = 0x07
    /// getPinUvAuthTokenUsingPinWithPermissions (0x09)
    case getPinUvAuthTokenUsingPinWithPermissions = 0x09
}

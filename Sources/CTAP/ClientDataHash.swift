/// clientDataHash (makeCredential 0x01, getAssertion 0x02) is SHA-256 of the client data
/// (WebAuthn §5.8.1; CTAP 2.1 §6.1, §6.2): exactly 32 bytes.
public enum ClientDataHash {
    public static let length = 32

    /// `bytes` if they are 32, else CTAP1_ERR_INVALID_LENGTH. The specification names no status
    /// for another length; INVALID_LENGTH is what SoloKeys' firmware answers.
    public static func checked(_ bytes: [UInt8]) throws(CTAP2StatusCode) -> [UInt8] {
        guard bytes.count == length else { throw .invalidLength }
        return bytes
    }
}

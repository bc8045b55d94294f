/// The PIN policy numbers (CTAP 2.1 §6.5.1).
enum PINPolicy {
    /// pinRetries starts here and returns here after every correct PIN.
    static let maxRetries = 8
    /// Default minimum PIN length, in Unicode code points.
    static let defaultMinLength = 4
    /// Maximum PIN length, in UTF-8 bytes.
    static let maxByteLength = 63
    /// newPinEnc always carries the PIN padded with 0x00 to this length.
    static let paddedLength = 64
    /// The store setting that raises the minimum (authenticatorConfig setMinPINLength writes it):
    /// one byte, the minimum in code points. Absent or not exactly one byte means the default;
    /// values are clamped to 4…63 (never below the default; a minimum above 63 could never be met).
    static let minLengthSetting = "minPINLength"
}

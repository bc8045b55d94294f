import CBOR
import CTAP

/// The CTAP extensions a key offers in getInfo (0x02) and answers. One it does not offer is
/// ignored in requests, as CTAP 2.1 §9 has authenticators ignore extensions they do not
/// support (the request succeeds, with no output for it). A test rig narrows the set to stand
/// for keys that lack an extension (WebDriver's virtual authenticator `extensions`); a real key
/// offers them all.
public struct ExtensionSet: OptionSet, Sendable, Hashable {
    public let rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    public static let credProtect = ExtensionSet(rawValue: 1 << 0)
    public static let credBlob = ExtensionSet(rawValue: 1 << 1)
    /// hmac-secret, and hmac-secret-mc with it (CTAP 2.2 §12.7 builds on it).
    public static let hmacSecret = ExtensionSet(rawValue: 1 << 2)
    /// largeBlobKey, and with it authenticatorLargeBlobs (0x0C) and the `largeBlobs` option:
    /// the array is of no use without the keys.
    public static let largeBlobKey = ExtensionSet(rawValue: 1 << 3)
    public static let minPinLength = ExtensionSet(rawValue: 1 << 4)
    /// thirdPartyPayment (CTAP 2.2 §12.9): a credential marked at creation as usable for
    /// payments another party starts (Secure Payment Confirmation), as on a YubiKey 5.8.
    public static let thirdPartyPayment = ExtensionSet(rawValue: 1 << 5)
    /// previewSign (version 4 of Yubico's WebAuthn signing extension, PreviewSign.swift): signing
    /// keys inside a credential, as YubiKey 5.8 preview firmware has them. A draft: a client that
    /// does not know it never sends it.
    public static let previewSign = ExtensionSet(rawValue: 1 << 6)

    public static let all: ExtensionSet = [.credProtect, .credBlob, .hmacSecret, .largeBlobKey, .minPinLength, .thirdPartyPayment,
                                           .previewSign]

    /// getInfo's extension identifiers, in the order a Latchkey key lists them.
    public var identifiers: [String] {
        var names: [String] = []
        if contains(.credProtect) { names.append("credProtect") }
        if contains(.credBlob) { names.append("credBlob") }
        if contains(.hmacSecret) { names += ["hmac-secret", "hmac-secret-mc"] }
        if contains(.largeBlobKey) { names.append("largeBlobKey") }
        if contains(.minPinLength) { names.append("minPinLength") }
        if contains(.thirdPartyPayment) { names.append("thirdPartyPayment") }
        if contains(.previewSign) { names.append("previewSign") }
        return names
    }
}

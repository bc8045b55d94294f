import CBOR
import CTAP
import FIDOCrypto

/// authenticatorLargeBlobs (0x0C) from the platform side (CTAP 2.1 §6.10.2): the key's whole
/// serialized large-blob array read and written in fragments. What the array holds (which entry
/// is whose) is the caller's: the key stores it opaquely.
extension RemoteAuthenticator {
    /// The largest array read: a key advertises a few KiB (a YubiKey 5: 1024 bytes); a key that
    /// keeps sending full fragments past this is answering wrongly.
    public static let largeBlobReadLimit = 1 << 20

    /// The fragment size both ways: maxMsgSize − 64 (§6.10.2's maxFragmentLength), so every
    /// request and reply fits one message the key takes.
    public func largeBlobFragmentLength() throws(DeviceError) -> Int {
        // Within what CTAPHID can carry (128 reports of 59 bytes less the first's 7), whatever the key says.
        min(max(try info().maxMsgSize ?? 1024, 128), 7_609) - 64
    }

    /// The serialized array, read until a fragment comes back short. Not verified here (the
    /// trailing hash is the reader's: `LargeBlobArray(serialized:hash:)`).
    public func largeBlobArray() throws(DeviceError) -> [UInt8] {
        let fragment = try largeBlobFragmentLength()
        var array: [UInt8] = []
        while true {
            let request = LargeBlobsRequest(get: UInt64(fragment), offset: UInt64(array.count))
            guard let body = try self.request(.largeBlobs, request.cborValue, name: "authenticatorLargeBlobs (get)"),
                  let config = body[1]?.bytesValue else {
                throw .malformed("\(label) answered authenticatorLargeBlobs (get) without its bytes")
            }
            guard config.count <= fragment else {
                throw .malformed("\(label) answered authenticatorLargeBlobs (get) with more bytes than asked")
            }
            array += config
            if config.count < fragment { return array }
            guard array.count < Self.largeBlobReadLimit else {
                throw .malformed("\(label)'s large-blob array goes on past \(Self.largeBlobReadLimit) bytes")
            }
        }
    }

    /// Writes `array` (serialized, with its hash) in fragments. `token`: a pinUvAuthToken with the
    /// largeBlobWrite permission, which a key with a PIN or alwaysUv requires; nil for a key that
    /// verifies nobody.
    public func writeLargeBlobArray(_ array: [UInt8], token: PinUvAuthToken?) throws(DeviceError) {
        let fragment = try largeBlobFragmentLength()
        guard array.count <= Int(UInt32.max) else { throw .failed("a large-blob array of \(array.count) bytes is too long to write") }
        var offset = 0
        repeat {
            let piece = Array(array[offset..<min(offset + fragment, array.count)])
            var request = LargeBlobsRequest(set: piece, offset: UInt64(offset), length: offset == 0 ? UInt64(array.count) : nil)
            if let token {
                let message = LargeBlobsRequest.authenticatedMessage(offset: UInt32(offset), setHash: SHA256.hash(piece))
                request.pinUvAuthParam = token.authenticate(message)
                request.pinUvAuthProtocol = UInt64(token.pinUvAuthProtocol.rawValue)
            }
            _ = try self.request(.largeBlobs, request.cborValue, name: "authenticatorLargeBlobs (set)")
            offset += piece.count
        } while offset < array.count
    }
}

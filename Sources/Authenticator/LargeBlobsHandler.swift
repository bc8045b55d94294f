import CBOR
import CTAP
import FIDOCrypto

extension Authenticator {
    /// The serialized large-blob array of a fresh key: the empty CBOR array 0x80 followed by
    /// LEFT(SHA-256(0x80), 16) (CTAP 2.1 §6.10.1).
    static let defaultLargeBlobArray = LargeBlobArray().serialized(hash: SHA256.hash)

    /// Fragments of a read or write are at most maxMsgSize − 64 bytes (§6.10.2).
    var maxLargeBlobFragmentLength: Int { configuration.maxMessageSize - 64 }

    /// The stored serialized large-blob array (the default until one is written). Not through
    /// the settings cache: a rig plants blobs in the array from its own thread
    /// (`LargeBlobStorage`), and a read costs nothing next to the transfer.
    func serializedLargeBlobArray() throws(CTAP2StatusCode) -> [UInt8] {
        try withStore { store throws(StoreError) in try LargeBlobStorage.serializedArray(in: store) }
    }

    /// authenticatorLargeBlobs (0x0C), CTAP 2.1 §6.10.2.
    func largeBlobs(_ request: LargeBlobsRequest) throws(CTAP2StatusCode) -> LargeBlobsResponse? {
        // "If offset is not present in the input map, return CTAP1_ERR_INVALID_PARAMETER."
        guard let offset = request.offset else { throw .invalidParameter }
        switch (request.get, request.set) {
        case let (get?, nil): return try readLargeBlobs(get: get, offset: offset, request: request)
        case let (nil, fragment?):
            try writeLargeBlobs(fragment, offset: offset, request: request)
            return nil
        default:
            // Exactly one of get and set.
            throw .invalidParameter
        }
    }

    /// get: up to `get` bytes of the stored array from `offset`.
    private func readLargeBlobs(get: UInt64, offset: UInt64, request: LargeBlobsRequest) throws(CTAP2StatusCode) -> LargeBlobsResponse {
        // A read carries no length and no pinUvAuth (reading needs no permission).
        guard request.length == nil, request.pinUvAuthParam == nil, request.pinUvAuthProtocol == nil else {
            throw .invalidParameter
        }
        guard get <= UInt64(maxLargeBlobFragmentLength) else { throw .invalidLength }
        let array = try serializedLargeBlobArray()
        guard offset <= UInt64(array.count) else { throw .invalidParameter }
        let start = Int(offset)
        let end = start + min(Int(get), array.count - start)
        return LargeBlobsResponse(config: Array(array[start..<end]))
    }

    /// set: one fragment of a new array; the last one commits it.
    private func writeLargeBlobs(_ fragment: [UInt8], offset: UInt64, request: LargeBlobsRequest) throws(CTAP2StatusCode) {
        guard fragment.count <= maxLargeBlobFragmentLength else { throw .invalidLength }
        var write: LargeBlobWrite
        if offset == 0 {
            // The first fragment announces the whole length (see LargeBlobWrite).
            write = try LargeBlobWrite(announcedLength: request.length, maxLength: configuration.maxSerializedLargeBlobArray)
        } else {
            guard request.length == nil else { throw .invalidParameter }
            // Fragments arrive in order: CTAP1_ERR_INVALID_SEQ otherwise.
            guard let pending = largeBlobWrite, offset == UInt64(pending.expectedNextOffset) else { throw .invalidSequence }
            write = pending
        }

        // With a PIN set (or alwaysUv on): pinUvAuthParam = authenticate(token, 32×0xff ‖ h'0c00'
        // ‖ uint32LE(offset) ‖ SHA-256(set)) with the lbw permission. Checked before any state
        // changes, so an unauthorised first fragment cannot abort a write in progress.
        let needsToken = try isPINSet() ? true : try isAlwaysUvEnabled()
        if needsToken {
            let message = LargeBlobsRequest.authenticatedMessage(offset: UInt32(offset), setHash: SHA256.hash(fragment))
            _ = try authorizeCommand(pinUvAuthParam: request.pinUvAuthParam, pinUvAuthProtocol: request.pinUvAuthProtocol,
                                     message: message, permission: .largeBlobWrite)
        }
        try write.append(fragment)
        guard write.isComplete else {
            largeBlobWrite = write
            return
        }
        largeBlobWrite = nil
        let array = try write.verifiedArray()
        // One transaction: the old array until it returns, the new one after.
        try withStore { store throws(StoreError) in try LargeBlobStorage.save(array, in: store) }
    }
}

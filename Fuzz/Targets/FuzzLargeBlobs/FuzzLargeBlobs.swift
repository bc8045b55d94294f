import CBOR
import CTAP
import FIDOCrypto
import FuzzSupport

/// authenticatorLargeBlobs (0x0C): get and set in fragments. Authenticated records:
/// pinUvAuthParam = authenticate(token, 32×0xFF ‖ 0x0C 0x00 ‖ uint32LE(offset) ‖ SHA-256(set)) (§6.10.2).
nonisolated(unsafe) let family = CommandFamily(commands: [.largeBlobs], permissions: .largeBlobWrite) { _, request, token in
    guard let set = request[2]?.bytesValue else { return nil }
    let offset = UInt32(truncatingIfNeeded: request[3]?.uint64Value ?? 0)
    let message = platformMessage(0x0C, [0x00] + withUnsafeBytes(of: offset.littleEndian, Array.init) + SHA256.hash(set))
    return request.setting([(5, .byteString(token.authenticate(message))), (6, uint(token.pinUvAuthProtocol.rawValue))])
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    family.run(data, size)
    return 0
}

import CBOR
import CTAP
import FuzzSupport

/// authenticatorClientPIN (0x06): every subcommand as the fuzzer writes it. Authenticated
/// records are the platform's own requests with the fuzzer's fields on top: a real key
/// agreement, so that pinHashEnc / newPinEnc decrypt and the PIN and retry logic runs.
nonisolated(unsafe) let family = CommandFamily(commands: [.clientPIN], permissions: [.credentialManagement]) { _, request, token in
    // The body's map, with pinUvAuthParam over newPinEnc ‖ pinHashEnc as changePIN would have it.
    let message = (request[5]?.bytesValue ?? []) + (request[6]?.bytesValue ?? [])
    return request.setting([(1, uint(token.pinUvAuthProtocol.rawValue)), (4, .byteString(token.authenticate(message)))])
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    family.run(data, size)
    return 0
}

import CTAP
import FuzzSupport

/// authenticatorMakeCredential (0x01), parsed and handled; authenticated records carry
/// pinUvAuthParam = authenticate(token, clientDataHash) (CTAP 2.1 §6.1.2 step 11).
nonisolated(unsafe) let family = CommandFamily(commands: [.makeCredential], permissions: .makeCredential) { _, request, token in
    guard let hash = request[1]?.bytesValue else { return nil }
    return request.setting([(8, .byteString(token.authenticate(hash))),
                            (9, uint(token.pinUvAuthProtocol.rawValue))])
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    family.run(data, size)
    return 0
}

import CBOR
import CTAP
import FuzzSupport

/// authenticatorCredentialManagement (0x0A; 0x41 the preview): enumerate, delete, update user,
/// metadata. Authenticated records: pinUvAuthParam = authenticate(token, subCommand ‖ subCommandParams)
/// (CTAP 2.1 §6.8.2).
nonisolated(unsafe) let family = CommandFamily(commands: [.credentialManagement, .credentialManagement, .credentialManagementPreview],
                           permissions: .credentialManagement) { _, request, token in
    guard let subCommand = request[1]?.uint64Value, subCommand < 256 else { return nil }
    let message = [UInt8(subCommand)] + (request[2]?.encoded() ?? [])
    return request.setting([(3, uint(token.pinUvAuthProtocol.rawValue)), (4, .byteString(token.authenticate(message)))])
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    family.run(data, size)
    return 0
}

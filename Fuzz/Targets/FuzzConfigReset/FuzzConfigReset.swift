import CBOR
import CTAP
import FuzzSupport

/// authenticatorConfig (0x0D: alwaysUv, setMinPINLength, enterprise attestation), reset (0x07),
/// getInfo (0x04) and selection (0x0B): the commands that change or report the whole key.
/// Authenticated config records: pinUvAuthParam = authenticate(token, 32×0xFF ‖ 0x0D ‖ subCommand ‖
/// subCommandParams) (§6.11).
nonisolated(unsafe) let family = CommandFamily(commands: [.config, .reset, .getInfo, .config, .selection],
                           permissions: .authenticatorConfiguration) { command, request, token in
    guard command == .config, let subCommand = request[1]?.uint64Value, subCommand < 256 else { return nil }
    let message = platformMessage(0x0D, [UInt8(subCommand)] + (request[2]?.encoded() ?? []))
    return request.setting([(3, uint(token.pinUvAuthProtocol.rawValue)), (4, .byteString(token.authenticate(message)))])
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    family.run(data, size)
    return 0
}

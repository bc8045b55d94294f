import CTAP
import FuzzSupport

/// authenticatorGetAssertion (0x02) and getNextAssertion (0x08), parsed and handled against
/// seeded credentials; authenticated records carry pinUvAuthParam over clientDataHash.
nonisolated(unsafe) let family = CommandFamily(commands: [.getAssertion, .getNextAssertion, .getAssertion], permissions: .getAssertion) { command, request, token in
    guard command == .getAssertion, let hash = request[2]?.bytesValue else { return nil }
    return request.setting([(6, .byteString(token.authenticate(hash))),
                            (7, uint(token.pinUvAuthProtocol.rawValue))])
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    family.run(data, size)
    return 0
}

import CBOR

/// A command's extension inputs (`MakeCredentialExtensions`, `GetAssertionExtensions`), decoded
/// from the request's extensions map.
public protocol ExtensionInputs: Sendable, Equatable {
    init(cbor value: CBORValue) throws(CTAP2StatusCode)
}

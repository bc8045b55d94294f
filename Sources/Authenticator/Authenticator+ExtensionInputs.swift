import CBOR
import CTAP

extension Authenticator {
    /// The extension inputs of a request as this key takes them. Offering all, the inputs
    /// decoded with the request; offering fewer, decoded again from the offered ones alone, so
    /// that one it does not offer is ignored even when malformed (CTAP 2.1 §9).
    func offeredInputs<Inputs: ExtensionInputs>(decoded: Inputs, error: CTAP2StatusCode?,
                                                inputs: [CBORValue: CBORValue]) throws(CTAP2StatusCode) -> Inputs {
        // Every extension offered (a Latchkey key; not the CTAP 2.0 persona, whose set is
        // hmac-secret alone): no identifier list to build on each request.
        guard configuration.offeredExtensions != .all else {
            if let error { throw error }
            return decoded
        }
        let offered = configuration.extensionIdentifiers
        return try Inputs(cbor: .map(inputs.filter { key, _ in key.stringValue.map(offered.contains) ?? false }))
    }
}

import CTAP

extension Authenticator {
    /// authenticatorGetInfo (0x04). Advertises only what works end to end.
    func getInfo() throws(CTAP2StatusCode) -> AuthenticatorInfo {
        let remaining: Int
        do {
            remaining = max(0, store.maxResidentCredentials - (try store.residentCredentialCount()))
        } catch {
            throw CTAP2StatusCode(error)
        }
        return AuthenticatorInfo(
            versions: ["U2F_V2", "FIDO_2_0"],
            extensions: ["credProtect", "credBlob"],
            aaguid: secrets.aaguid,
            options: ["rk": true, "up": true, "plat": false],
            maxMsgSize: configuration.maxMessageSize,
            pinUvAuthProtocols: [],
            maxCredentialCountInList: configuration.maxCredentialCountInList,
            maxCredentialIdLength: configuration.maxCredentialIDLength,
            transports: ["usb"],
            algorithms: [CredentialParameters(algorithm: COSEAlgorithm.es256.rawValue),
                         CredentialParameters(algorithm: COSEAlgorithm.edDSA.rawValue)],
            firmwareVersion: configuration.firmwareVersion,
            maxCredBlobLength: configuration.maxCredBlobLength,
            remainingDiscoverableCredentials: remaining)
    }
}

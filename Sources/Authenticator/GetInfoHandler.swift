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
            extensions: ["credProtect", "credBlob", "hmac-secret"],
            aaguid: secrets.aaguid,
            options: try infoOptions(),
            maxMsgSize: configuration.maxMessageSize,
            pinUvAuthProtocols: PinUvAuthProtocol.preferenceOrder.map { Int($0.rawValue) },
            maxCredentialCountInList: configuration.maxCredentialCountInList,
            maxCredentialIdLength: configuration.maxCredentialIDLength,
            transports: ["usb"],
            algorithms: [CredentialParameters(algorithm: COSEAlgorithm.es256.rawValue),
                         CredentialParameters(algorithm: COSEAlgorithm.edDSA.rawValue)],
            forcePINChange: try loadPINState()?.forcePINChange ?? false,
            minPINLength: try minPINLength(),
            firmwareVersion: configuration.firmwareVersion,
            maxCredBlobLength: configuration.maxCredBlobLength,
            remainingDiscoverableCredentials: remaining)
    }

    /// getInfo 0x04. The pinUvAuthToken permissions a token may carry follow from these
    /// (`grantablePermissions()`), so a feature appears in both places at once.
    func infoOptions() throws(CTAP2StatusCode) -> [String: Bool] {
        [
            "rk": true,
            "up": true,
            "plat": false,
            // Present and false until a PIN is set (CTAP 2.1 §6.4: false means "capable, not set").
            "clientPin": try isPINSet(),
            // getPinUvAuthTokenUsingPinWithPermissions (0x09) and permissions.
            "pinUvAuthToken": true,
            // With a PIN set, non-discoverable credentials may still be made without UV.
            "makeCredUvNotRqd": true,
        ]
    }
}

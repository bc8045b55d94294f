import CTAP

/// A getInfo answer with every member set, for the getInfo formatter and `latchkey probe` tests.
public enum SampleAuthenticatorInfo {
    public static let full = AuthenticatorInfo(
        versions: ["U2F_V2", "FIDO_2_0", "FIDO_2_1"], extensions: ["credProtect", "hmac-secret"],
        aaguid: [0xD4, 0xA0, 0x16, 0xD1, 0x78, 0x3D, 0x4C, 0x7E, 0xA5, 0x21, 0xDD, 0x21, 0x96, 0xF3, 0x2A, 0x99],
        options: ["rk": true, "up": true, "clientPin": false, "credMgmt": true],
        maxMsgSize: 7609, pinUvAuthProtocols: [2, 1], maxCredentialCountInList: 64, maxCredentialIdLength: 128,
        transports: ["usb"], algorithms: [CredentialParameters(algorithm: -7), CredentialParameters(algorithm: -8),
                                          CredentialParameters(algorithm: -65535)],
        maxSerializedLargeBlobArray: 1024, forcePINChange: false, minPINLength: 4, firmwareVersion: 0x010203,
        maxCredBlobLength: 32, maxRPIDsForSetMinPINLength: 1, remainingDiscoverableCredentials: 999)
}

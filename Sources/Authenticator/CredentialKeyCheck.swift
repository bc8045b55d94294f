import CTAP
import FIDOCrypto

/// Whether a private key from outside (an import) makes a working credential of an algorithm:
/// the key loads for it and signs. Nothing else would find a bad key before a site does.
public enum CredentialKeyCheck {
    /// The key's COSE public key after one signature over a probe message; nil when the key
    /// is not one of `algorithm` or cannot sign.
    public static func publicKey(algorithm: COSEAlgorithm, secret: SecretBytes) -> COSEKey? {
        guard let key = CredentialPrivateKey(algorithm: algorithm, secret: secret),
              let signature = try? key.signature(for: Array("latchkey import check".utf8)), !signature.isEmpty else {
            return nil
        }
        return key.cosePublicKey
    }
}

import Authenticator
import CTAP
import KeySealing
import SystemIO

/// `serve --keys tpm`: the Authenticator's key device over this machine's TPM (`TPMKeys`).
/// A TPM failure while a request runs is CTAP2_ERR_OTHER to the client, and the log says why
/// (the TPM's answer is no client's business).
final class TPMKeyDevice: CredentialKeyDevice, @unchecked Sendable {
    private let keys: TPMKeys
    private let logger: Logger?

    init(tcti: String?, logger: Logger? = nil) throws(SealError) {
        keys = try TPMKeys(tcti: tcti)
        self.logger = logger
    }

    func makeP256Key() throws(CTAP2StatusCode) -> DeviceKey {
        do {
            let made = try keys.makeP256Key()
            return DeviceKey(x: made.x, y: made.y, blob: made.blob)
        } catch {
            logger?.error("making a credential key in the TPM: \(error.message)")
            throw .other
        }
    }

    func holds(blob: [UInt8]) -> Bool { keys.holds(blob: blob) }

    func signature(blob: [UInt8], for message: [UInt8]) throws(CTAP2StatusCode) -> [UInt8] {
        do {
            return try keys.signature(blob: blob, for: message)
        } catch {
            logger?.error("signing with a TPM-bound credential: \(error.message)")
            throw .other
        }
    }
}

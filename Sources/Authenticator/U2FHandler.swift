import CTAP
import FIDOCrypto

extension Authenticator {
    /// Handle one CTAPHID_MSG message: a U2F APDU (FIDO U2F Raw Message Formats). Returns
    /// response data ‖ status word.
    public func handleU2F(_ message: [UInt8], context: RequestContext) -> [UInt8] {
        do throws(U2FStatusWord) {
            let apdu = try U2FAPDU(parsing: message)
            guard apdu.cla == 0 else { throw .claNotSupported }
            // alwaysUv (CTAP 2.1 §6.11.2): U2F cannot verify the user, so the U2F interface is
            // off while the option is on — every instruction answers SW_INS_NOT_SUPPORTED (a
            // client stops at once instead of polling, as it would on CONDITIONS_NOT_SATISFIED),
            // and getInfo drops "U2F_V2". A store failure here counts as "on".
            guard (try? isAlwaysUvEnabled()) == false else { throw .insNotSupported }
            switch U2FAPDU.Instruction(rawValue: apdu.ins) {
            case .version:
                // U2F §6.1: U2F_VERSION takes no data.
                guard apdu.data.isEmpty else { throw .wrongLength }
                return Array("U2F_V2".utf8) + U2FStatusWord.noError.bytes
            case .register:
                return try u2fRegister(apdu, context: context) + U2FStatusWord.noError.bytes
            case .authenticate:
                return try u2fAuthenticate(apdu, context: context) + U2FStatusWord.noError.bytes
            case nil:
                throw .insNotSupported
            }
        } catch {
            return error.bytes
        }
    }

    /// U2F_REGISTER (§4.1): challenge(32) ‖ application(32).
    func u2fRegister(_ apdu: U2FAPDU, context: RequestContext) throws(U2FStatusWord) -> [UInt8] {
        guard apdu.data.count == 64 else { throw .wrongLength }
        let challenge = Array(apdu.data[0..<32])
        let application = Array(apdu.data[32..<64])
        // U2F clients poll: without a touch now, answer CONDITIONS_NOT_SATISFIED and let them retry.
        try u2fPresence(.u2fRegister, apdu: apdu, context: context)
        guard let key = try? P256.Signing.PrivateKey() else { throw .conditionsNotSatisfied }
        // The key handle is a CTAP2 credential ID sealed for the application parameter, so the
        // same credential works in CTAP2 getAssertion with rpIdHash = SHA-256(appId).
        let source = CredentialSource(isResident: false, algorithm: .es256, credProtect: .userVerificationOptional,
                                      privateKey: key.rawRepresentation)
        guard let keyHandle = try? codec.seal(source, rpIDHash: application, nonce: nonce()) else {
            throw .conditionsNotSatisfied
        }
        let publicKey = key.publicKey.x963Representation
        // U2F §4.3: signature over 0x00 ‖ application ‖ challenge ‖ keyHandle ‖ publicKey.
        let signed: [UInt8] = [0x00] + application + challenge + keyHandle + publicKey
        guard let signature = try? attestationKey.signature(for: signed) else { throw .conditionsNotSatisfied }
        return [0x05] + publicKey + [UInt8(keyHandle.count)] + keyHandle + attestationCertificate + signature
    }

    /// U2F_AUTHENTICATE (§5.1): control byte in P1; challenge(32) ‖ application(32) ‖ L ‖ keyHandle.
    func u2fAuthenticate(_ apdu: U2FAPDU, context: RequestContext) throws(U2FStatusWord) -> [UInt8] {
        guard apdu.data.count >= 65 else { throw .wrongLength }
        let challenge = Array(apdu.data[0..<32])
        let application = Array(apdu.data[32..<64])
        let handleLength = Int(apdu.data[64])
        guard apdu.data.count == 65 + handleLength else { throw .wrongLength }
        let keyHandle = Array(apdu.data[65...])
        // Through the cache of recently opened credentials, as getAssertion opens them: a repeated
        // authenticate skips the unsealing and the key import (which derives the public point).
        let key: ECDSA.PrivateKey
        var resident: ResidentCredential?
        if let opened = openCredential(keyHandle, rpIDHash: application) {
            guard case let .ecdsa(.es256, openedKey) = opened.key, opened.credProtect == .userVerificationOptional else { throw .wrongData }
            key = openedKey
            if opened.isResident {
                // A discoverable credential that was deleted or hidden is gone for U2F too.
                guard let stored = try? store.residentCredential(id: keyHandle), stored.hiddenSince == nil else {
                    throw .wrongData
                }
                resident = stored
            }
        } else {
            // A key handle kept in the store (a test rig's added credential, WebDriver's Add
            // Credential on a ctap1/u2f authenticator): a P-256 key for this application.
            guard let stored = try? storedCredential(id: keyHandle, rpIDHash: application, userVerified: false),
                  stored.algorithm == COSEAlgorithm.es256.rawValue, stored.credProtect == .userVerificationOptional,
                  let candidate = try? candidate(from: stored), case let .ecdsa(.es256, storedKey) = candidate.key else {
                throw .wrongData
            }
            key = storedKey
            resident = stored
        }
        let userPresent: UInt8
        switch apdu.p1 {
        case 0x07:
            // check-only: a valid key handle answers CONDITIONS_NOT_SATISFIED (§5.1).
            throw .conditionsNotSatisfied
        case 0x03:
            try u2fPresence(.u2fAuthenticate, apdu: apdu, context: context)
            userPresent = 0x01
        case 0x08:
            userPresent = 0x00
        default:
            throw .wrongData
        }
        guard let counter = try? signatureCounter(for: resident) else { throw .conditionsNotSatisfied }
        let counterBytes: [UInt8] = [UInt8(truncatingIfNeeded: counter >> 24), UInt8(truncatingIfNeeded: counter >> 16),
                                     UInt8(truncatingIfNeeded: counter >> 8), UInt8(truncatingIfNeeded: counter)]
        // U2F §5.4: signature over application ‖ user presence ‖ counter ‖ challenge.
        guard let signature = try? key.signature(for: application + [userPresent] + counterBytes + challenge) else {
            throw .conditionsNotSatisfied
        }
        return [userPresent] + counterBytes + signature
    }

    private func u2fPresence(_ operation: PresenceRequest.Operation, apdu: U2FAPDU,
                             context: RequestContext) throws(U2FStatusWord) {
        do {
            // U2F requests carry no RP ID: the application parameter (bytes 32..<64 of both
            // APDUs' data) stands for it, and the whole data identifies the request.
            try collectPresence(operation, rpID: nil, context: context,
                                timeoutMilliseconds: configuration.u2fPresenceTimeoutMilliseconds,
                                subject: apdu.data, rpIDHash: Array(apdu.data[32..<64]))
        } catch {
            throw .conditionsNotSatisfied
        }
    }
}

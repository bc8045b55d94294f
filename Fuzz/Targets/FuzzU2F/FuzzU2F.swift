import CTAP
import FuzzSupport
import Authenticator

/// CTAP1/U2F APDUs (CTAPHID_MSG): register, authenticate (check, enforce, don't-enforce), version,
/// in short and extended encoding. Records: op ‖ length ‖ APDU; op 0x80 makes the body an
/// authenticate APDU for a seeded credential ID (so the key-handle path is reached), controls as
/// in the CTAP2 targets. Invariants: an answer ends in a status word; 0x9000 only for a
/// well-formed APDU (CLA 0, a known INS, register data exactly 64 bytes, authenticate at least
/// 65 + key handle); never a secret.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    var input = FuzzInput(data, size)
    let key = FuzzKey(setup: input.byte() | 0x04)
    var records = 0
    while !input.isAtEnd, records < 32 {
        records += 1
        let op = input.byte()
        var apdu = input.record() ?? []
        if key.control(op, apdu) { continue }
        if op == 0x80, let id = key.credentialIDs.last {
            // authenticate (INS 0x02), P1 from the body, extended length, challenge ‖ appID ‖ L ‖ handle
            let p1 = apdu.first ?? 0x03
            let rest = apdu.dropFirst()
            let payload = Array(rest.prefix(32)) + [UInt8](repeating: 0, count: max(0, 32 - rest.count))
                + SHA256Of(FuzzKey.rpID) + [UInt8(id.count)] + id
            apdu = [0x00, 0x02, p1, 0x00, 0x00, UInt8(payload.count >> 8), UInt8(payload.count & 0xFF)] + payload + [0x00, 0x00]
        }
        let response = key.authenticator.handleU2F(apdu, context: RequestContext(channel: key.channel))
        invariant(response.count >= 2, "no status word for \(hex(apdu))")
        let sw = Array(response.suffix(2))
        if sw == [0x90, 0x00] {
            invariant(apdu.count >= 4 && apdu[0] == 0, "success for a malformed APDU \(hex(apdu))")
            switch apdu[1] {
            case 0x01: invariant(response.count > 2 + 65, "register success without a key")
            case 0x02, 0x03: break
            default: invariant(false, "success for INS 0x\(hex([apdu[1]]))")
            }
        } else {
            invariant(response.count == 2, "data with error status \(hex(sw))")
        }
        for secret in key.secrets where occurs(secret, in: response) {
            invariant(false, "a secret in the U2F response to \(hex(apdu))")
        }
    }
    return 0
}

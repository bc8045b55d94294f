import FuzzSupport
import LinuxHID

/// The uhid broker's rules (UHIDBrokerPolicy): what any local user sends the root broker. Input:
/// a 4-byte uid, then events, each a 2-byte big-endian length and its bytes — the first as the
/// client's CREATE2, the rest as what it sends after. Invariants: the rules are total (refusals,
/// not traps); a created device is always Latchkey's (FIDO descriptor, USB 1209:4C4B) with the
/// phys stamped from the uid given, never the client's; only input reports and report replies
/// ever pass to the kernel.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let bytes = FuzzInput(data, size).bytes
    guard bytes.count >= 4 else { return 0 }
    let uid = bytes[0..<4].reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
    var events: [[UInt8]] = []
    var index = 4
    while index + 2 <= bytes.count {
        let length = Int(bytes[index]) << 8 | Int(bytes[index + 1])
        index += 2
        let end = min(bytes.count, index + length)
        events.append(Array(bytes[index..<end]))
        index = end
    }
    guard let first = events.first, let (created, name) = try? UHIDBrokerPolicy.create(from: first, uid: uid) else { return 0 }
    guard case let .create2(_, phys, uniq, bus, vendor, product, _, _, descriptor)? = try? UHIDEvent(decoding: created) else {
        invariant(false, "the broker's CREATE2 does not decode")
        return 0
    }
    let expected = String(decoding: Array("latchkey/uid=\(uid)/\(name)".utf8.prefix(63)), as: UTF8.self)
    invariant(phys == expected, "phys \(phys) for uid \(uid), name \(name)")
    invariant(uniq == "latchkey:" + name, "uniq \(uniq)")
    invariant(bus == 3 && vendor == 0x1209 && product == 0x4C4B, "device \(bus) \(vendor):\(product)")
    invariant(descriptor == UHIDDevice.fidoReportDescriptor, "a descriptor that is not the FIDO one")
    for event in events.dropFirst() {
        guard let passed = try? UHIDBrokerPolicy.relay(event) else { continue }
        switch try? UHIDEvent(decoding: passed) {
        case .input2?, .getReportReply?, .setReportReply?: break
        default: invariant(false, "the broker passed \(String(describing: try? UHIDEvent(decoding: passed)))")
        }
    }
    return 0
}

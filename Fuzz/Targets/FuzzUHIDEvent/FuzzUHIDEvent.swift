import FuzzSupport
import LinuxHID

/// The /dev/uhid event codec: every read from the kernel goes through `UHIDEvent(decoding:)`.
/// Invariants: decoding is total (errors, not traps); after one round (which normalises text
/// to what the fixed fields hold) decode(encode(e)) == e, and an event without text is
/// preserved from the first decode.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let bytes = FuzzInput(data, size).bytes
    guard let first = try? UHIDEvent(decoding: bytes) else { return 0 }
    let encoded = first.encoded()
    invariant(encoded.count == 4380, "encoded event is \(encoded.count) bytes")
    guard let second = try? UHIDEvent(decoding: encoded) else {
        invariant(false, "an encoded event does not decode: \(first)")
        return 0
    }
    if case .create2 = first {} else { invariant(second == first, "round trip changed \(first) into \(second)") }
    let third = try? UHIDEvent(decoding: second.encoded())
    invariant(third == second, "second round trip changed \(second)")
    return 0
}

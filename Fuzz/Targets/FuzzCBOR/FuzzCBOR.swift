import CBOR
import FuzzSupport

/// The CBOR decoder every request goes through. Invariants: what decodes re-encodes (canonical
/// CTAP2 encoding) to bytes that decode to the same value, and that encoding is a fixed point;
/// canonical input (which re-encodes to itself) is the same value both ways.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let bytes = FuzzInput(data, size).bytes
    _ = try? CBORDecoder.decodePrefix(bytes[...])
    guard let value = try? CBORDecoder.decode(bytes) else { return 0 }
    let encoded = value.encoded()
    guard let again = try? CBORDecoder.decode(encoded) else {
        invariant(false, "re-encoding of \(hex(bytes)) does not decode: \(hex(encoded))")
        return 0
    }
    invariant(again == value, "decode(encode(v)) != v for \(hex(bytes))")
    invariant(again.encoded() == encoded, "encoding is not a fixed point for \(hex(bytes))")
    if encoded == bytes { invariant(value.encoded() == bytes, "canonical input changed") }
    return 0
}

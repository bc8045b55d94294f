/// A PIN's length as CTAP 2.1 §6.5.1 counts it: Unicode code points of its UTF-8. Counted
/// straight from the bytes, never through a `String`: a String's storage cannot be wiped, so a
/// PIN made into one would outlive every wipe of the buffers it came from.
public enum PINText {
    /// The number of code points in `utf8`, or nil if it is not valid UTF-8 (overlong forms,
    /// surrogates and truncated sequences are invalid, as for `String(validating:)`).
    public static func codePointCount<Bytes: Collection<UInt8>>(ofUTF8 utf8: Bytes) -> Int? {
        var iterator = utf8.makeIterator()
        var decoder = Unicode.UTF8()
        var count = 0
        while true {
            switch decoder.decode(&iterator) {
            case .scalarValue: count += 1
            case .emptyInput: return count
            case .error: return nil
            }
        }
    }
}

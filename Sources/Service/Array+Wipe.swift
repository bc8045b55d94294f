extension Array where Element == UInt8 {
    /// Overwrite a transient copy of a PIN, PIN hash or token before it is released.
    mutating func wipe() {
        for index in indices { self[index] = 0 }
    }
}

extension Array where Element == UInt8 {
    /// Overwrite a transient copy of secret bytes before it is released.
    mutating func wipe() {
        for index in indices { self[index] = 0 }
    }
}

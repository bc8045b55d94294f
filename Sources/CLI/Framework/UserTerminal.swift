/// A terminal to ask on: yes/no questions and secrets read without echo.
public protocol UserTerminal: Sendable {
    /// true when the answer is "y" or "yes".
    func confirm(_ prompt: String) -> Bool
    /// One line typed without echo, newline removed; nil at end of input. The caller wipes it.
    func readSecret(_ prompt: String) -> [UInt8]?
}

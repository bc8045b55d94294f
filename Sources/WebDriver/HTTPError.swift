/// Why a message could not be read: the status a server answers a bad request with, and what
/// was wrong.
public struct HTTPError: Error, Equatable, Sendable, CustomStringConvertible {
    public var status: Int
    public var message: String
    public var description: String { message }

    public init(_ status: Int, _ message: String) {
        self.status = status
        self.message = message
    }
}

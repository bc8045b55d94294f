/// Identifies one connection to the device: each client of the socket
/// transport is its own connection (like its own HID handle); the uhid
/// transport has a single connection, 0. Replies, errors and keepalives go to
/// the connection that sent the request.
public typealias ConnectionID = Int

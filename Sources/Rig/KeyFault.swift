/// A fault a test rig injects into one request (`injectFault`): what a broken or hostile key
/// does to its client, on the real HID path. `RigFaults` chooses it; `FaultInjectingHandler`
/// applies answers and delays, `FaultyTransport` what happens to the response's reports.
enum KeyFault: Sendable, Equatable {
    /// Answer at once with these bytes (a CTAP2 status; a U2F status word) without running the
    /// request.
    case answer([UInt8])
    /// Run the request after this many milliseconds (KEEPALIVE PROCESSING meanwhile).
    case delay(milliseconds: UInt64)
    /// Run the request, send no response: the client's timeout is what it meets.
    case drop
    /// Send only the first packet of the response (a key unplugged mid-message).
    case truncate
    /// Send this many KEEPALIVE packets just before the response.
    case keepaliveFlood(count: Int)
}

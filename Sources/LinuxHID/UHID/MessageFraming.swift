/// Just enough CTAPHID framing, read off raw UHID_OUTPUT events, to know whether the client is
/// in the middle of writing a message (so `UHIDDevice` keeps reading instead of returning to
/// poll). A scheduling hint only: the CTAPHID layer decides what the reports mean.
struct MessageFraming {
    private var remaining = 0

    var expectsMore: Bool { remaining > 0 }

    /// Notes one 64-byte output report from the client.
    mutating func observe(report: [UInt8]) {
        guard report.count == 64 else { return }
        if report[4] & 0x80 != 0 {   // initialization packet: CID(4) CMD BCNTH BCNTL data(57)
            remaining = max(0, (Int(report[5]) << 8 | Int(report[6])) - 57)
        } else {                     // continuation packet: CID(4) SEQ data(59)
            remaining = max(0, remaining - 59)
        }
    }
}

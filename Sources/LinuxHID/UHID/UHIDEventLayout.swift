/// `struct uhid_event` from <linux/uhid.h>, written out by hand: the Swift
/// codec uses only these numbers, and LinuxHIDTests checks each one against
/// the C compiler's sizeof/offsetof (`lk_uhid_layout()` in CShims).
///
/// ```
/// struct uhid_event {                       // __attribute__((packed))
///     __u32 type;                           // offset 0
///     union { ... } u;                      // offset 4; 4376 bytes (4372 of
/// };                                        // create2, rounded up to the 8-byte
///                                           // alignment of uhid_start_req)
/// ```
/// All integers are in host byte order (the kernel reads the struct as is).
enum UHIDEventLayout {
    /// sizeof(struct uhid_event): every event is written at this size.
    static let eventSize = 4380
    static let typeOffset = 0
    static let unionOffset = 4
    /// UHID_DATA_MAX: capacity of the data arrays.
    static let dataCapacity = 4096
    /// HID_MAX_DESCRIPTOR_SIZE: capacity of create2.rd_data.
    static let descriptorCapacity = 4096
    /// BUS_USB from <linux/input.h>.
    static let busUSB: UInt16 = 0x03

    /// enum uhid_event_type (the legacy values 0, 7 and 8 are never used here).
    enum EventType: UInt32 {
        case destroy = 1          // UHID_DESTROY
        case start = 2            // UHID_START
        case stop = 3             // UHID_STOP
        case open = 4             // UHID_OPEN
        case close = 5            // UHID_CLOSE
        case output = 6           // UHID_OUTPUT
        case getReport = 9        // UHID_GET_REPORT
        case getReportReply = 10  // UHID_GET_REPORT_REPLY
        case create2 = 11         // UHID_CREATE2
        case input2 = 12          // UHID_INPUT2
        case setReport = 13       // UHID_SET_REPORT
        case setReportReply = 14  // UHID_SET_REPORT_REPLY
    }

    /// enum uhid_report_type.
    enum ReportType: UInt8 {
        case feature = 0          // UHID_FEATURE_REPORT
        case output = 1           // UHID_OUTPUT_REPORT
        case input = 2            // UHID_INPUT_REPORT
    }

    /// struct uhid_create2_req
    enum Create2 {
        static let name = 4                // __u8 name[128]
        static let nameCapacity = 128
        static let phys = 132              // __u8 phys[64]
        static let physCapacity = 64
        static let uniq = 196              // __u8 uniq[64]
        static let uniqCapacity = 64
        static let descriptorSize = 260    // __u16 rd_size
        static let bus = 262               // __u16 bus
        static let vendor = 264            // __u32 vendor
        static let product = 268           // __u32 product
        static let version = 272           // __u32 version
        static let country = 276           // __u32 country
        static let descriptor = 280        // __u8 rd_data[HID_MAX_DESCRIPTOR_SIZE]
    }

    /// struct uhid_start_req
    enum Start {
        static let flags = 4               // __u64 dev_flags
    }

    /// struct uhid_output_req (note: size and rtype come after the data)
    enum Output {
        static let data = 4                // __u8 data[UHID_DATA_MAX]
        static let size = 4100             // __u16 size
        static let reportType = 4102       // __u8 rtype
    }

    /// struct uhid_input2_req
    enum Input2 {
        static let size = 4                // __u16 size
        static let data = 6                // __u8 data[UHID_DATA_MAX]
    }

    /// struct uhid_get_report_req
    enum GetReport {
        static let id = 4                  // __u32 id
        static let reportNumber = 8        // __u8 rnum
        static let reportType = 9          // __u8 rtype
    }

    /// struct uhid_get_report_reply_req
    enum GetReportReply {
        static let id = 4                  // __u32 id
        static let error = 8               // __u16 err
        static let size = 10               // __u16 size
        static let data = 12               // __u8 data[UHID_DATA_MAX]
    }

    /// struct uhid_set_report_req
    enum SetReport {
        static let id = 4                  // __u32 id
        static let reportNumber = 8        // __u8 rnum
        static let reportType = 9          // __u8 rtype
        static let size = 10               // __u16 size
        static let data = 12               // __u8 data[UHID_DATA_MAX]
    }

    /// struct uhid_set_report_reply_req
    enum SetReportReply {
        static let id = 4                  // __u32 id
        static let error = 8               // __u16 err
    }
}

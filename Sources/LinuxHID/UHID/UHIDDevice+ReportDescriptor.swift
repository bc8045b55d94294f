extension UHIDDevice {
    /// The HID report descriptor of a FIDO authenticator (CTAP 2.1, USB HID
    /// transport, "HID report descriptor and device discovery"): usage page
    /// 0xF1D0, usage 0x01, one 64-byte input and one 64-byte output report,
    /// no report IDs. Clients find FIDO devices by this usage page and usage.
    public static let fidoReportDescriptor: [UInt8] = [
        0x06, 0xD0, 0xF1,  // Usage Page (FIDO Alliance, 0xF1D0)
        0x09, 0x01,        // Usage (CTAPHID, 0x01)
        0xA1, 0x01,        // Collection (Application)
        0x09, 0x20,        //   Usage (Data In, 0x20)
        0x15, 0x00,        //   Logical Minimum (0)
        0x26, 0xFF, 0x00,  //   Logical Maximum (255)
        0x75, 0x08,        //   Report Size (8 bits)
        0x95, 0x40,        //   Report Count (64)
        0x81, 0x02,        //   Input (Data, Variable, Absolute)
        0x09, 0x21,        //   Usage (Data Out, 0x21)
        0x15, 0x00,        //   Logical Minimum (0)
        0x26, 0xFF, 0x00,  //   Logical Maximum (255)
        0x75, 0x08,        //   Report Size (8 bits)
        0x95, 0x40,        //   Report Count (64)
        0x91, 0x02,        //   Output (Data, Variable, Absolute)
        0xC0,              // End Collection
    ]
}

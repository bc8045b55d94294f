import CShims
@testable import LinuxHID
import XCTest

/// The Swift codec's hand-written layout against the C compiler's view of
/// <linux/uhid.h> (lk_uhid_layout in CShims).
final class UHIDEventLayoutTests: XCTestCase {
    private let c = lk_uhid_layout()
    private typealias Layout = UHIDEventLayout

    func testEventSizeMatchesKernelHeader() {
        XCTAssertEqual(c.event_size, 4380)
        XCTAssertEqual(Layout.eventSize, Int(c.event_size))
        XCTAssertEqual(Layout.typeOffset, Int(c.type_offset))
        XCTAssertEqual(Layout.unionOffset, Int(c.union_offset))
        XCTAssertEqual(Layout.dataCapacity, Int(c.data_max))
        XCTAssertEqual(Layout.descriptorCapacity, Int(c.max_descriptor_size))
        XCTAssertEqual(UInt32(Layout.busUSB), c.bus_usb)
    }

    func testCreate2OffsetsMatchKernelHeader() {
        XCTAssertEqual(Layout.Create2.name, Int(c.create2_name))
        XCTAssertEqual(Layout.Create2.nameCapacity, Int(c.create2_name_size))
        XCTAssertEqual(Layout.Create2.phys, Int(c.create2_phys))
        XCTAssertEqual(Layout.Create2.physCapacity, Int(c.create2_phys_size))
        XCTAssertEqual(Layout.Create2.uniq, Int(c.create2_uniq))
        XCTAssertEqual(Layout.Create2.uniqCapacity, Int(c.create2_uniq_size))
        XCTAssertEqual(Layout.Create2.descriptorSize, Int(c.create2_rd_size))
        XCTAssertEqual(Layout.Create2.bus, Int(c.create2_bus))
        XCTAssertEqual(Layout.Create2.vendor, Int(c.create2_vendor))
        XCTAssertEqual(Layout.Create2.product, Int(c.create2_product))
        XCTAssertEqual(Layout.Create2.version, Int(c.create2_version))
        XCTAssertEqual(Layout.Create2.country, Int(c.create2_country))
        XCTAssertEqual(Layout.Create2.descriptor, Int(c.create2_rd_data))
        XCTAssertEqual(Layout.descriptorCapacity, Int(c.create2_rd_data_size))
    }

    func testOtherRequestOffsetsMatchKernelHeader() {
        XCTAssertEqual(Layout.Start.flags, Int(c.start_dev_flags))

        XCTAssertEqual(Layout.Output.data, Int(c.output_data))
        XCTAssertEqual(Layout.dataCapacity, Int(c.output_data_size))
        XCTAssertEqual(Layout.Output.size, Int(c.output_size))
        XCTAssertEqual(Layout.Output.reportType, Int(c.output_rtype))

        XCTAssertEqual(Layout.Input2.size, Int(c.input2_size))
        XCTAssertEqual(Layout.Input2.data, Int(c.input2_data))
        XCTAssertEqual(Layout.dataCapacity, Int(c.input2_data_size))

        XCTAssertEqual(Layout.GetReport.id, Int(c.get_report_id))
        XCTAssertEqual(Layout.GetReport.reportNumber, Int(c.get_report_rnum))
        XCTAssertEqual(Layout.GetReport.reportType, Int(c.get_report_rtype))

        XCTAssertEqual(Layout.GetReportReply.id, Int(c.get_report_reply_id))
        XCTAssertEqual(Layout.GetReportReply.error, Int(c.get_report_reply_err))
        XCTAssertEqual(Layout.GetReportReply.size, Int(c.get_report_reply_size))
        XCTAssertEqual(Layout.GetReportReply.data, Int(c.get_report_reply_data))
        XCTAssertEqual(Layout.dataCapacity, Int(c.get_report_reply_data_size))

        XCTAssertEqual(Layout.SetReport.id, Int(c.set_report_id))
        XCTAssertEqual(Layout.SetReport.reportNumber, Int(c.set_report_rnum))
        XCTAssertEqual(Layout.SetReport.reportType, Int(c.set_report_rtype))
        XCTAssertEqual(Layout.SetReport.size, Int(c.set_report_size))
        XCTAssertEqual(Layout.SetReport.data, Int(c.set_report_data))
        XCTAssertEqual(Layout.dataCapacity, Int(c.set_report_data_size))

        XCTAssertEqual(Layout.SetReportReply.id, Int(c.set_report_reply_id))
        XCTAssertEqual(Layout.SetReportReply.error, Int(c.set_report_reply_err))
    }

    func testEventTypeNumbersMatchKernelHeader() {
        XCTAssertEqual(Layout.EventType.destroy.rawValue, c.type_destroy)
        XCTAssertEqual(Layout.EventType.start.rawValue, c.type_start)
        XCTAssertEqual(Layout.EventType.stop.rawValue, c.type_stop)
        XCTAssertEqual(Layout.EventType.open.rawValue, c.type_open)
        XCTAssertEqual(Layout.EventType.close.rawValue, c.type_close)
        XCTAssertEqual(Layout.EventType.output.rawValue, c.type_output)
        XCTAssertEqual(Layout.EventType.getReport.rawValue, c.type_get_report)
        XCTAssertEqual(Layout.EventType.getReportReply.rawValue, c.type_get_report_reply)
        XCTAssertEqual(Layout.EventType.create2.rawValue, c.type_create2)
        XCTAssertEqual(Layout.EventType.input2.rawValue, c.type_input2)
        XCTAssertEqual(Layout.EventType.setReport.rawValue, c.type_set_report)
        XCTAssertEqual(Layout.EventType.setReportReply.rawValue, c.type_set_report_reply)
        XCTAssertEqual(UInt32(Layout.ReportType.feature.rawValue), c.report_type_feature)
        XCTAssertEqual(UInt32(Layout.ReportType.output.rawValue), c.report_type_output)
        XCTAssertEqual(UInt32(Layout.ReportType.input.rawValue), c.report_type_input)
    }
}

// LinuxHID's C shims: <linux/uhid.h> layout measured by the compiler (see
// latchkey_uhid_shims.h for why).
#include "latchkey_uhid_shims.h"

#include <string.h>

#include <linux/input.h>
#include <linux/uhid.h>

#define LK_OFFSET(member) offsetof(struct uhid_event, member)
#define LK_SIZE(member) sizeof(((struct uhid_event *)0)->member)

struct lk_uhid_layout lk_uhid_layout(void) {
    struct lk_uhid_layout layout = {
        .event_size = sizeof(struct uhid_event),
        .type_offset = LK_OFFSET(type),
        .union_offset = LK_OFFSET(u),

        .create2_name = LK_OFFSET(u.create2.name),
        .create2_name_size = LK_SIZE(u.create2.name),
        .create2_phys = LK_OFFSET(u.create2.phys),
        .create2_phys_size = LK_SIZE(u.create2.phys),
        .create2_uniq = LK_OFFSET(u.create2.uniq),
        .create2_uniq_size = LK_SIZE(u.create2.uniq),
        .create2_rd_size = LK_OFFSET(u.create2.rd_size),
        .create2_bus = LK_OFFSET(u.create2.bus),
        .create2_vendor = LK_OFFSET(u.create2.vendor),
        .create2_product = LK_OFFSET(u.create2.product),
        .create2_version = LK_OFFSET(u.create2.version),
        .create2_country = LK_OFFSET(u.create2.country),
        .create2_rd_data = LK_OFFSET(u.create2.rd_data),
        .create2_rd_data_size = LK_SIZE(u.create2.rd_data),

        .start_dev_flags = LK_OFFSET(u.start.dev_flags),

        .output_data = LK_OFFSET(u.output.data),
        .output_data_size = LK_SIZE(u.output.data),
        .output_size = LK_OFFSET(u.output.size),
        .output_rtype = LK_OFFSET(u.output.rtype),

        .input2_size = LK_OFFSET(u.input2.size),
        .input2_data = LK_OFFSET(u.input2.data),
        .input2_data_size = LK_SIZE(u.input2.data),

        .get_report_id = LK_OFFSET(u.get_report.id),
        .get_report_rnum = LK_OFFSET(u.get_report.rnum),
        .get_report_rtype = LK_OFFSET(u.get_report.rtype),

        .get_report_reply_id = LK_OFFSET(u.get_report_reply.id),
        .get_report_reply_err = LK_OFFSET(u.get_report_reply.err),
        .get_report_reply_size = LK_OFFSET(u.get_report_reply.size),
        .get_report_reply_data = LK_OFFSET(u.get_report_reply.data),
        .get_report_reply_data_size = LK_SIZE(u.get_report_reply.data),

        .set_report_id = LK_OFFSET(u.set_report.id),
        .set_report_rnum = LK_OFFSET(u.set_report.rnum),
        .set_report_rtype = LK_OFFSET(u.set_report.rtype),
        .set_report_size = LK_OFFSET(u.set_report.size),
        .set_report_data = LK_OFFSET(u.set_report.data),
        .set_report_data_size = LK_SIZE(u.set_report.data),

        .set_report_reply_id = LK_OFFSET(u.set_report_reply.id),
        .set_report_reply_err = LK_OFFSET(u.set_report_reply.err),

        .type_destroy = UHID_DESTROY,
        .type_start = UHID_START,
        .type_stop = UHID_STOP,
        .type_open = UHID_OPEN,
        .type_close = UHID_CLOSE,
        .type_output = UHID_OUTPUT,
        .type_get_report = UHID_GET_REPORT,
        .type_get_report_reply = UHID_GET_REPORT_REPLY,
        .type_create2 = UHID_CREATE2,
        .type_input2 = UHID_INPUT2,
        .type_set_report = UHID_SET_REPORT,
        .type_set_report_reply = UHID_SET_REPORT_REPLY,

        .report_type_feature = UHID_FEATURE_REPORT,
        .report_type_output = UHID_OUTPUT_REPORT,
        .report_type_input = UHID_INPUT_REPORT,
        .data_max = UHID_DATA_MAX,
        .max_descriptor_size = HID_MAX_DESCRIPTOR_SIZE,
        .bus_usb = BUS_USB,
    };
    return layout;
}

// C shims of the LinuxHID module: the <linux/uhid.h> layout measured by the C
// compiler (the GNU-only socket calls are CSystemIO's).
// Standalone: uses only <stddef.h>/<stdint.h>, so the CShims umbrella does not
// pull kernel or GNU headers into every Swift module that imports CShims.
#ifndef LATCHKEY_UHID_SHIMS_H
#define LATCHKEY_UHID_SHIMS_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/// Sizes, offsets and constants of `struct uhid_event` as the kernel header
/// defines them. Offsets are from the start of `struct uhid_event` (so they
/// include the 4-byte `type` in front of the union); `*_size` fields are the
/// sizes of the fixed arrays.
struct lk_uhid_layout {
    size_t event_size;              // sizeof(struct uhid_event)
    size_t type_offset;
    size_t union_offset;

    size_t create2_name, create2_name_size;
    size_t create2_phys, create2_phys_size;
    size_t create2_uniq, create2_uniq_size;
    size_t create2_rd_size;
    size_t create2_bus;
    size_t create2_vendor;
    size_t create2_product;
    size_t create2_version;
    size_t create2_country;
    size_t create2_rd_data, create2_rd_data_size;

    size_t start_dev_flags;

    size_t output_data, output_data_size;
    size_t output_size;
    size_t output_rtype;

    size_t input2_size;
    size_t input2_data, input2_data_size;

    size_t get_report_id;
    size_t get_report_rnum;
    size_t get_report_rtype;

    size_t get_report_reply_id;
    size_t get_report_reply_err;
    size_t get_report_reply_size;
    size_t get_report_reply_data, get_report_reply_data_size;

    size_t set_report_id;
    size_t set_report_rnum;
    size_t set_report_rtype;
    size_t set_report_size;
    size_t set_report_data, set_report_data_size;

    size_t set_report_reply_id;
    size_t set_report_reply_err;

    // enum uhid_event_type
    uint32_t type_destroy, type_start, type_stop, type_open, type_close,
             type_output, type_get_report, type_get_report_reply,
             type_create2, type_input2, type_set_report, type_set_report_reply;
    // enum uhid_report_type
    uint32_t report_type_feature, report_type_output, report_type_input;
    uint32_t data_max;              // UHID_DATA_MAX
    uint32_t max_descriptor_size;   // HID_MAX_DESCRIPTOR_SIZE
    uint32_t bus_usb;               // BUS_USB from <linux/input.h>
};

/// The layout of `struct uhid_event` on this machine's kernel headers.
/// Why a shim: offsetof/sizeof of a packed kernel struct and the enum/macro
/// constants (UHID_DATA_MAX, HID_MAX_DESCRIPTOR_SIZE, BUS_USB) are only
/// available to C; LinuxHID's tests compare its pure-Swift codec against this.
struct lk_uhid_layout lk_uhid_layout(void);

#ifdef __cplusplus
}
#endif

#endif

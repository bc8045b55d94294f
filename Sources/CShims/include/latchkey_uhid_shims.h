// C shims of the LinuxHID module: the <linux/uhid.h> layout measured by the C
// compiler, and the few Linux calls Swift's Glibc module does not import.
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

/// accept4(fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK): −1 and errno on failure.
/// Why a shim: accept4 is declared only under _GNU_SOURCE, which Swift's Glibc
/// module does not define; accept + fcntl would leave a window in which a
/// concurrent fork/exec inherits the descriptor.
int lk_uhid_accept4_cloexec_nonblock(int fd);

/// eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC): −1 and errno on failure.
/// Why a shim: <sys/eventfd.h> is not part of Swift's Glibc module.
int lk_uhid_eventfd_cloexec_nonblock(void);

/// POLLRDHUP (peer shut down writing), for poll(2) on sockets.
/// Why a shim: <poll.h> defines it only under _GNU_SOURCE.
short lk_uhid_pollrdhup(void);

/// sendmmsg(2) of `count` packets of `size` bytes each, stored back to back at `packets`:
/// the number sent (possibly fewer than `count`), or −1 and errno if none was.
/// Why a shim: sendmmsg and struct mmsghdr are declared only under _GNU_SOURCE. One call
/// instead of one per 64-byte report: on the key's hot path the syscalls cost more than the
/// work between them (latchkey-bench, "socket" section).
int lk_send_packets(int fd, const uint8_t *packets, size_t size, unsigned count, int flags);

/// recvmmsg(2) of up to `count` packets into consecutive slots of `capacity` bytes at
/// `buffer`, with MSG_TRUNC so `sizes[i]` is each packet's true length (a longer packet is
/// cut to `capacity`): the number received, or −1 and errno.
/// Why a shim: as above, recvmmsg is GNU-only.
int lk_receive_packets(int fd, uint8_t *buffer, size_t capacity, unsigned count, size_t *sizes, int flags);

#ifdef __cplusplus
}
#endif

#endif

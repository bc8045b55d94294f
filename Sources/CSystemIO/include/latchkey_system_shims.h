// C shims of the SystemIO module: the few Linux calls Swift's Glibc module does
// not import (each declared only under _GNU_SOURCE or in a header outside the
// Glibc module). Standalone: <stddef.h>/<stdint.h> only, so no GNU or kernel
// header reaches the Swift modules above.
#ifndef LATCHKEY_SYSTEM_SHIMS_H
#define LATCHKEY_SYSTEM_SHIMS_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/// accept4(fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK): −1 and errno on failure.
/// Why a shim: accept4 is declared only under _GNU_SOURCE, which Swift's Glibc
/// module does not define; accept + fcntl would leave a window in which a
/// concurrent fork/exec inherits the descriptor.
int lk_accept4_cloexec_nonblock(int fd);

/// getsockopt(fd, SOL_SOCKET, SO_PEERCRED): the peer's uid and pid of a connected UNIX socket
/// (for a client, those of the process that called listen(2); for a server, those of the
/// process that called connect(2)). 0, or −1 and errno.
/// Why a shim: struct ucred is declared only under _GNU_SOURCE.
int lk_peer_credentials(int fd, uint32_t *uid, int32_t *pid);

/// getxattr(path, name, buffer, size): the attribute's length, or −1 and errno.
/// Why a shim: <sys/xattr.h> is not part of Swift's Glibc module.
long lk_getxattr(const char *path, const char *name, void *buffer, size_t size);

/// pipe2(fds, O_CLOEXEC): 0, or −1 and errno.
/// Why a shim: pipe2 is declared only under _GNU_SOURCE; pipe + fcntl would leave a window in
/// which a concurrent spawn inherits the pipe (and its reader never sees end of file).
int lk_pipe_cloexec(int fds[2]);

/// eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC): −1 and errno on failure.
/// Why a shim: <sys/eventfd.h> is not part of Swift's Glibc module.
int lk_eventfd_cloexec_nonblock(void);

/// POLLRDHUP (peer shut down writing), for poll(2) on sockets.
/// Why a shim: <poll.h> defines it only under _GNU_SOURCE.
short lk_pollrdhup(void);

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

/// No core dump of this process, ever: RLIMIT_CORE 0 (soft and hard) and PR_SET_DUMPABLE 0
/// (which also keeps other processes of the user from ptrace-attaching or reading its
/// memory through /proc). 0, or −1 and errno.
/// Why a shim: prctl(2) is variadic, which Swift cannot call.
int lk_disable_core_dumps(void);

/// prctl(PR_GET_DUMPABLE): 1 if dumpable, 0 if not, −1 and errno.
int lk_is_dumpable(void);

#ifdef __cplusplus
}
#endif

#endif

// SystemIO's C shims: GNU-only calls (see latchkey_system_shims.h for why each exists).
#ifndef _GNU_SOURCE
#define _GNU_SOURCE   // accept4, struct ucred, pipe2, POLLRDHUP, sendmmsg, recvmmsg
#endif
#include "latchkey_system_shims.h"

#include <poll.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/xattr.h>
#include <fcntl.h>
#include <unistd.h>

int lk_accept4_cloexec_nonblock(int fd) {
    return accept4(fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
}

int lk_peer_credentials(int fd, uint32_t *uid, int32_t *pid) {
    struct ucred credentials;
    socklen_t length = sizeof credentials;
    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &credentials, &length) != 0) return -1;
    *uid = credentials.uid;
    *pid = credentials.pid;
    return 0;
}

long lk_getxattr(const char *path, const char *name, void *buffer, size_t size) {
    return (long)getxattr(path, name, buffer, size);
}

int lk_pipe_cloexec(int fds[2]) {
    return pipe2(fds, O_CLOEXEC);
}

int lk_eventfd_cloexec_nonblock(void) {
    return eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
}

short lk_pollrdhup(void) {
    return POLLRDHUP;
}

enum { LK_MAX_BATCH = 64 };

int lk_send_packets(int fd, const uint8_t *packets, size_t size, unsigned count, int flags) {
    if (count > LK_MAX_BATCH) count = LK_MAX_BATCH;
    struct mmsghdr messages[LK_MAX_BATCH];
    struct iovec vectors[LK_MAX_BATCH];
    memset(messages, 0, sizeof(messages[0]) * count);
    for (unsigned i = 0; i < count; i++) {
        vectors[i].iov_base = (void *)(packets + (size_t)i * size);
        vectors[i].iov_len = size;
        messages[i].msg_hdr.msg_iov = &vectors[i];
        messages[i].msg_hdr.msg_iovlen = 1;
    }
    return sendmmsg(fd, messages, count, flags);
}

int lk_receive_packets(int fd, uint8_t *buffer, size_t capacity, unsigned count, size_t *sizes, int flags) {
    if (count > LK_MAX_BATCH) count = LK_MAX_BATCH;
    struct mmsghdr messages[LK_MAX_BATCH];
    struct iovec vectors[LK_MAX_BATCH];
    memset(messages, 0, sizeof(messages[0]) * count);
    for (unsigned i = 0; i < count; i++) {
        vectors[i].iov_base = buffer + (size_t)i * capacity;
        vectors[i].iov_len = capacity;
        messages[i].msg_hdr.msg_iov = &vectors[i];
        messages[i].msg_hdr.msg_iovlen = 1;
    }
    int received = recvmmsg(fd, messages, count, flags | MSG_TRUNC, NULL);
    for (int i = 0; i < received; i++) sizes[i] = messages[i].msg_len;
    return received;
}

int lk_disable_core_dumps(void) {
    struct rlimit none = { 0, 0 };
    if (setrlimit(RLIMIT_CORE, &none) != 0) return -1;
    return prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
}

int lk_is_dumpable(void) { return prctl(PR_GET_DUMPABLE, 0, 0, 0, 0); }

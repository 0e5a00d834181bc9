#ifndef HOTPATCH_CNETWORK_SHIM_H
#define HOTPATCH_CNETWORK_SHIM_H
// What patchd's own HTTP/1.1 transport needs from the system: epoll, sockets, and OpenSSL's
// libssl for HTTPS. Only headers and static inline wrappers for what Swift cannot call
// (macros over SSL_CTX_ctrl, the epoll_data union).
#include <sys/types.h>
#include <sys/socket.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <arpa/inet.h>
#include <fcntl.h>
#include <unistd.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <stdint.h>
#include <errno.h>
#include <string.h>
#include <openssl/ssl.h>
#include <openssl/err.h>
#include <openssl/pem.h>

/// Lowers the calling thread's scheduling priority to `nice` (a thread is a task on Linux, so
/// this touches it alone): patchd's background writers run under the transport threads,
/// which then win the CPU on a busy machine. It also asks for a scheduler slice of
/// `slice_ns` (SCHED_OTHER's sched_runtime, Linux 6.12+): the thread keeps its share of the
/// CPU, but a transport thread woken meanwhile preempts it within that slice instead of
/// after a whole default one (about a millisecond: the check path's p99 beside a report
/// flood). A kernel that refuses the request gets the nice value alone. 0 on success.
static inline int hp_lower_thread_priority(int nice, unsigned long long slice_ns) {
    struct {
        uint32_t size, policy;
        uint64_t flags;
        int32_t nice;
        uint32_t priority;
        uint64_t runtime, deadline, period;
    } attr;
    memset(&attr, 0, sizeof attr);
    attr.size = sizeof attr;
    attr.policy = 0;  // SCHED_OTHER
    attr.nice = nice;
    attr.runtime = slice_ns;
    if (syscall(SYS_sched_setattr, 0, &attr, 0) == 0) return 0;
    return setpriority(PRIO_PROCESS, (id_t)gettid(), nice);
}

/// Names the calling thread for ps, top and perf (the kernel keeps 15 bytes): Foundation's
/// Thread.name does not reach the kernel on Linux. (prctl: pthread_setname_np needs
/// _GNU_SOURCE, which a module header cannot set reliably.)
static inline void hp_name_thread(const char *name) {
    prctl(PR_SET_NAME, (unsigned long)name, 0, 0, 0);
}

/// EPOLL_CTL_ADD or EPOLL_CTL_MOD with the descriptor as the event's data.
static inline int hp_epoll_set(int epfd, int op, int fd, uint32_t events) {
    struct epoll_event ev;
    memset(&ev, 0, sizeof ev);
    ev.events = events;
    ev.data.fd = fd;
    return epoll_ctl(epfd, op, fd, &ev);
}

static inline int hp_epoll_del(int epfd, int fd) {
    return epoll_ctl(epfd, EPOLL_CTL_DEL, fd, NULL);
}

/// Waits for events; writes the ready descriptors and their event bits to fds/events.
static inline int hp_epoll_wait(int epfd, int *fds, uint32_t *events, int max, int timeout_ms) {
    struct epoll_event ready[256];
    if (max > 256) max = 256;
    int n = epoll_wait(epfd, ready, max, timeout_ms);
    for (int i = 0; i < n; i++) { fds[i] = ready[i].data.fd; events[i] = ready[i].events; }
    return n;
}

static inline int hp_errno(void) { return errno; }

/// Fills `out` with the socket address of a numeric IPv4 or IPv6 host and a port; returns
/// its family (AF_INET, AF_INET6) and sets `*length`, or -1 for anything else (no names).
static inline int hp_socket_address(const char *host, uint16_t port, struct sockaddr_storage *out, socklen_t *length) {
    memset(out, 0, sizeof *out);
    struct sockaddr_in *v4 = (struct sockaddr_in *)out;
    if (inet_pton(AF_INET, host, &v4->sin_addr) == 1) {
        v4->sin_family = AF_INET;
        v4->sin_port = htons(port);
        *length = sizeof *v4;
        return AF_INET;
    }
    struct sockaddr_in6 *v6 = (struct sockaddr_in6 *)out;
    if (inet_pton(AF_INET6, host, &v6->sin6_addr) == 1) {
        v6->sin6_family = AF_INET6;
        v6->sin6_port = htons(port);
        *length = sizeof *v6;
        return AF_INET6;
    }
    return -1;
}

/// accept(2) returning a non-blocking, close-on-exec descriptor (accept4 needs _GNU_SOURCE,
/// which a module header cannot set reliably).
static inline int hp_accept(int listener, struct sockaddr *address, socklen_t *length) {
    int fd = accept(listener, address, length);
    if (fd < 0) return fd;
    int flags = fcntl(fd, F_GETFL, 0);
    if (flags < 0 || fcntl(fd, F_SETFL, flags | O_NONBLOCK) < 0 || fcntl(fd, F_SETFD, FD_CLOEXEC) < 0) {
        close(fd);
        errno = EAGAIN;
        return -1;
    }
    return fd;
}

static inline long hp_ssl_ctx_set_mode(SSL_CTX *ctx, long mode) { return SSL_CTX_set_mode(ctx, mode); }
static inline long hp_ssl_ctx_set_min_tls12(SSL_CTX *ctx) { return SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION); }
static inline long hp_ssl_ctx_add_extra_chain_cert(SSL_CTX *ctx, X509 *cert) { return SSL_CTX_add_extra_chain_cert(ctx, cert); }
#endif

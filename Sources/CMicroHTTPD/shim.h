#ifndef HOTPATCH_CMICROHTTPD_SHIM_H
#define HOTPATCH_CMICROHTTPD_SHIM_H
#include <sys/types.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <stdint.h>
#include <stdarg.h>
#include <string.h>
#include <strings.h>
#include <microhttpd.h>

// MHD_start_daemon, MHD_get_connection_info and MHD_get_daemon_info are variadic, which
// Swift cannot call; these fixed-signature wrappers are all the Swift side uses.

struct hp_mhd_config {
    unsigned int flags;
    const struct sockaddr *address;
    unsigned int thread_pool_size;
    unsigned int connection_limit;
    unsigned int connection_timeout;
    size_t connection_memory_limit;
    unsigned int per_ip_connection_limit;
    const char *tls_key_pem;   /* NULL: plain HTTP */
    const char *tls_cert_pem;
    size_t (*unescape)(void *cls, struct MHD_Connection *c, char *s);
};

static inline struct MHD_Daemon *hp_mhd_start(const struct hp_mhd_config *c,
                                              MHD_AccessHandlerCallback handler, void *handler_cls,
                                              MHD_RequestCompletedCallback completed, void *completed_cls) {
    int tls = c->tls_key_pem != NULL && c->tls_cert_pem != NULL;
    struct MHD_OptionItem options[] = {
        { MHD_OPTION_SOCK_ADDR, 0, (void *)c->address },
        { MHD_OPTION_NOTIFY_COMPLETED, (intptr_t)completed, completed_cls },
        { MHD_OPTION_THREAD_POOL_SIZE, c->thread_pool_size, NULL },
        { MHD_OPTION_CONNECTION_LIMIT, c->connection_limit, NULL },
        { MHD_OPTION_CONNECTION_TIMEOUT, c->connection_timeout, NULL },
        { MHD_OPTION_CONNECTION_MEMORY_LIMIT, (intptr_t)c->connection_memory_limit, NULL },
        { MHD_OPTION_PER_IP_CONNECTION_LIMIT, c->per_ip_connection_limit, NULL },
        { MHD_OPTION_UNESCAPE_CALLBACK, (intptr_t)c->unescape, NULL },
        { tls ? MHD_OPTION_HTTPS_MEM_KEY : MHD_OPTION_END, 0, (void *)c->tls_key_pem },
        { tls ? MHD_OPTION_HTTPS_MEM_CERT : MHD_OPTION_END, 0, (void *)c->tls_cert_pem },
        { MHD_OPTION_END, 0, NULL },
    };
    return MHD_start_daemon(c->flags | (tls ? MHD_USE_TLS : 0), 0, NULL, NULL, handler, handler_cls,
                            MHD_OPTION_ARRAY, options, MHD_OPTION_END);
}

/// The port the daemon is bound to (useful after binding port 0), or 0.
static inline uint16_t hp_mhd_bound_port(struct MHD_Daemon *d) {
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT);
    return info ? info->port : 0;
}

static inline unsigned int hp_mhd_current_connections(struct MHD_Daemon *d) {
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(d, MHD_DAEMON_INFO_CURRENT_CONNECTIONS);
    return info ? info->num_connections : 0;
}

/// Writes the client's IP address as text into buf; returns 0 on success.
static inline int hp_mhd_client_ip(struct MHD_Connection *c, char *buf, socklen_t len) {
    const union MHD_ConnectionInfo *info = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    if (info == NULL || info->client_addr == NULL) return -1;
    const struct sockaddr *sa = info->client_addr;
    if (sa->sa_family == AF_INET) {
        return inet_ntop(AF_INET, &((const struct sockaddr_in *)sa)->sin_addr, buf, len) ? 0 : -1;
    }
    if (sa->sa_family == AF_INET6) {
        return inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)sa)->sin6_addr, buf, len) ? 0 : -1;
    }
    return -1;
}
// Every value of one request header, in order, joined with ", " (how RFC 9110 combines a
// list-valued field sent on several lines). MHD_lookup_connection_value sees only the first
// line, which for X-Forwarded-For is the one a client can forge.
struct hp_mhd_join { const char *name; char *out; size_t cap; size_t len; unsigned count; };

static enum MHD_Result hp_mhd_join_value(void *cls, enum MHD_ValueKind kind, const char *key, const char *value) {
    struct hp_mhd_join *j = cls;
    (void)kind;
    if (key == NULL || value == NULL || strcasecmp(key, j->name) != 0) return MHD_YES;
    size_t n = strlen(value);
    if (j->count > 0) {
        if (j->len + 2 <= j->cap) memcpy(j->out + j->len, ", ", 2);
        j->len += 2;
    }
    if (j->len + n <= j->cap) memcpy(j->out + j->len, value, n);
    j->len += n;
    j->count += 1;
    return MHD_YES;
}

/// The joined length (written to `out` if it fits in `cap`; call again with a larger buffer
/// otherwise), or -1 when the request has no such header.
static inline long hp_mhd_header_joined(struct MHD_Connection *c, const char *name, char *out, size_t cap) {
    struct hp_mhd_join j = { name, out, cap, 0, 0 };
    MHD_get_connection_values(c, MHD_HEADER_KIND, hp_mhd_join_value, &j);
    return j.count == 0 ? -1 : (long)j.len;
}
#endif

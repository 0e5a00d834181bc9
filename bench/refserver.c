/* The reference server of bench rows 1-3 (issue 23, item 3): the least an HTTP/1.1 server on
 * this machine can do per request. It parses nothing: every "\r\n\r\n" it reads ends a request,
 * and each is answered with the same canned bytes (a response captured from patchd, head and
 * body), on kept-alive connections, one epoll loop per thread, each with its own listening
 * socket (SO_REUSEPORT), edge-triggered, non-blocking. What patchd does beyond this — parsing,
 * admission, routing, throttling, metrics — is the gap the benchmark reports.
 *
 *     refserver RESPONSE_FILE THREADS      prints "listening on PORT" once ready
 *
 * Loopback only (127.0.0.1, a port the kernel picks); stopped with SIGTERM. Not part of
 * hotpatch: built by `make bench` with cc.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>
#include <arpa/inet.h>

static char *response;
static size_t response_len;
static int port;

enum { MAX_EVENTS = 256, READ_BUF = 16384, MAX_PENDING = 64 };

/* Per connection: how far into "\r\n\r\n" the last read ended, and bytes of responses not yet
 * written (a slow reader). */
struct conn {
    int fd;
    int matched;
    size_t unsent; /* bytes of pending responses still to write, from `offset` of `response` */
    size_t offset;
    size_t queued; /* whole responses waiting after the one being written */
};

static int listen_socket(void) {
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof one);
    struct sockaddr_in addr = {.sin_family = AF_INET, .sin_port = htons(port), .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    if (bind(fd, (struct sockaddr *)&addr, sizeof addr) != 0 || listen(fd, 4096) != 0) {
        perror("refserver: bind/listen");
        exit(2);
    }
    if (port == 0) {
        socklen_t len = sizeof addr;
        getsockname(fd, (struct sockaddr *)&addr, &len);
        port = ntohs(addr.sin_port);
    }
    return fd;
}

/* Writes what is owed; returns 0 when the peer is gone. */
static int flush(struct conn *c) {
    while (c->unsent > 0) {
        ssize_t n = write(c->fd, response + c->offset, c->unsent);
        if (n < 0) return errno == EAGAIN || errno == EWOULDBLOCK;
        c->offset += (size_t)n;
        c->unsent -= (size_t)n;
        if (c->unsent == 0 && c->queued > 0) {
            c->queued--;
            c->offset = 0;
            c->unsent = response_len;
        }
    }
    return 1;
}

static void *loop(void *arg) {
    int lfd = *(int *)arg;
    int ep = epoll_create1(0);
    struct epoll_event ev = {.events = EPOLLIN, .data.ptr = NULL};
    epoll_ctl(ep, EPOLL_CTL_ADD, lfd, &ev);
    struct epoll_event events[MAX_EVENTS];
    char buf[READ_BUF];
    for (;;) {
        int n = epoll_wait(ep, events, MAX_EVENTS, -1);
        for (int i = 0; i < n; i++) {
            struct conn *c = events[i].data.ptr;
            if (c == NULL) {
                for (;;) {
                    int fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK);
                    if (fd < 0) break;
                    int one = 1;
                    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
                    struct conn *nc = calloc(1, sizeof *nc);
                    nc->fd = fd;
                    struct epoll_event cev = {.events = EPOLLIN | EPOLLOUT | EPOLLET | EPOLLRDHUP, .data.ptr = nc};
                    epoll_ctl(ep, EPOLL_CTL_ADD, fd, &cev);
                }
                continue;
            }
            int alive = 1;
            if (events[i].events & EPOLLIN) {
                for (;;) {
                    ssize_t got = read(c->fd, buf, sizeof buf);
                    if (got == 0) { alive = 0; break; }
                    if (got < 0) { alive = errno == EAGAIN || errno == EWOULDBLOCK; break; }
                    static const char end[] = "\r\n\r\n";
                    for (ssize_t k = 0; k < got; k++) {
                        c->matched = buf[k] == end[c->matched] ? c->matched + 1 : (buf[k] == '\r' ? 1 : 0);
                        if (c->matched == 4) {
                            c->matched = 0;
                            if (c->unsent == 0) { c->offset = 0; c->unsent = response_len; }
                            else if (c->queued < MAX_PENDING) c->queued++;
                        }
                    }
                }
            }
            if (alive && (c->unsent > 0)) alive = flush(c);
            if (!alive || (events[i].events & (EPOLLHUP | EPOLLERR))) {
                close(c->fd);
                free(c);
            }
        }
    }
    return NULL;
}

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: refserver RESPONSE_FILE THREADS\n");
        return 64;
    }
    FILE *f = fopen(argv[1], "rb");
    if (!f) { perror(argv[1]); return 2; }
    fseek(f, 0, SEEK_END);
    response_len = (size_t)ftell(f);
    fseek(f, 0, SEEK_SET);
    response = malloc(response_len);
    if (fread(response, 1, response_len, f) != response_len) { perror("read"); return 2; }
    fclose(f);
    int threads = atoi(argv[2]);
    if (threads < 1 || threads > 64) { fprintf(stderr, "THREADS must be 1 to 64\n"); return 64; }
    int *fds = calloc((size_t)threads, sizeof *fds);
    for (int t = 0; t < threads; t++) fds[t] = listen_socket();
    printf("listening on %d\n", port);
    fflush(stdout);
    pthread_t *ids = calloc((size_t)threads, sizeof *ids);
    for (int t = 1; t < threads; t++) pthread_create(&ids[t], NULL, loop, &fds[t]);
    loop(&fds[0]);
    return 0;
}

/* SPDX-License-Identifier: BSD-3-Clause */
/* Framing for the flitrun <-> rank protocol; see proto.h. */
#include "boot/proto.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <unistd.h>

int fl_proto_send(int fd, uint8_t type, const void *body, size_t len)
{
    if (len > FL_PROTO_MAX_FRAME - 1)
        return -EMSGSIZE;
    uint8_t head[5];
    fl_put32(head, (uint32_t)(len + 1));
    head[4] = type;
    struct iovec iov[2] = {{head, sizeof head}, {(void *)body, len}};
    int cnt = len ? 2 : 1;
    struct iovec *v = iov;
    while (cnt > 0) {
        struct msghdr mh = {.msg_iov = v, .msg_iovlen = (size_t)cnt};
        ssize_t n = sendmsg(fd, &mh, MSG_NOSIGNAL);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return -errno;
        }
        while (cnt > 0 && (size_t)n >= v->iov_len) {
            n -= (ssize_t)v->iov_len;
            v++;
            cnt--;
        }
        if (cnt > 0) {
            v->iov_base = (uint8_t *)v->iov_base + n;
            v->iov_len -= (size_t)n;
        }
    }
    return 0;
}

/* The buffer is mapped pages, not malloc'd: a rank reads on a thread of its
   own, and a thread's first malloc reserves it an arena of 64 MB. */
static int rx_grow(struct fl_proto_rx *rx, size_t cap)
{
    cap = (cap + 4095) & ~(size_t)4095;
    void *nb = rx->buf ? mremap(rx->buf, rx->cap, cap, MREMAP_MAYMOVE)
                       : mmap(NULL, cap, PROT_READ | PROT_WRITE,
                              MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (nb == MAP_FAILED)
        return -ENOMEM;
    rx->buf = nb;
    rx->cap = cap;
    return 0;
}

int fl_proto_rx_fill(struct fl_proto_rx *rx, int fd)
{
    if (rx->cap - rx->len < 4096 && rx_grow(rx, rx->cap ? rx->cap * 2 : 8192) != 0)
        return -ENOMEM;
    for (;;) {
        ssize_t n = read(fd, rx->buf + rx->len, rx->cap - rx->len);
        if (n > 0) {
            rx->len += (size_t)n;
            return 1;
        }
        if (n == 0)
            return 0;
        if (errno != EINTR)
            return -errno;
    }
}

int fl_proto_rx_next(struct fl_proto_rx *rx, uint8_t *type, const uint8_t **body,
                     size_t *len)
{
    if (rx->handed) { /* the caller is done with the last frame */
        memmove(rx->buf, rx->buf + rx->handed, rx->len - rx->handed);
        rx->len -= rx->handed;
        rx->handed = 0;
    }
    if (rx->len < 4)
        return 0;
    uint32_t flen = fl_get32(rx->buf);
    if (flen == 0 || flen > FL_PROTO_MAX_FRAME)
        return -EPROTO;
    if (rx->max_frame && flen > rx->max_frame)
        return -EMSGSIZE;
    if (rx->len < 4 + (size_t)flen) {
        if (rx->cap < 4 + (size_t)flen && rx_grow(rx, 4 + (size_t)flen) != 0)
            return -ENOMEM;
        return 0;
    }
    *type = rx->buf[4];
    *body = rx->buf + 5;
    *len = flen - 1;
    rx->handed = 4 + (size_t)flen;
    return 1;
}

void fl_proto_rx_free(struct fl_proto_rx *rx)
{
    if (rx->buf)
        munmap(rx->buf, rx->cap);
    memset(rx, 0, sizeof *rx);
}

int fl_proto_parse_addr(const char *spec, struct sockaddr_un *sa, unsigned *salen)
{
    static const char prefix[] = "unix:@";
    size_t plen = sizeof prefix - 1;
    if (!spec || strncmp(spec, prefix, plen) != 0)
        return -EINVAL;
    const char *name = spec + plen;
    size_t nlen = strlen(name);
    if (nlen == 0 || nlen + 1 > sizeof sa->sun_path)
        return -EINVAL;
    memset(sa, 0, sizeof *sa);
    sa->sun_family = AF_UNIX;
    memcpy(sa->sun_path + 1, name, nlen); /* abstract: leading NUL */
    *salen = (unsigned)(offsetof(struct sockaddr_un, sun_path) + 1 + nlen);
    return 0;
}

bool fl_proto_is_tcp(const char *spec)
{
    return spec && strncmp(spec, "tcp:", 4) == 0;
}

int fl_proto_parse_tcp(const char *spec, struct sockaddr_in *sa)
{
    char ip[INET_ADDRSTRLEN];
    if (!fl_proto_is_tcp(spec))
        return -EINVAL;
    const char *host = spec + 4, *colon = strrchr(host, ':');
    size_t hlen = colon ? (size_t)(colon - host) : 0;
    if (hlen == 0 || hlen >= sizeof ip)
        return -EINVAL;
    memcpy(ip, host, hlen);
    ip[hlen] = '\0';
    const char *port = colon + 1;
    size_t plen = strlen(port);
    /* digits only (no sign, no blanks), no leading zero, at most 5 of them */
    if (plen == 0 || plen > 5 || port[0] == '0' || strspn(port, "0123456789") != plen)
        return -EINVAL;
    unsigned long v = strtoul(port, NULL, 10);
    struct in_addr a;
    if (v > 65535 || inet_pton(AF_INET, ip, &a) != 1)
        return -EINVAL;
    memset(sa, 0, sizeof *sa);
    sa->sin_family = AF_INET;
    sa->sin_port = htons((uint16_t)v);
    sa->sin_addr = a;
    return 0;
}

/* connect() interrupted by a signal goes on in the background: wait for it. */
static int connect_finish(int fd)
{
    struct pollfd p = {.fd = fd, .events = POLLOUT};
    while (poll(&p, 1, -1) < 0)
        if (errno != EINTR)
            return -errno;
    int err = 0;
    socklen_t len = sizeof err;
    if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0)
        return -errno;
    return -err;
}

static int connect_fd(int fd, const struct sockaddr *sa, socklen_t salen)
{
    if (connect(fd, sa, salen) == 0)
        return 0;
    return errno == EINTR ? connect_finish(fd) : -errno;
}

int fl_proto_keepalive(int fd, int64_t timeout_ms)
{
    if (timeout_ms <= 0)
        return 0;
    int64_t s = timeout_ms < 2000 ? 2 : timeout_ms / 1000;
    if (s > 86400)
        s = 86400;
    /* the kernel's bounds: idle and interval 32767 s, 127 probes */
    int one = 1, idle = s / 2 > 32767 ? 32767 : (int)(s / 2);
    int intvl = s >= 8 ? (int)(s / 8) : 1;
    int cnt = (int)((s - idle) / intvl);
    if (cnt > 127)
        cnt = 127;
    unsigned user = timeout_ms > 86400000 ? 86400000u : (unsigned)timeout_ms;
    if (setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof one) != 0 ||
        setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof idle) != 0 ||
        setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &intvl, sizeof intvl) != 0 ||
        setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &cnt, sizeof cnt) != 0 ||
        setsockopt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &user, sizeof user) != 0)
        return -errno;
    return 0;
}

int fl_proto_connect(const char *spec, uint32_t *local_ip)
{
    struct sockaddr_un un;
    struct sockaddr_in in;
    unsigned unlen;
    bool tcp = fl_proto_parse_tcp(spec, &in) == 0;
    if (!tcp && fl_proto_parse_addr(spec, &un, &unlen) != 0)
        return -EINVAL;
    int fd = socket(tcp ? AF_INET : AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -errno;
    int err = tcp ? connect_fd(fd, (struct sockaddr *)&in, sizeof in)
                  : connect_fd(fd, (struct sockaddr *)&un, (socklen_t)unlen);
    struct sockaddr_in self = {0};
    socklen_t slen = sizeof self;
    int one = 1;
    /* frames are small and each one is waited for: no Nagle delay */
    if (!err && tcp &&
        (setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one) != 0 ||
         getsockname(fd, (struct sockaddr *)&self, &slen) != 0))
        err = -errno;

    if (err) {
        close(fd);
        return err;
    }
    *local_ip = tcp ? ntohl(self.sin_addr.s_addr) : 0;
    return fd;
}

void fl_proto_hello_encode(uint8_t out[FL_PROTO_HELLO_LEN], uint64_t job_id,
                           uint32_t rank, uint32_t pid,
                           const uint8_t key[FL_PROTO_KEY_LEN])
{
    fl_put32(out, FL_PROTO_VERSION);
    fl_put64(out + 4, job_id);
    fl_put32(out + 12, rank);
    fl_put32(out + 16, pid);
    memcpy(out + 20, key, FL_PROTO_KEY_LEN);
}

int fl_proto_hello_decode(const uint8_t *body, size_t len, struct fl_proto_hello *out)
{
    if (len < 4)
        return -EPROTO;
    out->version = fl_get32(body);
    if (out->version != FL_PROTO_VERSION)
        return -EPROTONOSUPPORT;
    if (len != FL_PROTO_HELLO_LEN)
        return -EPROTO;
    out->job_id = fl_get64(body + 4);
    out->rank = fl_get32(body + 12);
    out->pid = fl_get32(body + 16);
    memcpy(out->key, body + 20, FL_PROTO_KEY_LEN);
    return 0;
}

int fl_proto_welcome_next(struct fl_proto_rx *rx)
{
    uint8_t type;
    const uint8_t *body;
    size_t len;
    int r = fl_proto_rx_next(rx, &type, &body, &len);
    if (r == 0)
        return 0;
    if (r == 1 && len == 0 && type == FL_PROTO_WELCOME)
        return 1;
    return r == 1 && len == 0 && type == FL_PROTO_BUSY ? -EAGAIN : -EPROTO;
}

bool fl_proto_key_equal(const uint8_t a[FL_PROTO_KEY_LEN],
                        const uint8_t b[FL_PROTO_KEY_LEN])
{
    /* volatile: the compiler may not turn the loop into an early-out compare */
    volatile uint8_t diff = 0;
    for (size_t i = 0; i < FL_PROTO_KEY_LEN; i++)
        diff |= (uint8_t)(a[i] ^ b[i]);
    return diff == 0;
}

static int hex_digit(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

int fl_proto_key_parse(const char *hex, uint8_t out[FL_PROTO_KEY_LEN])
{
    uint8_t key[FL_PROTO_KEY_LEN];
    if (!hex || strlen(hex) != 2 * FL_PROTO_KEY_LEN)
        return -EINVAL;
    for (size_t i = 0; i < FL_PROTO_KEY_LEN; i++) {
        int hi = hex_digit(hex[2 * i]), lo = hex_digit(hex[2 * i + 1]);
        if (hi < 0 || lo < 0)
            return -EINVAL;
        key[i] = (uint8_t)(hi << 4 | lo);
    }
    memcpy(out, key, sizeof key);
    return 0;
}

void fl_proto_key_format(const uint8_t key[FL_PROTO_KEY_LEN],
                         char hex[2 * FL_PROTO_KEY_LEN + 1])
{
    static const char digits[] = "0123456789abcdef";
    for (size_t i = 0; i < FL_PROTO_KEY_LEN; i++) {
        hex[2 * i] = digits[key[i] >> 4];
        hex[2 * i + 1] = digits[key[i] & 15];
    }
    hex[2 * FL_PROTO_KEY_LEN] = '\0';
}

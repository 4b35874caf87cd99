/* Framing for the flitrun <-> rank protocol; see proto.h. */
#include "boot/proto.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
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

int fl_proto_rx_fill(struct fl_proto_rx *rx, int fd)
{
    if (rx->cap - rx->len < 4096) {
        size_t cap = rx->cap ? rx->cap * 2 : 8192;
        uint8_t *nb = realloc(rx->buf, cap);
        if (!nb)
            return -ENOMEM;
        rx->buf = nb;
        rx->cap = cap;
    }
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

int fl_proto_rx_next(struct fl_proto_rx *rx, uint8_t *type,
                     const uint8_t **body, size_t *len)
{
    if (rx->handed) {           /* the caller is done with the last frame */
        memmove(rx->buf, rx->buf + rx->handed, rx->len - rx->handed);
        rx->len -= rx->handed;
        rx->handed = 0;
    }
    if (rx->len < 4)
        return 0;
    uint32_t flen = fl_get32(rx->buf);
    if (flen == 0 || flen > FL_PROTO_MAX_FRAME)
        return -EPROTO;
    if (rx->len < 4 + (size_t)flen) {
        if (rx->cap < 4 + (size_t)flen) {
            uint8_t *nb = realloc(rx->buf, 4 + (size_t)flen);
            if (!nb)
                return -ENOMEM;
            rx->buf = nb;
            rx->cap = 4 + (size_t)flen;
        }
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
    free(rx->buf);
    memset(rx, 0, sizeof *rx);
}

int fl_proto_parse_addr(const char *spec, struct sockaddr_un *sa,
                        unsigned *salen)
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
    memcpy(sa->sun_path + 1, name, nlen);   /* abstract: leading NUL */
    *salen = (unsigned)(offsetof(struct sockaddr_un, sun_path) + 1 + nlen);
    return 0;
}

void fl_proto_hello_encode(uint8_t out[FL_PROTO_HELLO_LEN], uint64_t job_id,
                           uint32_t rank, uint32_t pid)
{
    fl_put32(out, FL_PROTO_VERSION);
    fl_put64(out + 4, job_id);
    fl_put32(out + 12, rank);
    fl_put32(out + 16, pid);
}

int fl_proto_hello_decode(const uint8_t *body, size_t len,
                          struct fl_proto_hello *out)
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
    return 0;
}

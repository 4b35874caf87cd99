/* SPDX-License-Identifier: BSD-3-Clause */
/* flitrun's messages on stderr: "flitrun: ...", one write each. */
#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "flitrun.h"

int write_all(int fd, const void *buf, size_t len)
{
    const char *p = buf;
    while (len > 0) {
        ssize_t n = write(fd, p, len);
        if (n > 0) {
            p += n;
            len -= (size_t)n;
        } else if (n < 0 && errno == EAGAIN) {
            /* someone made the shared stdout nonblocking: wait, not spin */
            struct pollfd pfd = {.fd = fd, .events = POLLOUT};
            poll(&pfd, 1, -1);
        } else if (n < 0 && errno != EINTR) {
            return -errno;
        }
    }
    return 0;
}

/* One write per message, so it never splits a rank's relayed line. */
static void vsay(const char *fmt, va_list ap)
{
    char buf[1024];
    size_t head = (size_t)snprintf(buf, sizeof buf, "flitrun: ");
    int n = vsnprintf(buf + head, sizeof buf - head - 1, fmt, ap);
    size_t len = head + (n < 0 ? 0 : (size_t)n);
    if (len > sizeof buf - 2)
        len = sizeof buf - 2;
    buf[len++] = '\n';
    write_all(STDERR_FILENO, buf, len);
}

void say(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsay(fmt, ap);
    va_end(ap);
}

void note(const struct job *job, const char *fmt, ...)
{
    if (!job->opt.verbose)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsay(fmt, ap);
    va_end(ap);
}

void signal_name(int sig, char *buf, size_t len)
{
    const char *abbrev = sigabbrev_np(sig);
    if (abbrev)
        snprintf(buf, len, "SIG%s", abbrev);
    else
        snprintf(buf, len, "signal %d", sig);
}

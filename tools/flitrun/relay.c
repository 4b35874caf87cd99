/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The ranks' output, when there are several of them or --prefix: each
 * rank's stdout and stderr come through a pipe of their own, and go out
 * line by line (behind "[rank] " with --prefix), one write for all the
 * whole lines at hand, so that lines of different ranks never mix: a rank
 * that writes a line in pieces (a character at a time, say) has it held
 * here until its newline. A last line without one gets one (so does a line
 * cut at LINE_CAP). Each pipe keeps its own order; what a rank wrote
 * to stdout and to stderr in turn may come out in another order between
 * the two, as through any two pipes. A job of one rank writes straight to
 * flitrun's stdout and stderr (a terminal stays one).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "flitrun.h"

#define LINE_CAP  (64u * 1024)       /* a longer line is cut, not buffered */
#define RELAY_CAP (LINE_CAP + 8192u) /* one cut line plus a read */
/* A proxy's lines were cut there already, each at most RELAY_CAP bytes and
   then prefixed: cut again here, a piece would lose its prefix. */
#define PLAIN_LINE_CAP  (RELAY_CAP + 32u)
#define PLAIN_RELAY_CAP (PLAIN_LINE_CAP + 8192u)

static char *scratch(struct job *job, size_t len)
{
    if (len > job->out.scratch_cap) {
        char *p = realloc(job->out.scratch, len);
        if (!p)
            return NULL;
        job->out.scratch = p;
        job->out.scratch_cap = len;
    }
    return job->out.scratch;
}

/* How much of r->buf goes out now: its whole lines; everything when final
   or when one line has grown past LINE_CAP. */
static size_t relay_cut(const struct relay *r, bool final)
{
    const char *nl = memrchr(r->buf, '\n', r->len);
    size_t cut = nl ? (size_t)(nl - r->buf) + 1 : 0;
    return final || r->len - cut >= (r->plain ? PLAIN_LINE_CAP : LINE_CAP) ? r->len : cut;
}

/* Copies src into out, each line behind prefix and ending in a newline. */
static size_t prefix_lines(char *out, const char *src, size_t len, const char *prefix,
                           size_t plen)
{
    size_t o = 0;
    while (len > 0) {
        const char *nl = memchr(src, '\n', len);
        size_t line = nl ? (size_t)(nl - src) + 1 : len;
        memcpy(out + o, prefix, plen);
        memcpy(out + o + plen, src, line);
        o += plen + line;
        if (!nl)
            out[o++] = '\n';
        src += line;
        len -= line;
    }
    return o;
}

bool relaying(const struct job *job)
{
    return job->opt.prefix || job->opt.nranks > 1;
}

/* The first cut bytes of r->buf as they are, and a newline if they lack
   one (a last line without one, or a line cut at LINE_CAP): the next
   rank's line must start a line of its own. */
static int write_plain(struct job *job, struct relay *r, size_t cut)
{
    if (r->buf[cut - 1] == '\n')
        return write_all(r->dest, r->buf, cut);
    char *out = scratch(job, cut + 1);
    if (!out)
        return write_all(r->dest, r->buf, cut);
    memcpy(out, r->buf, cut);
    out[cut] = '\n';
    return write_all(r->dest, out, cut + 1);
}

/* Writes out the first cut bytes of r->buf, each line behind the rank's
   prefix with --prefix. 0, or -errno if the output is lost. */
static int write_lines(struct job *job, struct relay *r, size_t cut)
{
    if (!job->opt.prefix || r->plain)
        return write_plain(job, r, cut);
    char prefix[16];
    size_t plen = (size_t)snprintf(prefix, sizeof prefix, "[%u] ", r->rank);
    size_t lines = 1;
    for (const char *p = r->buf; (p = memchr(p, '\n', cut - (size_t)(p - r->buf))); p++)
        lines++;
    char *out = scratch(job, cut + lines * (plen + 1));
    return out ? write_all(r->dest, out, prefix_lines(out, r->buf, cut, prefix, plen))
               : write_all(r->dest, r->buf, cut); /* unprefixed beats lost */
}

/* One write for all the lines at hand: whole lines never interleave. */
static void relay_emit(struct job *job, struct relay *r, bool final)
{
    if (r->len == 0)
        return; /* and r->buf may be NULL */
    size_t cut = relay_cut(r, final);
    if (cut == 0)
        return;
    if (write_lines(job, r, cut) == -EPIPE)
        job->out.dest_gone[r->dest] = true;
    memmove(r->buf, r->buf + cut, r->len - cut);
    r->len -= cut;
}

void relay_close(struct job *job, struct relay *r)
{
    relay_emit(job, r, true); /* the partial last line */
    close(r->fd);
    r->fd = -1;
}

static int relay_reserve(struct relay *r)
{
    if (r->cap - r->len >= 4096)
        return 0;
    size_t cap = r->cap ? r->cap * 2 : 8192,
           most = r->plain ? PLAIN_RELAY_CAP : RELAY_CAP;
    if (cap > most)
        cap = most;
    char *p = realloc(r->buf, cap);
    if (!p)
        return -1;
    r->buf = p;
    r->cap = cap;
    return 0;
}

void relay_readable(struct job *job, struct relay *r)
{
    if (job->out.dest_gone[r->dest]) {
        /* nobody reads flitrun's end: the rank gets SIGPIPE, as it would
           writing there itself */
        close(r->fd);
        r->fd = -1;
        return;
    }
    if (relay_reserve(r) != 0) {
        /* the rank then gets EPIPE: losing output beats hanging the job */
        say("out of memory relaying the output of rank %u; dropping it", r->rank);
        relay_close(job, r);
        return;
    }
    ssize_t n = read(r->fd, r->buf + r->len, r->cap - r->len);
    if (n < 0 && (errno == EINTR || errno == EAGAIN))
        return;
    if (n <= 0) {
        relay_close(job, r);
        return;
    }
    r->len += (size_t)n;
    relay_emit(job, r, false);
}

bool relays_open(const struct job *job)
{
    for (uint32_t r = 0; r < job->opt.nranks; r++)
        if (job->ranks[r].out.fd >= 0 || job->ranks[r].err.fd >= 0)
            return true;
    return false;
}

/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A host's proxy. A host that gets several ranks gets one launcher call
 * (ssh, --launch), not one a rank: it runs this flitrun there as
 * `flitrun --proxy HOST:RANKS -n N ... -- program args`, with the job's
 * FLIT_* environment and its key on stdin as a rank would get them. The
 * proxy is a flitrun whose job is that host's ranks: it forks them (each
 * with its FLIT_RANK, in a process group of their own, tied to the proxy's
 * life), relays their output line by line (prefixed there with -p), gives
 * rank 0 its stdin, stops them when told to stop, removes what crashed
 * ones left in /dev/shm there, and exits when the last has, with the
 * status of the first that failed. It lives only as long as the job: no
 * daemon stays. Its ranks connect to it, and it speaks for them on one
 * connection to flitrun (upstream.c).
 *
 * To flitrun, the proxy's pid stands for each of the host's ranks (as the
 * launcher of a rank started alone does for it): signalling it signals
 * them, and its end is theirs, told once naming the host (reap.c).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "flitrun.h"

/* "a" or "a-b", a <= b < n. */
static bool parse_range(const char *s, size_t len, uint32_t n, uint32_t *a, uint32_t *b)
{
    char buf[32], *end;
    if (len == 0 || len >= sizeof buf)
        return false;
    memcpy(buf, s, len);
    buf[len] = '\0';
    if (buf[0] < '0' || buf[0] > '9')
        return false;
    unsigned long lo = strtoul(buf, &end, 10), hi = lo;
    if (*end == '-') {
        if (end[1] < '0' || end[1] > '9')
            return false;
        hi = strtoul(end + 1, &end, 10);
    }
    if (*end || lo > hi || hi >= n)
        return false;
    *a = (uint32_t)lo;
    *b = (uint32_t)hi;
    return true;
}

int proxy_parse(struct options *opt, char *why, size_t why_len)
{
    const char *spec = opt->proxy_spec, *colon = strchr(spec, ':');
    if (!colon || colon == spec || !colon[1]) {
        snprintf(why, why_len, "--proxy wants HOST:RANKS, not '%s'", spec);
        return -1;
    }
    opt->proxy_host = strndup(spec, (size_t)(colon - spec));
    opt->here = calloc(opt->nranks, sizeof *opt->here);
    if (!opt->proxy_host || !opt->here) {
        snprintf(why, why_len, "out of memory");
        return -1;
    }
    for (const char *p = colon + 1; *p;) {
        size_t len = strcspn(p, ",");
        uint32_t a, b;
        if (!parse_range(p, len, opt->nranks, &a, &b)) {
            snprintf(why, why_len, "--proxy: bad ranks '%.*s' (of %u)", (int)len, p,
                     opt->nranks);
            return -1;
        }
        for (uint32_t r = a; r <= b; r++)
            opt->here[r] = true;
        p += len + (p[len] == ',');
    }
    opt->stdin_none |= !opt->here[0]; /* flitrun's stdin is rank 0's alone */
    return 0;
}

void mark_proxied(struct job *job)
{
    const struct fr_hosts *h = &job->opt.hosts;
    if (!job->opt.host_of || job->opt.no_proxy)
        return;
    for (uint32_t r = 0; r < job->opt.nranks; r++) {
        const struct fr_host *host = &h->host[job->opt.host_of[r]];
        struct rank *rk = &job->ranks[r];
        if (host->local || host->nranks < 2)
            continue;
        rk->proxied = true;
        rk->lead = r;
        for (uint32_t q = 0; q < r; q++) /* a host's first rank comes first */
            if (job->opt.host_of[q] == job->opt.host_of[r]) {
                rk->lead = q;
                break;
            }
    }
}

bool spawns_rank(const struct job *job, uint32_t r)
{
    if (job->opt.here)
        return job->opt.here[r];
    return !job->ranks[r].proxied || job->ranks[r].lead == r;
}

/* The ranks of lead's host as "a-b,c,...", into buf (NULL: only measured);
   returns the length. */
static size_t host_ranks(const struct job *job, uint32_t lead, char *buf, size_t cap)
{
    size_t len = 0;
    uint32_t n = job->opt.nranks, hi = job->opt.host_of[lead];
    for (uint32_t r = lead; r < n; r++) {
        if (job->opt.host_of[r] != hi)
            continue;
        uint32_t end = r;
        while (end + 1 < n && job->opt.host_of[end + 1] == hi)
            end++;
        char item[32];
        int k = end > r ? snprintf(item, sizeof item, "%s%u-%u", len ? "," : "", r, end)
                        : snprintf(item, sizeof item, "%s%u", len ? "," : "", r);
        if (buf && len + (size_t)k < cap)
            memcpy(buf + len, item, (size_t)k + 1);
        len += (size_t)k;
        r = end;
    }
    return len;
}

char **proxy_prog(const struct job *job, uint32_t lead)
{
    const struct options *o = &job->opt;
    const char *name = host_name(job, lead);
    size_t nprog = 0, strs = strlen(name) + 2 + host_ranks(job, lead, NULL, 0) + 16;
    while (o->argv[nprog])
        nprog++;
    size_t words = 12 + nprog;
    char **w = malloc(words * sizeof *w + strs);
    if (!w)
        return NULL;
    char *spec = (char *)(w + words), *np = spec + strs - 16;
    size_t len = (size_t)snprintf(spec, strs, "%s:", name);
    host_ranks(job, lead, spec + len, strs - 16 - len);
    snprintf(np, 16, "%u", o->nranks);
    size_t i = 0;
    w[i++] = job->self_exe ? job->self_exe : "flitrun";
    w[i++] = "--proxy";
    w[i++] = spec;
    w[i++] = "-n";
    w[i++] = np;
    if (o->prefix)
        w[i++] = "-p";
    if (o->keep_going)
        w[i++] = "-k";
    if (o->verbose)
        w[i++] = "-v";
    w[i++] = "--";
    for (size_t k = 0; k <= nprog; k++)
        w[i++] = o->argv[k];
    return w;
}

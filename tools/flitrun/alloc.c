/* SPDX-License-Identifier: BSD-3-Clause */
/* Host lists from a hostfile or a Slurm allocation; see alloc.h. */
#include "alloc.h"

#include <ctype.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hosts.h"

#define MAX_COUNT 4096u
#define MAX_NAME  256

struct names {
    char *out;
    size_t len, at;
    uint32_t n, max;
};

static int add_name(struct names *s, const char *name, size_t len, char *why,
                    size_t why_len)
{
    if (s->n == s->max || s->at + len + 1 > s->len) {
        snprintf(why, why_len, "the node list names more than %u nodes", s->max);
        return -1;
    }
    memcpy(s->out + s->at, name, len);
    s->out[s->at + len] = '\0';
    s->at += len + 1;
    s->n++;
    return 0;
}

/* Reads digits at *p: value, and how many digits. */
static bool number(const char **p, const char *end, unsigned long *v, size_t *digits)
{
    *v = 0;
    *digits = 0;
    while (*p < end && isdigit((unsigned char)**p) && *digits < 9) {
        *v = *v * 10 + (unsigned long)(**p - '0');
        (*p)++;
        (*digits)++;
    }
    return *digits > 0 && (*p == end || !isdigit((unsigned char)**p));
}

static int expand(struct names *s, const char *head, size_t hlen, const char *rest,
                  size_t rlen, char *why, size_t why_len);

/* The bracket group at rest[0] ('[') up to its ']', each number into the
   name after head, then the rest of the item. */
static int expand_group(struct names *s, const char *head, size_t hlen, const char *rest,
                        size_t rlen, char *why, size_t why_len)
{
    const char *close = memchr(rest, ']', rlen);
    if (!close) {
        snprintf(why, why_len, "'[' without ']' in the node list");
        return -1;
    }
    const char *p = rest + 1, *end = close;
    while (p < end) {
        unsigned long lo, hi;
        size_t width, w2;
        if (!number(&p, end, &lo, &width))
            goto bad;
        hi = lo;
        if (p < end && *p == '-') {
            p++;
            if (!number(&p, end, &hi, &w2) || hi < lo)
                goto bad;
        }
        if (p < end && *p++ != ',')
            goto bad;
        if (p == end && end[-1] == ',')
            goto bad;
        for (unsigned long v = lo; v <= hi; v++) {
            char name[MAX_NAME];
            int k =
                snprintf(name, sizeof name, "%.*s%0*lu", (int)hlen, head, (int)width, v);
            if (k < 0 || (size_t)k >= sizeof name)
                goto bad;
            if (expand(s, name, (size_t)k, close + 1, rlen - (size_t)(close + 1 - rest),
                       why, why_len) != 0)
                return -1;
        }
    }
    return 0;
bad:
    snprintf(why, why_len, "bad range '%.*s' in the node list", (int)(close - rest + 1),
             rest);
    return -1;
}

/* head is expanded already; rest may hold more bracket groups. */
static int expand(struct names *s, const char *head, size_t hlen, const char *rest,
                  size_t rlen, char *why, size_t why_len)
{
    const char *open = memchr(rest, '[', rlen);
    size_t plain = open ? (size_t)(open - rest) : rlen;
    char name[MAX_NAME];
    if (hlen + plain >= sizeof name || memchr(rest, ']', plain)) {
        snprintf(why, why_len, "bad node name '%.*s%.*s'", (int)hlen, head, (int)rlen,
                 rest);
        return -1;
    }
    memcpy(name, head, hlen);
    memcpy(name + hlen, rest, plain);
    if (!open) {
        if (hlen + plain == 0) {
            snprintf(why, why_len, "an empty name in the node list");
            return -1;
        }
        return add_name(s, name, hlen + plain, why, why_len);
    }
    return expand_group(s, name, hlen + plain, open, rlen - plain, why, why_len);
}

int fr_nodelist_expand(const char *list, char *out, size_t out_len, uint32_t max,
                       uint32_t *n, char *why, size_t why_len)
{
    struct names s = {out, out_len, 0, 0, max};
    const char *p = list;
    while (*p) {
        /* An item ends at a ',' outside brackets. */
        const char *q = p;
        int depth = 0;
        while (*q && (*q != ',' || depth)) {
            depth += *q == '[' ? 1 : *q == ']' ? -1 : 0;
            if (depth < 0 || depth > 1) {
                snprintf(why, why_len, "unbalanced brackets in the node list '%s'", list);
                return -1;
            }
            q++;
        }
        if (expand(&s, "", 0, p, (size_t)(q - p), why, why_len) != 0)
            return -1;
        p = *q ? q + 1 : q;
        if (*q && !*p) {
            snprintf(why, why_len, "the node list '%s' ends with ','", list);
            return -1;
        }
    }
    if (s.n == 0) {
        snprintf(why, why_len, "the node list is empty");
        return -1;
    }
    *n = s.n;
    return 0;
}

int fr_node_counts(const char *spec, uint32_t *counts, uint32_t n, char *why,
                   size_t why_len)
{
    uint32_t k = 0;
    const char *p = spec, *end = spec + strlen(spec);
    while (p < end) {
        unsigned long c, times = 1;
        size_t d;
        if (!number(&p, end, &c, &d) || c < 1 || c > MAX_COUNT)
            goto bad;
        if (p < end && *p == '(') {
            p++;
            if (p >= end || *p++ != 'x' || !number(&p, end, &times, &d) || times < 1 ||
                p >= end || *p++ != ')')
                goto bad;
        }
        if (p < end && (*p++ != ',' || p == end))
            goto bad;
        for (unsigned long i = 0; i < times; i++) {
            if (k == n)
                goto bad;
            counts[k++] = (uint32_t)c;
        }
    }
    if (k == n)
        return 0;
bad:
    snprintf(why, why_len, "'%s' is not one count per node for %u nodes", spec, n);
    return -1;
}

/* Appends "name" or "name:count" to the spec at *spec. 0 or -1. */
static int spec_add(char **spec, size_t *len, const char *name, uint32_t count)
{
    size_t need = *len + strlen(name) + 16;
    char *s = realloc(*spec, need);
    if (!s)
        return -1;
    *spec = s;
    int k = count
                ? snprintf(s + *len, need - *len, "%s%s:%u", *len ? "," : "", name, count)
                : snprintf(s + *len, need - *len, "%s%s", *len ? "," : "", name);
    *len += (size_t)k;
    return 0;
}

/* One hostfile line: *name (in line, ended), *slots (0: none). 1 host,
   0 nothing on it, -1 bad. */
static int hostfile_line(char *line, char **name, uint32_t *slots)
{
    char *hash = strchr(line, '#');
    if (hash)
        *hash = '\0';
    char *save, *w = strtok_r(line, " \t\r\n", &save);
    if (!w)
        return 0;
    *name = w;
    *slots = 0;
    while ((w = strtok_r(NULL, " \t\r\n", &save))) {
        unsigned long v;
        size_t d;
        const char *p = w + 6, *end = w + strlen(w);
        if (strncmp(w, "slots=", 6) != 0 || *slots || !number(&p, end, &v, &d) ||
            p != end || v < 1 || v > MAX_COUNT)
            return -1;
        *slots = (uint32_t)v;
    }
    return 1;
}

int fr_hostfile_read(const char *path, char **spec, char *why, size_t why_len)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        snprintf(why, why_len, "cannot read the hostfile %s: %s", path, strerror(errno));
        return -1;
    }
    char line[1024], *names = NULL;
    size_t nlen = 0, slen = 0;
    uint32_t nhosts = 0, *slots = NULL;
    bool any_slots = false;
    int rc = 0;
    for (unsigned lineno = 1; rc == 0 && fgets(line, sizeof line, f); lineno++) {
        char *name;
        uint32_t s;
        int r = strchr(line, '\n') || feof(f) ? hostfile_line(line, &name, &s) : -1;
        if (r < 0) {
            snprintf(why, why_len,
                     "%s:%u: expected 'host' or 'host slots=N' (N from 1 to %u)", path,
                     lineno, MAX_COUNT);
            rc = -1;
        } else if (r == 1) {
            uint32_t *ns = realloc(slots, (nhosts + 1) * sizeof *ns);
            char *nn = ns ? realloc(names, nlen + strlen(name) + 1) : NULL;
            if (ns)
                slots = ns;
            if (!nn) {
                snprintf(why, why_len, "out of memory reading %s", path);
                rc = -1;
                break;
            }
            names = nn;
            strcpy(names + nlen, name);
            nlen += strlen(name) + 1;
            slots[nhosts++] = s;
            any_slots |= s != 0;
        }
    }
    fclose(f);
    *spec = NULL;
    if (rc == 0 && nhosts == 0) {
        snprintf(why, why_len, "the hostfile %s names no host", path);
        rc = -1;
    }
    const char *name = names;
    for (uint32_t i = 0; rc == 0 && i < nhosts; i++, name += strlen(name) + 1) {
        uint32_t c = any_slots ? (slots[i] ? slots[i] : 1) : 0;
        if (spec_add(spec, &slen, name, c) != 0) {
            snprintf(why, why_len, "out of memory reading %s", path);
            rc = -1;
        }
    }
    free(names);
    free(slots);
    if (rc != 0) {
        free(*spec);
        *spec = NULL;
    }
    return rc;
}

int fr_slurm_hosts(char **spec, char *why, size_t why_len)
{
    const char *list = getenv("SLURM_JOB_NODELIST");
    const char *cpus = getenv("SLURM_JOB_CPUS_PER_NODE");
    *spec = NULL;
    if (!list || !*list || getenv("SLURM_STEP_ID"))
        return 0;
    static char names[MAX_COUNT * 64];
    uint32_t n;
    if (fr_nodelist_expand(list, names, sizeof names, MAX_COUNT, &n, why, why_len) != 0)
        return -1;
    if (n == 1 && fr_host_is_local(names))
        return 0;
    uint32_t *counts = calloc(n, sizeof *counts);
    if (!counts || (cpus && fr_node_counts(cpus, counts, n, why, why_len) != 0)) {
        if (!counts)
            snprintf(why, why_len, "out of memory");
        free(counts);
        return -1;
    }
    size_t len = 0;
    const char *name = names;
    int rc = 0;
    for (uint32_t i = 0; rc == 0 && i < n; i++, name += strlen(name) + 1)
        rc = spec_add(spec, &len, name, cpus ? counts[i] : 0);
    free(counts);
    if (rc != 0) {
        snprintf(why, why_len, "out of memory");
        free(*spec);
        *spec = NULL;
    }
    return rc;
}

/* SPDX-License-Identifier: BSD-3-Clause */
/* What the applications on shared objects share: failing loudly, a clock,
   numeric options. */
#ifndef FLIT_APP_H
#define FLIT_APP_H

#include <flit/object.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static inline void app_check(flit_status st, const char *what)
{
    if (st != FLIT_OK) {
        fprintf(stderr, "%s: %s\n", what, flit_strerror(st));
        exit(1);
    }
}

static inline double app_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static inline uint32_t app_arg(int argc, char **argv, const char *name, uint32_t def)
{
    for (int i = 1; i + 1 < argc; i++)
        if (!strcmp(argv[i], name))
            return (uint32_t)strtoul(argv[i + 1], NULL, 10);
    return def;
}

/* Messages this rank sent, every kind together. */
static inline unsigned long long app_messages(flit_ep_t *ep)
{
    flit_stats_t es;
    memset(&es, 0, sizeof es);
    es.struct_size = sizeof es;
    app_check(flit_ep_stats(ep, &es), "flit_ep_stats");
    unsigned long long msgs = 0;
    for (int i = 0; i < FLIT_STAT_KINDS; i++)
        msgs += es.sent_msgs[i];
    return msgs;
}

#endif /* FLIT_APP_H */

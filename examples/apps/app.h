/* SPDX-License-Identifier: BSD-3-Clause */
/* What the applications on shared objects share: failing loudly, a clock,
   numeric options, and a profile of where rank 0's time went. */
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

/* Seconds of CPU this process used (every thread). */
static inline double app_cpu(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Seconds spent inside flit_object_invoke (waiting included) and
   flit_poll, by app_invoke and app_poll. */
static double app_in_flit;

static inline void app_invoke(flit_object_t *obj, unsigned op, const void *arg,
                              size_t len, void *res, size_t cap, size_t *res_len,
                              const char *what)
{
    double t0 = app_now();
    app_check(flit_object_invoke(obj, op, arg, len, res, cap, res_len), what);
    app_in_flit += app_now() - t0;
}

/* flit_poll, its time counted with the operations'. */
static inline void app_poll(flit_ep_t *ep)
{
    double t0 = app_now();
    app_check(flit_poll(ep), "flit_poll");
    app_in_flit += app_now() - t0;
}

/* Where the timed part's t wall seconds went: in_flit of them inside flit
   calls; cpu seconds of CPU used meanwhile (below t: the process waited
   for a core, or slept in a wait). */
static inline void app_profile(const char *app, double t, double cpu, double in_flit)
{
    printf("%s: rank 0: %.3f s in flit calls, %.3f s computing; %.3f s of CPU "
           "(%.0f%% of the wall time)\n",
           app, in_flit, t - in_flit, cpu, t > 0 ? 100 * cpu / t : 0.0);
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

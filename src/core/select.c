/* SPDX-License-Identifier: BSD-3-Clause */
/* Which transports serve which peers (select.h). */
#include "core/select.h"

#include <stdio.h>

#include "core/job.h"
#include "util/config.h"

static const unsigned kinds[] = {FL_REACH_SELF, FL_REACH_HOST, FL_REACH_REMOTE};
#define NKINDS (sizeof kinds / sizeof kinds[0])

unsigned fl_select_kind(uint32_t r)
{
    if (r == fl_job.rank)
        return FL_REACH_SELF;
    return fl_job.host_of[r] == fl_job.host_of[fl_job.rank] ? FL_REACH_HOST
                                                            : FL_REACH_REMOTE;
}

/* FLIT_TRANSPORT names the i-th transport of the build (its bit). */
static bool named(int i)
{
    return (uint64_t)fl_cfg.transport & (UINT64_C(1) << i);
}

bool fl_select_allowed(const struct fl_transport *tp, unsigned kind)
{
    if (!(tp->reach & kind))
        return false;
    const struct fl_transport *const *all = fl_job.transports;
    int mine = -1;
    bool any = false; /* the list names one for this kind */
    for (int i = 0; all[i]; i++) {
        if (all[i] == tp)
            mine = i;
        any |= named(i) && (all[i]->reach & kind);
    }
    return any ? mine >= 0 && named(mine) : tp->by_default;
}

bool fl_select_may_use(const struct fl_transport *tp)
{
    for (unsigned k = 0; k < NKINDS; k++)
        if (fl_select_allowed(tp, kinds[k]))
            return true;
    return false;
}

/* The kinds of peer this job has, FL_REACH_* or'd. */
static unsigned kinds_present(void)
{
    unsigned present = FL_REACH_SELF;
    if (fl_job.local_size > 1)
        present |= FL_REACH_HOST;
    if (fl_job.nhosts > 1)
        present |= FL_REACH_REMOTE;
    return present;
}

bool fl_select_opens(const struct fl_transport *tp)
{
    unsigned present = kinds_present();
    for (unsigned k = 0; k < NKINDS; k++) {
        if (!(present & kinds[k]) || !fl_select_allowed(tp, kinds[k]))
            continue;
        const struct fl_transport *const *all = fl_job.transports;
        int i = 0;
        while (all[i] != tp && !fl_select_allowed(all[i], kinds[k]))
            i++;
        if (all[i] == tp)
            return true; /* the first for this kind */
    }
    return false;
}

void fl_select_describe(unsigned kind, char *buf, size_t len)
{
    size_t at = 0;
    buf[0] = '\0';
    for (int i = 0; fl_job.transports[i]; i++) {
        if (!fl_select_allowed(fl_job.transports[i], kind) || at >= len)
            continue;
        int n = snprintf(buf + at, len - at, "%s%s", at ? "," : "",
                         fl_job.transports[i]->name);
        at += n > 0 ? (size_t)n : 0;
    }
    if (!at)
        snprintf(buf, len, "none");
}

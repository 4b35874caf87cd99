/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * docs/groups.md's replicated counter over a group: every rank holds a copy;
 * updates are multicast in one total order, so every copy goes through the
 * same values. Run it as flitrun -n 3 group_counter.
 */
#include <flit/group.h>
#include <stdio.h>
#include <stdlib.h>

static void check(flit_status st, const char *what)
{
    if (st != FLIT_OK) {
        fprintf(stderr, "%s: %s\n", what, flit_strerror(st));
        exit(1);
    }
}

struct counter {
    int64_t value;
    uint64_t updates; /* applied here */
    uint64_t history; /* a hash of the values it went through */
    uint64_t heard;   /* copies that told their history */
    uint64_t agreed;  /* ... the same as this one's */
};

/* Every member runs this for every message, in the same order. An 8-byte
   message adds to the counter; a 16-byte one carries a copy's history. */
static void apply(flit_group_t *g, flit_group_msg_t *m, size_t total, void *user)
{
    (void)g;
    struct counter *c = user;
    int64_t msg[2];
    if ((total != 8 && total != 16) || flit_group_recv(m, msg, total) != FLIT_OK)
        return;
    if (total == 16) {
        c->heard++;
        c->agreed += (uint64_t)msg[1] == c->history;
        return;
    }
    c->value += msg[0];
    c->updates++;
    c->history = (c->history ^ (uint64_t)c->value) * 0x100000001b3ull;
}

int main(void)
{
    flit_ep_t *ep;
    flit_group_t *g;
    struct counter c = {0, 0, 0, 0, 0};
    check(flit_init(NULL), "flit_init");
    /* Collective: every rank; the endpoint comes with its group layer. */
    flit_ep_params_t ep_p = {.field_mask = FLIT_EP_PARAM_LAYERS, .layers = "group"};
    check(flit_ep_create(&ep_p, &ep), "flit_ep_create");
    /* The whole job (NULL, 0) as group 1; rank 0 is its sequencer. */
    check(flit_group_open(ep, 1, NULL, 0, NULL, apply, &c, &g), "flit_group_open");

    uint32_t me = flit_job_rank().idx, n = flit_job_size();
    for (int i = 0; i < 100; i++) {
        int64_t add = i % 2 ? (int64_t)me + 1 : -(int64_t)me;
        check(flit_group_send(g, &add, sizeof add), "flit_group_send");
    }
    while (c.updates < 100u * n) /* everyone's updates, applied in order */
        check(flit_wait(ep, -1), "flit_wait");
    /* The same values everywhere, in the same order: say so, and hear the
       others say it (ordered after every update, like all else). */
    int64_t said[2] = {0, (int64_t)c.history};
    check(flit_group_send(g, said, sizeof said), "flit_group_send");
    while (c.heard < n)
        check(flit_wait(ep, -1), "flit_wait");
    printf("counter: rank %u: %lld, the same history as %llu of %u copies\n", me,
           (long long)c.value, (unsigned long long)c.agreed, n);

    check(flit_group_destroy(g), "flit_group_destroy"); /* collective */
    check(flit_ep_destroy(ep), "flit_ep_destroy");
    check(flit_finalize(), "flit_finalize");
    return c.value == 50 * (int64_t)n && c.agreed == n ? 0 : 1; /* 50 net each */
}

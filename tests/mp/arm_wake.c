/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What the event-loop descriptor says, between two ranks (flit.h's
 * contract of flit_ep_fd and flit_ep_arm):
 *
 *  - work that arrived while nobody polled: rank 0, armed, asks rank 1
 *    for a message and waits on its descriptor without polling. Once it
 *    is readable, flit_ep_arm must answer FLIT_ERR_AGAIN (work waits),
 *    not FLIT_OK with the descriptor readable already (over UDP a
 *    protocol timer may wake it first: then FLIT_OK, and it waits again);
 *  - quiet: after flit_poll has taken everything and flit_ep_arm answered
 *    FLIT_OK, the descriptor stays unreadable while no peer sends (on
 *    shared memory for the whole window; over UDP it may turn readable for
 *    the protocol's own timers, and then a flit_poll and a new arm quiet
 *    it again);
 *  - a message sent to an armed, sleeping rank turns the descriptor
 *    readable, and flit_poll runs its handler.
 */
#include <flit/am.h>
#include <poll.h>

#include "mp.h"

enum { H_GO = 1, H_MSG = 2 };
#define QUIET_ROUNDS 5
#define QUIET_MS     200

static struct {
    flit_ep_t *ep;
    int fd;
    int go, msgs;
} g;

static void on_go(flit_token_t *t, void *buf, size_t n, const uint32_t *a, unsigned na,
                  void *user)
{
    (void)t, (void)buf, (void)n, (void)a, (void)na, (void)user;
    g.go++;
}

static void on_msg(flit_token_t *t, void *buf, size_t n, const uint32_t *a, unsigned na,
                   void *user)
{
    (void)t, (void)buf, (void)n, (void)a, (void)na, (void)user;
    g.msgs++;
}

static bool readable(int ms)
{
    struct pollfd p = {.fd = g.fd, .events = POLLIN};
    int r = poll(&p, 1, ms);
    CHECK(r >= 0);
    return r > 0;
}

/* Polls until flit_ep_arm answers FLIT_OK (bounded). */
static void arm_quiet(void)
{
    for (int i = 0; i < 1000; i++) {
        CHECK_OK(flit_poll(g.ep));
        flit_status st = flit_ep_arm(g.ep);
        if (st == FLIT_OK)
            return;
        CHECK_ST(st, FLIT_ERR_AGAIN);
    }
    FAIL("flit_ep_arm kept answering FLIT_ERR_AGAIN with nothing sent");
}

static void rank0(bool udp)
{
    CHECK_OK(flit_ep_fd(g.ep, &g.fd));
    /* 1. Work that arrived unpolled. */
    arm_quiet(); /* nothing can come before the go */
    CHECK_OK(flit_am_short(g.ep, flit_rank(1), flit_handler(H_GO), NULL, 0, 0));
    int timer_wakes = 0;
    for (;;) {
        if (!readable((int)(MP_WAIT_LIMIT_S * 1000)))
            FAIL("no wake-up for rank 1's message");
        flit_status st = flit_ep_arm(g.ep);
        if (st == FLIT_ERR_AGAIN)
            break;
        CHECK_OK(st);
        /* Over UDP the protocol's own timers (a retransmission, a delayed
           acknowledgement) may wake us first; on shared memory nothing
           but a sender does. Without a poll in between, a readable
           descriptor after FLIT_OK means the arm missed waiting work. */
        if (!udp || ++timer_wakes > 20)
            FAIL("woken %d times, and flit_ep_arm still answers FLIT_OK", timer_wakes);
    }
    MP_WAIT(g.ep, g.msgs == 1);

    /* 2. Quiet: rank 1 waits for the next go. */
    int wakes = 0;
    for (int r = 0; r < QUIET_ROUNDS; r++) {
        arm_quiet();
        if (readable(QUIET_MS))
            wakes++;
    }
    if (!udp && wakes)
        FAIL("%d of %d quiet windows woke up with nothing sent", wakes, QUIET_ROUNDS);
    if (wakes == QUIET_ROUNDS)
        FAIL("every quiet window woke up: the descriptor stays readable");

    /* 3. A message to the armed, sleeping endpoint. */
    arm_quiet();
    CHECK_OK(flit_am_short(g.ep, flit_rank(1), flit_handler(H_GO), NULL, 0, 0));
    double end = mp_now() + MP_WAIT_LIMIT_S;
    while (g.msgs < 2) {
        if (!readable((int)(MP_WAIT_LIMIT_S * 1000)))
            FAIL("no wake-up for rank 1's second message");
        CHECK_OK(flit_poll(g.ep));
        if (g.msgs < 2)
            arm_quiet(); /* woken by the protocol (UDP): sleep again */
        CHECK(mp_now() < end);
    }
    printf("arm_wake: rank 0 OK (%d protocol wake-ups in %d quiet windows)\n", wakes,
           QUIET_ROUNDS);
}

static void rank1(void)
{
    for (int i = 1; i <= 2; i++) {
        MP_WAIT(g.ep, g.go == i);
        CHECK_OK(flit_am_short(g.ep, flit_rank(0), flit_handler(H_MSG), NULL, 0, 0));
    }
    printf("arm_wake: rank 1 OK\n");
}

int main(void)
{
    CHECK_OK(flit_init(NULL));
    if (flit_job_size() != 2) {
        fprintf(stderr, "arm_wake runs with 2 ranks\n");
        return TEST_SKIP;
    }
    CHECK_OK(flit_ep_create(NULL, &g.ep));
    CHECK_OK(flit_am_register(g.ep, flit_handler(H_GO), on_go, NULL));
    CHECK_OK(flit_am_register(g.ep, flit_handler(H_MSG), on_msg, NULL));
    CHECK_OK(flit_am_set_returned_handler(g.ep, mp_returned_fail, NULL));
    CHECK_OK(flit_barrier(g.ep));
    flit_peer_info_t info = {.struct_size = sizeof info};
    CHECK_OK(flit_ep_peer_info(g.ep, flit_rank(1 - flit_job_rank().idx), &info));
    if (flit_job_rank().idx == 0)
        rank0(strcmp(info.transport, "shm") != 0);
    else
        rank1();
    CHECK_OK(flit_barrier(g.ep));
    CHECK_OK(flit_finalize());
    return 0;
}

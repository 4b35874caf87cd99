/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Event-loop integration (flit_ep_fd / flit_ep_arm) in a job of one rank.
 * flit.h: "flit_ep_fd gives a file descriptor that stays readable
 * (level-triggered) from the moment the armed endpoint has work until
 * flit_poll runs"; flit_ep_arm answers FLIT_OK when it is safe to sleep and
 * FLIT_ERR_AGAIN when work is already waiting.
 *
 * Here the work is a message to ourselves, sent after arming: from a second
 * thread of a FLIT_THREAD_SAFE endpoint (the documented event loop sleeping
 * in poll() on the fd while another thread sends), and from the same
 * thread. Either way the fd must turn readable, or the loop sleeps forever.
 */
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>

#include "unit.h"

#define H_COUNT 1

static int runs;

static void count_handler(flit_token_t *t, void *buf, size_t nbytes, const uint32_t *args,
                          unsigned nargs, void *user)
{
    (void)t, (void)buf, (void)nbytes, (void)args, (void)nargs, (void)user;
    runs++;
}

static int readable(int fd)
{
    struct pollfd p = {.fd = fd, .events = POLLIN};
    int r = poll(&p, 1, 0);
    CHECK(r >= 0);
    return r > 0 && (p.revents & POLLIN);
}

static flit_ep_t *ep;

static void *sender(void *arg)
{
    (void)arg;
    CHECK_OK(flit_am_short(ep, flit_rank(0), flit_handler(H_COUNT), NULL, 0, 0));
    return NULL;
}

int main(void)
{
    unit_clean_env();
    CHECK_OK(flit_init(NULL));
    flit_ep_params_t p = {.field_mask = FLIT_EP_PARAM_THREAD_MODE,
                          .thread_mode = FLIT_THREAD_SAFE};
    CHECK_OK(flit_ep_create(&p, &ep));
    CHECK_OK(flit_am_register(ep, flit_handler(H_COUNT), count_handler, NULL));
    int fd = -1;
    CHECK_OK(flit_ep_fd(ep, &fd));
    CHECK(fd >= 0 && fcntl(fd, F_GETFD) >= 0);

    /* Idle and armed: safe to sleep, and the fd says nothing. */
    CHECK_OK(flit_ep_arm(ep));
    CHECK(!readable(fd));
    /* Work pending before arming: arm says so. */
    CHECK_OK(flit_am_short(ep, flit_rank(0), flit_handler(H_COUNT), NULL, 0, 0));
    CHECK_ST(flit_ep_arm(ep), FLIT_ERR_AGAIN);
    CHECK_OK(flit_poll(ep));
    CHECK(runs == 1);
    CHECK_OK(flit_ep_arm(ep));
    CHECK(!readable(fd));
    CHECK_OK(flit_poll(ep));

    /* Armed, then another thread sends to us (and is done: joined): the
       sleeper must wake. */
    CHECK_OK(flit_ep_arm(ep));
    pthread_t t;
    CHECK(pthread_create(&t, NULL, sender, NULL) == 0);
    CHECK(pthread_join(t, NULL) == 0);
    if (!readable(fd))
        SOFT_FAIL("armed endpoint got a message from another thread but its fd did not "
                  "turn readable (an event loop following flit.h would sleep forever)");
    CHECK_OK(flit_poll(ep));
    CHECK(runs == 2);
    /* flit_poll ran: quiet again. */
    CHECK_OK(flit_ep_arm(ep));
    CHECK(!readable(fd));
    CHECK_OK(flit_poll(ep));

    /* Armed, then the same thread sends: same rule. */
    CHECK_OK(flit_ep_arm(ep));
    CHECK_OK(flit_am_short(ep, flit_rank(0), flit_handler(H_COUNT), NULL, 0, 0));
    if (!readable(fd))
        SOFT_FAIL("armed endpoint has a message to itself but its fd is not readable");
    CHECK_OK(flit_poll(ep));
    CHECK(runs == 3);
    CHECK_OK(flit_finalize());
    return unit_exit_status();
}

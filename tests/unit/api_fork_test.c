/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fork() after flit_init: the child shares its parent's rings and segments,
 * so every call it makes answers FLIT_ERR_FORKED and touches nothing; the
 * parent keeps working. The child reports through its exit status.
 */
#include <sys/wait.h>
#include <unistd.h>

#include "unit.h"

#define H_COUNT 1

static int runs;

static void count_handler(flit_token_t *t, void *buf, size_t nbytes, const uint32_t *args,
                          unsigned nargs, void *user)
{
    (void)t, (void)buf, (void)nbytes, (void)user;
    CHECK(nargs == 1);
    runs += (int)args[0];
}

static void poll_until(flit_ep_t *ep, int want)
{
    for (int i = 0; i < 100000 && runs < want; i++)
        CHECK_OK(flit_poll(ep));
    if (runs != want)
        FAIL("handler count %d, expected %d", runs, want);
}

/* Everything the child may try: exits 0 if every call said FORKED. */
static void child(flit_ep_t *ep)
{
    uint32_t one = 1;
    static uint8_t buf[64];
    flit_ep_t *e = NULL;
    CHECK_ST(flit_poll(ep), FLIT_ERR_FORKED);
    CHECK_ST(flit_wait(ep, 0), FLIT_ERR_FORKED);
    CHECK_ST(flit_wait(ep, -1), FLIT_ERR_FORKED);
    CHECK_ST(flit_am_short(ep, flit_rank(0), flit_handler(H_COUNT), &one, 1, 0),
             FLIT_ERR_FORKED);
    CHECK_ST(flit_am_medium(ep, flit_rank(0), flit_handler(H_COUNT), buf, 8, &one, 1, 0),
             FLIT_ERR_FORKED);
    CHECK_ST(flit_am_long(ep, flit_rank(0), flit_handler(H_COUNT), buf, 8, 0, &one, 1, 0),
             FLIT_ERR_FORKED);
    CHECK_ST(flit_barrier(ep), FLIT_ERR_FORKED);
    CHECK_ST(flit_ep_arm(ep), FLIT_ERR_FORKED);
    CHECK_ST(flit_am_register(ep, flit_handler(2), count_handler, NULL), FLIT_ERR_FORKED);
    CHECK_ST(flit_ep_create(NULL, &e), FLIT_ERR_FORKED);
    CHECK(e == NULL);
    CHECK_ST(flit_ep_destroy(ep), FLIT_ERR_FORKED);
    CHECK_ST(flit_init(NULL), FLIT_ERR_FORKED);
    CHECK_ST(flit_finalize(), FLIT_ERR_FORKED);
    /* Still forked after all that. */
    CHECK_ST(flit_poll(ep), FLIT_ERR_FORKED);
    _exit(0);
}

int main(void)
{
    unit_clean_env();
    CHECK_OK(flit_init(NULL));
    flit_ep_params_t p = {.field_mask = FLIT_EP_PARAM_SEGMENT, .segment_size = 4096};
    flit_ep_t *ep;
    CHECK_OK(flit_ep_create(&p, &ep));
    CHECK_OK(flit_am_register(ep, flit_handler(H_COUNT), count_handler, NULL));
    uint32_t one = 1;
    CHECK_OK(flit_am_short(ep, flit_rank(0), flit_handler(H_COUNT), &one, 1, 0));
    poll_until(ep, 1);

    /* A message is pending in the parent's ring when the child is made: the
       child must neither run it nor take it away. */
    CHECK_OK(flit_am_short(ep, flit_rank(0), flit_handler(H_COUNT), &one, 1, 0));
    fflush(NULL);
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        child(ep);
        _exit(2);
    }
    int status = 0;
    CHECK(waitpid(pid, &status, 0) == pid);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
        FAIL("child: %s %d", WIFEXITED(status) ? "exit status" : "signal",
             WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));

    /* The parent goes on as if nothing happened. */
    poll_until(ep, 2);
    for (int i = 0; i < 10; i++)
        CHECK_OK(flit_am_short(ep, flit_rank(0), flit_handler(H_COUNT), &one, 1, 0));
    uint8_t buf[100] = {0};
    CHECK_OK(
        flit_am_medium(ep, flit_rank(0), flit_handler(H_COUNT), buf, 100, &one, 1, 0));
    CHECK_OK(
        flit_am_long(ep, flit_rank(0), flit_handler(H_COUNT), buf, 100, 0, &one, 1, 0));
    poll_until(ep, 14);
    CHECK_OK(flit_barrier(ep));
    CHECK_OK(flit_ep_destroy(ep));
    CHECK_OK(flit_finalize());
    return 0;
}

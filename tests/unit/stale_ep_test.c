/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Stale endpoint handles: a destroyed endpoint's struct stays (marked
 * gone) until flit_finalize, so its handle never names another endpoint:
 * every call on it answers FLIT_ERR_CLOSED while a new endpoint made after
 * it works, and FLIT_ERR_FINALIZED after flit_finalize (when the structs
 * are freed, no call reads them: under ASan nothing reads freed memory).
 * It guards what the handle-table change of the other layers left as it
 * was: endpoints were never reused, and pass the same on 546760f.
 */
#include <flit/flit.h>

#include "unit.h"

/* Every call that takes an endpoint, on ep: each must answer want. */
static void calls_answer(flit_ep_t *ep, flit_status want)
{
    flit_thread_mode m;
    uint64_t tag;
    int fd;
    void *addr;
    size_t size;
    flit_handler_t h;
    flit_stats_t st = {.struct_size = sizeof st};
    CHECK_ST(flit_ep_destroy(ep), want);
    CHECK_ST(flit_ep_thread_mode(ep, &m), want);
    CHECK_ST(flit_ep_tag(ep, &tag), want);
    CHECK_ST(flit_ep_set_tag(ep, 1), want);
    CHECK_ST(flit_ep_fd(ep, &fd), want);
    CHECK_ST(flit_ep_arm(ep), want);
    CHECK_ST(flit_ep_stats(ep, &st), want);
    CHECK_ST(flit_ep_segment(ep, &addr, &size), want);
    CHECK_ST(flit_ep_reserve_handlers(ep, 1, &h), want);
    CHECK_ST(flit_poll(ep), want);
    CHECK_ST(flit_wait(ep, 0), want);
    CHECK_ST(flit_barrier(ep), want);
    CHECK_ST(flit_am_short(ep, flit_rank(0), flit_handler(1), NULL, 0, 0), want);
}

int main(void)
{
    unit_clean_env();
    CHECK_OK(flit_init(NULL));
    flit_ep_t *old, *fresh;
    CHECK_OK(flit_ep_create(NULL, &old));
    CHECK_OK(flit_ep_destroy(old));
    CHECK_OK(flit_ep_create(NULL, &fresh));
    CHECK(fresh != old);
    calls_answer(old, FLIT_ERR_CLOSED);
    CHECK_OK(flit_poll(fresh)); /* untouched */
    flit_thread_mode m;
    CHECK_OK(flit_ep_thread_mode(fresh, &m));
    CHECK_OK(flit_ep_destroy(fresh));
    CHECK_OK(flit_finalize());
    calls_answer(old, FLIT_ERR_FINALIZED);
    calls_answer(fresh, FLIT_ERR_FINALIZED);
    return 0;
}

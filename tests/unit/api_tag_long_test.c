/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * AM-2 tags protect an endpoint: a message whose tag differs from the
 * destination's is refused and returned (FLIT_ERR_BAD_TAG), never
 * delivered; DESIGN.md invariant 4: "Receiver decides what lands in its
 * memory ... Packets from outside the job (wrong job key, unknown address,
 * wrong tag) are dropped and counted, never delivered."
 *
 * For a long message that means its payload must not land in the
 * destination's segment either. Both kinds of segment are tried: one the
 * program supplies and one the library allocates.
 */
#include <string.h>

#include "unit.h"

#define SEG_SIZE 4096u
#define H_COUNT  1

static uint8_t user_seg[SEG_SIZE];
static int runs, returned;
static flit_status returned_reason;

static void count_handler(flit_token_t *t, void *buf, size_t nbytes, const uint32_t *args,
                          unsigned nargs, void *user)
{
    (void)t, (void)buf, (void)nbytes, (void)args, (void)nargs, (void)user;
    runs++;
}

static void on_returned(flit_ep_t *ep, const flit_returned_t *info, void *user)
{
    (void)ep, (void)user;
    returned++;
    returned_reason = info->reason;
}

static void try_segment(void *addr)
{
    flit_ep_params_t p = {.field_mask = FLIT_EP_PARAM_SEGMENT,
                          .segment_addr = addr,
                          .segment_size = SEG_SIZE};
    flit_ep_t *ep;
    CHECK_OK(flit_ep_create(&p, &ep));
    CHECK_OK(flit_am_register(ep, flit_handler(H_COUNT), count_handler, NULL));
    CHECK_OK(flit_am_set_returned_handler(ep, on_returned, NULL));
    uint8_t *seg;
    size_t size;
    CHECK_OK(flit_ep_segment(ep, (void **)&seg, &size));
    CHECK(seg != NULL && size == SEG_SIZE);
    memset(seg, 0, SEG_SIZE);

    uint64_t tag;
    CHECK_OK(flit_ep_tag(ep, &tag));
    CHECK_OK(flit_ep_set_peer_tag(ep, flit_rank(0), ~tag));
    static uint8_t data[1000];
    memset(data, 0xab, sizeof data);
    runs = returned = 0;
    CHECK_OK(flit_am_long(ep, flit_rank(0), flit_handler(H_COUNT), data, sizeof data, 100,
                          NULL, 0, 0));
    for (int i = 0; i < 1000 && !returned; i++)
        CHECK_OK(flit_poll(ep));
    CHECK(returned == 1 && returned_reason == FLIT_ERR_BAD_TAG && runs == 0);
    size_t changed = 0;
    for (size_t i = 0; i < SEG_SIZE; i++)
        changed += seg[i] != 0;
    if (changed)
        SOFT_FAIL("a long message refused for its tag wrote %zu bytes of the %s segment",
                  changed, addr ? "program's" : "library's");

    /* With the right tag it lands. */
    memset(seg, 0, SEG_SIZE);
    CHECK_OK(flit_ep_set_peer_tag(ep, flit_rank(0), tag));
    CHECK_OK(flit_am_long(ep, flit_rank(0), flit_handler(H_COUNT), data, sizeof data, 100,
                          NULL, 0, 0));
    for (int i = 0; i < 1000 && !runs; i++)
        CHECK_OK(flit_poll(ep));
    CHECK(runs == 1 && seg[100] == 0xab && seg[1099] == 0xab && seg[1100] == 0);
    CHECK_OK(flit_ep_destroy(ep));
}

int main(void)
{
    unit_clean_env();
    CHECK_OK(flit_init(NULL));
    try_segment(user_seg);
    try_segment(NULL);
    CHECK_OK(flit_finalize());
    return unit_exit_status();
}

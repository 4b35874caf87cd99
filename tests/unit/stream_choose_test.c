/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * One copy or two by measurement (src/stream/choose.c), without a peer:
 *  - size classes: below 64 KiB one class, then powers of two, the last
 *    taking every larger size;
 *  - a rate is set by its first measurement and moves a quarter of the way
 *    to each later one; under a KiB nothing is noted, a zero cost reads 1;
 *  - a receiver's answers to pull offers: pulled first (nothing measured),
 *    then the rings once, then the cheaper way, the rings again every
 *    FL_ST_EXPLORE-th offer times how much dearer they were (at most
 *    FL_ST_EXPLORE_MAX times) while pulls win, and every offer pulled
 *    while the rings win (the sender offers only to measure the pull then);
 *  - the advice: classes not measured and those where pulling is cheaper;
 *    costs that change turn it, class by class.
 */
#include <stdio.h>
#include <string.h>

#include "stream/choose.h"
#include "unit.h"

static void classes(void)
{
    CHECK(fl_st_class(0) == 0 && fl_st_class(16u << 10) == 0);
    CHECK(fl_st_class((64u << 10) - 1) == 0 && fl_st_class(64u << 10) == 1);
    CHECK(fl_st_class((128u << 10) - 1) == 1 && fl_st_class(128u << 10) == 2);
    CHECK(fl_st_class(1u << 20) == 5 && fl_st_class(4u << 20) == 7);
    CHECK(fl_st_class(1ull << 30) == FL_ST_CLASSES - 1);
    CHECK(fl_st_class(UINT64_MAX) == FL_ST_CLASSES - 1);
}

static void rates(void)
{
    uint32_t r = 0;
    fl_st_rate_note(&r, 512, 1000); /* under a KiB: not noted */
    CHECK(r == 0);
    fl_st_rate_note(&r, 64u << 10, 64000); /* 1000 ns a KiB */
    CHECK(r == 1000);
    fl_st_rate_note(&r, 64u << 10, 64u * 2000); /* a quarter of the way to 2000 */
    CHECK(r == 1250);
    fl_st_rate_note(&r, 1u << 20, 0);
    CHECK(r == (3 * 1250 + 1) / 4);
    uint32_t z = 0;
    fl_st_rate_note(&z, 4096, 0); /* a cost of nothing still reads as measured */
    CHECK(z == 1);
    uint32_t big = 0;
    fl_st_rate_note(&big, 1024, UINT64_MAX);
    CHECK(big == UINT32_MAX);
}

static void answers(void)
{
    struct fl_st_rates r;
    memset(&r, 0, sizeof r);
    unsigned c = fl_st_class(256u << 10);
    CHECK(fl_st_take_pull(&r, c)); /* nothing measured: pull */
    r.pull[c] = 100;
    CHECK(!fl_st_take_pull(&r, c));    /* the rings not measured: packets */
    CHECK(fl_st_advice(&r) == 0xffff); /* nothing decided yet */
    r.ring[c] = 300;
    CHECK(fl_st_advice(&r) == 0xffff); /* pulls cheaper here */
    /* pulls win, the rings 3 times dearer: pulled, but the rings again
       every 3 * FL_ST_EXPLORE-th offer */
    unsigned pulled = 0, declined = 0;
    for (unsigned i = 0; i < 12 * FL_ST_EXPLORE; i++)
        fl_st_take_pull(&r, c) ? pulled++ : declined++;
    CHECK(declined == 4 && pulled == 12 * FL_ST_EXPLORE - 4);
    /* barely dearer: every FL_ST_EXPLORE-th; far dearer: at most
       FL_ST_EXPLORE_MAX times that */
    r.ring[c] = 150;
    r.since[c] = 0;
    pulled = declined = 0;
    for (unsigned i = 0; i < 4 * FL_ST_EXPLORE; i++)
        fl_st_take_pull(&r, c) ? pulled++ : declined++;
    CHECK(declined == 4);
    r.ring[c] = 100000;
    r.since[c] = 0;
    pulled = declined = 0;
    for (unsigned i = 0; i < 2 * FL_ST_EXPLORE * FL_ST_EXPLORE_MAX; i++)
        fl_st_take_pull(&r, c) ? pulled++ : declined++;
    CHECK(declined == 2);
    r.ring[c] = 300;
    /* the rings win: every offer (the sender's try) is pulled, to measure it */
    r.ring[c] = 50;
    CHECK(fl_st_advice(&r) == (0xffffu & ~(1u << c)));
    for (unsigned i = 0; i < 2 * FL_ST_EXPLORE; i++)
        CHECK(fl_st_take_pull(&r, c));
    /* costs that change turn the advice back */
    for (int i = 0; i < 8; i++)
        fl_st_rate_note(&r.ring[c], 64u << 10, 64u * 400);
    CHECK(r.ring[c] > r.pull[c] && fl_st_advice(&r) == 0xffff);
    /* classes apart; a class past the last is the last */
    r.pull[0] = 10, r.ring[0] = 5;
    r.pull[FL_ST_CLASSES - 1] = 10, r.ring[FL_ST_CLASSES - 1] = 5;
    CHECK(fl_st_advice(&r) == (0xffffu & ~1u & ~(1u << (FL_ST_CLASSES - 1))));
    CHECK(fl_st_take_pull(&r, FL_ST_CLASSES + 3)); /* the last class's try */
}

int main(void)
{
    classes();
    rates();
    answers();
    printf("stream_choose_test: OK\n");
    return 0;
}

/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The stream rows of the stale-handle audit (issue 36 item 5). A receive
 * handle kept past its handler answers FLIT_ERR_BAD_TOKEN on every call
 * (remaining 0, rank UINT32_MAX, ep NULL) while a later message's handler
 * runs in the same pooled slot, whose own bytes stay untouched: before,
 * the stale handle read the later handler's message. A send handle kept
 * past flit_stream_end answers FLIT_ERR_INVALID_ARG once its slot carries
 * the next message, which goes out untouched: before, the stale send
 * answered FLIT_OK and appended to the next message (whose own send then
 * failed with FLIT_ERR_TOO_LARGE). Handles of a destroyed endpoint are
 * refused without reading its freed state (ASan), and so are values that
 * never were handles.
 */
#include <flit/stream.h>
#include <string.h>

#include "unit.h"

#define H_MSG  3
#define LEN    16
#define ROUNDS 300

static flit_stream_t *kept_in;
static flit_stream_out_t *kept_out;
static int got, bad;
static uint8_t last[LEN];

static void fill(uint8_t *b, int n)
{
    for (int i = 0; i < LEN; i++)
        b[i] = (uint8_t)(n * 7 + i);
}

static void check_in(const char *where)
{
    uint8_t b[4];
    const void *p;
    size_t n;
    struct iovec iov = {b, sizeof b};
    flit_status st[6] = {flit_stream_recv(kept_in, b, sizeof b),
                         flit_stream_recvv(kept_in, &iov, 1),
                         flit_stream_skip(kept_in, 1),
                         flit_stream_peek(kept_in, &p, &n),
                         flit_stream_park(kept_in),
                         flit_stream_unpark(kept_in)};
    for (int i = 0; i < 6; i++)
        if (st[i] != FLIT_ERR_BAD_TOKEN && bad++ < 3)
            fprintf(stderr, "stale receive handle %s (message %d): call %d answered %s\n",
                    where, got, i, flit_status_name(st[i]));
    if ((flit_stream_remaining(kept_in) != 0 ||
         flit_stream_rank(kept_in).idx != UINT32_MAX ||
         flit_stream_ep(kept_in) != NULL) &&
        bad++ < 3)
        fprintf(stderr, "stale receive handle %s: remaining %zu, rank %u\n", where,
                flit_stream_remaining(kept_in), flit_stream_rank(kept_in).idx);
}

static void on_msg(flit_stream_t *s, size_t total, void *user)
{
    (void)user;
    CHECK(total == LEN);
    if (!kept_in)
        kept_in = s; /* kept past its handler: a misuse */
    else
        check_in("in a later handler");
    CHECK(flit_stream_remaining(s) == LEN && flit_stream_rank(s).idx == 0);
    CHECK_OK(flit_stream_recv(s, last, LEN));
    got++;
}

static void check_out(const char *where)
{
    uint8_t x[4] = {0xee, 0xee, 0xee, 0xee};
    struct iovec iov = {x, sizeof x};
    flit_status st[3] = {flit_stream_send(kept_out, x, sizeof x),
                         flit_stream_sendv(kept_out, &iov, 1), flit_stream_end(kept_out)};
    for (int i = 0; i < 3; i++)
        if (st[i] != FLIT_ERR_INVALID_ARG && bad++ < 3)
            fprintf(stderr, "stale send handle %s (message %d): call %d answered %s\n",
                    where, got, i, flit_status_name(st[i]));
}

/* Message n, sent in two pieces, with the kept send handle tried between
   them (its slot is this message's now); it must arrive as sent. */
static void one_message(flit_ep_t *ep, int n)
{
    uint8_t b[LEN];
    fill(b, n);
    flit_stream_out_t *s;
    CHECK_OK(flit_stream_begin(ep, flit_rank(0), flit_handler(H_MSG), LEN, 0, &s));
    CHECK_OK(flit_stream_send(s, b, LEN / 2));
    if (kept_out)
        check_out("while the next message is open");
    CHECK_OK(flit_stream_send(s, b + LEN / 2, LEN / 2));
    CHECK_OK(flit_stream_end(s));
    if (!kept_out)
        kept_out = s; /* kept past its end: a misuse */
    int want = got + 1;
    for (int i = 0; i < 10000 && got < want; i++)
        CHECK_OK(flit_poll(ep));
    if (got != want || memcmp(last, b, LEN) != 0)
        FAIL("message %d: %d handlers ran (want %d), bytes %s", n, got, want,
             memcmp(last, b, LEN) ? "changed" : "as sent");
}

static flit_ep_t *open_ep(void)
{
    flit_ep_t *ep;
    CHECK_OK(flit_ep_create(NULL, &ep));
    CHECK_OK(flit_stream_register(ep, flit_handler(H_MSG), on_msg, NULL));
    return ep;
}

int main(void)
{
    unit_clean_env();
    CHECK_OK(flit_init(NULL));
    flit_ep_t *ep = open_ep();
    for (int n = 0; n < ROUNDS; n++) {
        one_message(ep, n);
        check_in("outside any handler");
        check_out("between messages");
    }
    if (bad)
        FAIL("stale stream handles were taken %d times", bad);

    /* Their endpoint destroyed and a new one made: still refused. */
    CHECK_OK(flit_ep_destroy(ep));
    check_in("of a destroyed endpoint");
    check_out("of a destroyed endpoint");
    ep = open_ep();
    for (int n = ROUNDS; n < 2 * ROUNDS; n++)
        one_message(ep, n);
    if (bad)
        FAIL("a destroyed endpoint's stream handles were taken %d times", bad);

    /* Values that never were handles. */
    static const uintptr_t forged[] = {1, 3, 8, 0x1001, UINTPTR_MAX, UINTPTR_MAX - 1};
    uint8_t b[4];
    for (size_t i = 0; i < sizeof forged / sizeof forged[0]; i++) {
        CHECK_ST(flit_stream_recv((flit_stream_t *)forged[i], b, 1), FLIT_ERR_BAD_TOKEN);
        CHECK_ST(flit_stream_send((flit_stream_out_t *)forged[i], b, 1),
                 FLIT_ERR_INVALID_ARG);
    }
    CHECK_ST(flit_stream_recv(NULL, b, 1), FLIT_ERR_INVALID_ARG);
    CHECK_ST(flit_stream_send(NULL, b, 1), FLIT_ERR_INVALID_ARG);
    CHECK_OK(flit_ep_destroy(ep));
    CHECK_OK(flit_finalize());
    return 0;
}

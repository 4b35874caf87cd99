/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Every AM-2 message family through AMUDP's interface, as AMUDP's own test
 * programs exercise it: short, medium and long (Xfer and XferAsync)
 * requests with 0 to 16 arguments, each answered by the matching reply;
 * arguments over the full 32-bit range, payloads up to AM_MaxMedium() and
 * AM_MaxLong(); then a reduction, get and put emulated with active
 * messages, AllGather, and the statistics, aggregated over the job and
 * printed at the end.
 *
 *   amudp_all [ROUNDS]       every rank sends to the next one
 *
 * Started as `amudp_all NPROCS L [ROUNDS]` or under flitrun.
 */
#include <stdint.h>
#include <string.h>

#include "amudp_test.h"

#define FAMILY 17 /* 0 .. 16 arguments */
enum {
    H_REQ_S = 1,
    H_REP_S = 18,
    H_REQ_M = 35,
    H_REP_M = 52,
    H_REQ_L = 69,
    H_REP_L = 86
};
enum { H_SUM = 110, H_RESULT, H_GET, H_GOT, H_PUT, H_PUT_ACK, H_INT_MEDIUM };

static eb_t eb;
static ep_t ep;
static int me, nprocs;
static char *seg;
static volatile int replies, sum_msgs, result_in, got, put_acks, int_medium;
static int32_t sum, result;

static int32_t arg_value(int n, int i)
{
    return (int32_t)(0x80000000u + (uint32_t)n * 1000u + (uint32_t)i * 7u);
}

static size_t bulk_len(int n, size_t max)
{
    return n == FAMILY - 1 ? max : (size_t)n * 3797u + 1u;
}

static unsigned char pattern(int n, size_t k, int src)
{
    return (unsigned char)(k * 31u + (unsigned)n * 7u + (unsigned)src);
}

/* Where requests of n arguments from src land, and the replies to them. */
static uintptr_t req_off(int n)
{
    return (uintptr_t)n * AM_MaxLong();
}

static uintptr_t rep_off(int n)
{
    return (uintptr_t)(FAMILY + n) * AM_MaxLong();
}

/* clang-format off */
#define P0
#define P1 P0, int32_t a0
#define P2 P1, int32_t a1
#define P3 P2, int32_t a2
#define P4 P3, int32_t a3
#define P5 P4, int32_t a4
#define P6 P5, int32_t a5
#define P7 P6, int32_t a6
#define P8 P7, int32_t a7
#define P9 P8, int32_t a8
#define P10 P9, int32_t a9
#define P11 P10, int32_t a10
#define P12 P11, int32_t a11
#define P13 P12, int32_t a12
#define P14 P13, int32_t a13
#define P15 P14, int32_t a14
#define P16 P15, int32_t a15
#define V0
#define V1 V0, a0
#define V2 V1, a1
#define V3 V2, a2
#define V4 V3, a3
#define V5 V4, a4
#define V6 V5, a5
#define V7 V6, a6
#define V8 V7, a7
#define V9 V8, a8
#define V10 V9, a9
#define V11 V10, a10
#define V12 V11, a11
#define V13 V12, a12
#define V14 V13, a13
#define V15 V14, a14
#define V16 V15, a15
/* clang-format on */

static int request_short(ep_t e, int dest, handler_t h, int n, const int32_t *a)
{
    switch (n) {
    case 0:
        return AM_Request0(e, dest, h);
    case 1:
        return AM_Request1(e, dest, h, a[0]);
    case 2:
        return AM_Request2(e, dest, h, a[0], a[1]);
    case 3:
        return AM_Request3(e, dest, h, a[0], a[1], a[2]);
    case 4:
        return AM_Request4(e, dest, h, a[0], a[1], a[2], a[3]);
    case 5:
        return AM_Request5(e, dest, h, a[0], a[1], a[2], a[3], a[4]);
    case 6:
        return AM_Request6(e, dest, h, a[0], a[1], a[2], a[3], a[4], a[5]);
    case 7:
        return AM_Request7(e, dest, h, a[0], a[1], a[2], a[3], a[4], a[5], a[6]);
    case 8:
        return AM_Request8(e, dest, h, a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7]);
    case 9:
        return AM_Request9(e, dest, h, a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7],
                           a[8]);
    case 10:
        return AM_Request10(e, dest, h, a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7],
                            a[8], a[9]);
    case 11:
        return AM_Request11(e, dest, h, a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7],
                            a[8], a[9], a[10]);
    case 12:
        return AM_Request12(e, dest, h, a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7],
                            a[8], a[9], a[10], a[11]);
    case 13:
        return AM_Request13(e, dest, h, a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7],
                            a[8], a[9], a[10], a[11], a[12]);
    case 14:
        return AM_Request14(e, dest, h, a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7],
                            a[8], a[9], a[10], a[11], a[12], a[13]);
    case 15:
        return AM_Request15(e, dest, h, a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7],
                            a[8], a[9], a[10], a[11], a[12], a[13], a[14]);
    case 16:
        return AM_Request16(e, dest, h, a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7],
                            a[8], a[9], a[10], a[11], a[12], a[13], a[14], a[15]);
    }
    return AM_ERR_BAD_ARG;
}

static int request_medium(ep_t e, int dest, handler_t h, void *buf, size_t len, int n,
                          const int32_t *a)
{
    switch (n) {
    case 0:
        return AM_RequestI0(e, dest, h, buf, len);
    case 1:
        return AM_RequestI1(e, dest, h, buf, len, a[0]);
    case 2:
        return AM_RequestI2(e, dest, h, buf, len, a[0], a[1]);
    case 3:
        return AM_RequestI3(e, dest, h, buf, len, a[0], a[1], a[2]);
    case 4:
        return AM_RequestI4(e, dest, h, buf, len, a[0], a[1], a[2], a[3]);
    case 5:
        return AM_RequestI5(e, dest, h, buf, len, a[0], a[1], a[2], a[3], a[4]);
    case 6:
        return AM_RequestI6(e, dest, h, buf, len, a[0], a[1], a[2], a[3], a[4], a[5]);
    case 7:
        return AM_RequestI7(e, dest, h, buf, len, a[0], a[1], a[2], a[3], a[4], a[5],
                            a[6]);
    case 8:
        return AM_RequestI8(e, dest, h, buf, len, a[0], a[1], a[2], a[3], a[4], a[5],
                            a[6], a[7]);
    case 9:
        return AM_RequestI9(e, dest, h, buf, len, a[0], a[1], a[2], a[3], a[4], a[5],
                            a[6], a[7], a[8]);
    case 10:
        return AM_RequestI10(e, dest, h, buf, len, a[0], a[1], a[2], a[3], a[4], a[5],
                             a[6], a[7], a[8], a[9]);
    case 11:
        return AM_RequestI11(e, dest, h, buf, len, a[0], a[1], a[2], a[3], a[4], a[5],
                             a[6], a[7], a[8], a[9], a[10]);
    case 12:
        return AM_RequestI12(e, dest, h, buf, len, a[0], a[1], a[2], a[3], a[4], a[5],
                             a[6], a[7], a[8], a[9], a[10], a[11]);
    case 13:
        return AM_RequestI13(e, dest, h, buf, len, a[0], a[1], a[2], a[3], a[4], a[5],
                             a[6], a[7], a[8], a[9], a[10], a[11], a[12]);
    case 14:
        return AM_RequestI14(e, dest, h, buf, len, a[0], a[1], a[2], a[3], a[4], a[5],
                             a[6], a[7], a[8], a[9], a[10], a[11], a[12], a[13]);
    case 15:
        return AM_RequestI15(e, dest, h, buf, len, a[0], a[1], a[2], a[3], a[4], a[5],
                             a[6], a[7], a[8], a[9], a[10], a[11], a[12], a[13], a[14]);
    case 16:
        return AM_RequestI16(e, dest, h, buf, len, a[0], a[1], a[2], a[3], a[4], a[5],
                             a[6], a[7], a[8], a[9], a[10], a[11], a[12], a[13], a[14],
                             a[15]);
    }
    return AM_ERR_BAD_ARG;
}

static int request_long(ep_t e, int dest, uintptr_t off, handler_t h, void *buf,
                        size_t len, int n, const int32_t *a)
{
    switch (n) {
    case 0:
        return AM_RequestXfer0(e, dest, off, h, buf, len);
    case 1:
        return AM_RequestXferAsync1(e, dest, off, h, buf, len, a[0]);
    case 2:
        return AM_RequestXfer2(e, dest, off, h, buf, len, a[0], a[1]);
    case 3:
        return AM_RequestXferAsync3(e, dest, off, h, buf, len, a[0], a[1], a[2]);
    case 4:
        return AM_RequestXfer4(e, dest, off, h, buf, len, a[0], a[1], a[2], a[3]);
    case 5:
        return AM_RequestXferAsync5(e, dest, off, h, buf, len, a[0], a[1], a[2], a[3],
                                    a[4]);
    case 6:
        return AM_RequestXfer6(e, dest, off, h, buf, len, a[0], a[1], a[2], a[3], a[4],
                               a[5]);
    case 7:
        return AM_RequestXferAsync7(e, dest, off, h, buf, len, a[0], a[1], a[2], a[3],
                                    a[4], a[5], a[6]);
    case 8:
        return AM_RequestXfer8(e, dest, off, h, buf, len, a[0], a[1], a[2], a[3], a[4],
                               a[5], a[6], a[7]);
    case 9:
        return AM_RequestXferAsync9(e, dest, off, h, buf, len, a[0], a[1], a[2], a[3],
                                    a[4], a[5], a[6], a[7], a[8]);
    case 10:
        return AM_RequestXfer10(e, dest, off, h, buf, len, a[0], a[1], a[2], a[3], a[4],
                                a[5], a[6], a[7], a[8], a[9]);
    case 11:
        return AM_RequestXferAsync11(e, dest, off, h, buf, len, a[0], a[1], a[2], a[3],
                                     a[4], a[5], a[6], a[7], a[8], a[9], a[10]);
    case 12:
        return AM_RequestXfer12(e, dest, off, h, buf, len, a[0], a[1], a[2], a[3], a[4],
                                a[5], a[6], a[7], a[8], a[9], a[10], a[11]);
    case 13:
        return AM_RequestXferAsync13(e, dest, off, h, buf, len, a[0], a[1], a[2], a[3],
                                     a[4], a[5], a[6], a[7], a[8], a[9], a[10], a[11],
                                     a[12]);
    case 14:
        return AM_RequestXfer14(e, dest, off, h, buf, len, a[0], a[1], a[2], a[3], a[4],
                                a[5], a[6], a[7], a[8], a[9], a[10], a[11], a[12], a[13]);
    case 15:
        return AM_RequestXferAsync15(e, dest, off, h, buf, len, a[0], a[1], a[2], a[3],
                                     a[4], a[5], a[6], a[7], a[8], a[9], a[10], a[11],
                                     a[12], a[13], a[14]);
    case 16:
        return AM_RequestXfer16(e, dest, off, h, buf, len, a[0], a[1], a[2], a[3], a[4],
                                a[5], a[6], a[7], a[8], a[9], a[10], a[11], a[12], a[13],
                                a[14], a[15]);
    }
    return AM_ERR_BAD_ARG;
}

static int reply_short(void *token, handler_t h, int n, const int32_t *a)
{
    switch (n) {
    case 0:
        return AM_Reply0(token, h);
    case 1:
        return AM_Reply1(token, h, a[0]);
    case 2:
        return AM_Reply2(token, h, a[0], a[1]);
    case 3:
        return AM_Reply3(token, h, a[0], a[1], a[2]);
    case 4:
        return AM_Reply4(token, h, a[0], a[1], a[2], a[3]);
    case 5:
        return AM_Reply5(token, h, a[0], a[1], a[2], a[3], a[4]);
    case 6:
        return AM_Reply6(token, h, a[0], a[1], a[2], a[3], a[4], a[5]);
    case 7:
        return AM_Reply7(token, h, a[0], a[1], a[2], a[3], a[4], a[5], a[6]);
    case 8:
        return AM_Reply8(token, h, a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7]);
    case 9:
        return AM_Reply9(token, h, a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7], a[8]);
    case 10:
        return AM_Reply10(token, h, a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7], a[8],
                          a[9]);
    case 11:
        return AM_Reply11(token, h, a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7], a[8],
                          a[9], a[10]);
    case 12:
        return AM_Reply12(token, h, a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7], a[8],
                          a[9], a[10], a[11]);
    case 13:
        return AM_Reply13(token, h, a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7], a[8],
                          a[9], a[10], a[11], a[12]);
    case 14:
        return AM_Reply14(token, h, a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7], a[8],
                          a[9], a[10], a[11], a[12], a[13]);
    case 15:
        return AM_Reply15(token, h, a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7], a[8],
                          a[9], a[10], a[11], a[12], a[13], a[14]);
    case 16:
        return AM_Reply16(token, h, a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7], a[8],
                          a[9], a[10], a[11], a[12], a[13], a[14], a[15]);
    }
    return AM_ERR_BAD_ARG;
}

static int reply_medium(void *token, handler_t h, void *buf, size_t len, int n,
                        const int32_t *a)
{
    switch (n) {
    case 0:
        return AM_ReplyI0(token, h, buf, len);
    case 1:
        return AM_ReplyI1(token, h, buf, len, a[0]);
    case 2:
        return AM_ReplyI2(token, h, buf, len, a[0], a[1]);
    case 3:
        return AM_ReplyI3(token, h, buf, len, a[0], a[1], a[2]);
    case 4:
        return AM_ReplyI4(token, h, buf, len, a[0], a[1], a[2], a[3]);
    case 5:
        return AM_ReplyI5(token, h, buf, len, a[0], a[1], a[2], a[3], a[4]);
    case 6:
        return AM_ReplyI6(token, h, buf, len, a[0], a[1], a[2], a[3], a[4], a[5]);
    case 7:
        return AM_ReplyI7(token, h, buf, len, a[0], a[1], a[2], a[3], a[4], a[5], a[6]);
    case 8:
        return AM_ReplyI8(token, h, buf, len, a[0], a[1], a[2], a[3], a[4], a[5], a[6],
                          a[7]);
    case 9:
        return AM_ReplyI9(token, h, buf, len, a[0], a[1], a[2], a[3], a[4], a[5], a[6],
                          a[7], a[8]);
    case 10:
        return AM_ReplyI10(token, h, buf, len, a[0], a[1], a[2], a[3], a[4], a[5], a[6],
                           a[7], a[8], a[9]);
    case 11:
        return AM_ReplyI11(token, h, buf, len, a[0], a[1], a[2], a[3], a[4], a[5], a[6],
                           a[7], a[8], a[9], a[10]);
    case 12:
        return AM_ReplyI12(token, h, buf, len, a[0], a[1], a[2], a[3], a[4], a[5], a[6],
                           a[7], a[8], a[9], a[10], a[11]);
    case 13:
        return AM_ReplyI13(token, h, buf, len, a[0], a[1], a[2], a[3], a[4], a[5], a[6],
                           a[7], a[8], a[9], a[10], a[11], a[12]);
    case 14:
        return AM_ReplyI14(token, h, buf, len, a[0], a[1], a[2], a[3], a[4], a[5], a[6],
                           a[7], a[8], a[9], a[10], a[11], a[12], a[13]);
    case 15:
        return AM_ReplyI15(token, h, buf, len, a[0], a[1], a[2], a[3], a[4], a[5], a[6],
                           a[7], a[8], a[9], a[10], a[11], a[12], a[13], a[14]);
    case 16:
        return AM_ReplyI16(token, h, buf, len, a[0], a[1], a[2], a[3], a[4], a[5], a[6],
                           a[7], a[8], a[9], a[10], a[11], a[12], a[13], a[14], a[15]);
    }
    return AM_ERR_BAD_ARG;
}

static int reply_long(void *token, uintptr_t off, handler_t h, void *buf, size_t len,
                      int n, const int32_t *a)
{
    switch (n) {
    case 0:
        return AM_ReplyXfer0(token, off, h, buf, len);
    case 1:
        return AM_ReplyXfer1(token, off, h, buf, len, a[0]);
    case 2:
        return AM_ReplyXfer2(token, off, h, buf, len, a[0], a[1]);
    case 3:
        return AM_ReplyXfer3(token, off, h, buf, len, a[0], a[1], a[2]);
    case 4:
        return AM_ReplyXfer4(token, off, h, buf, len, a[0], a[1], a[2], a[3]);
    case 5:
        return AM_ReplyXfer5(token, off, h, buf, len, a[0], a[1], a[2], a[3], a[4]);
    case 6:
        return AM_ReplyXfer6(token, off, h, buf, len, a[0], a[1], a[2], a[3], a[4], a[5]);
    case 7:
        return AM_ReplyXfer7(token, off, h, buf, len, a[0], a[1], a[2], a[3], a[4], a[5],
                             a[6]);
    case 8:
        return AM_ReplyXfer8(token, off, h, buf, len, a[0], a[1], a[2], a[3], a[4], a[5],
                             a[6], a[7]);
    case 9:
        return AM_ReplyXfer9(token, off, h, buf, len, a[0], a[1], a[2], a[3], a[4], a[5],
                             a[6], a[7], a[8]);
    case 10:
        return AM_ReplyXfer10(token, off, h, buf, len, a[0], a[1], a[2], a[3], a[4], a[5],
                              a[6], a[7], a[8], a[9]);
    case 11:
        return AM_ReplyXfer11(token, off, h, buf, len, a[0], a[1], a[2], a[3], a[4], a[5],
                              a[6], a[7], a[8], a[9], a[10]);
    case 12:
        return AM_ReplyXfer12(token, off, h, buf, len, a[0], a[1], a[2], a[3], a[4], a[5],
                              a[6], a[7], a[8], a[9], a[10], a[11]);
    case 13:
        return AM_ReplyXfer13(token, off, h, buf, len, a[0], a[1], a[2], a[3], a[4], a[5],
                              a[6], a[7], a[8], a[9], a[10], a[11], a[12]);
    case 14:
        return AM_ReplyXfer14(token, off, h, buf, len, a[0], a[1], a[2], a[3], a[4], a[5],
                              a[6], a[7], a[8], a[9], a[10], a[11], a[12], a[13]);
    case 15:
        return AM_ReplyXfer15(token, off, h, buf, len, a[0], a[1], a[2], a[3], a[4], a[5],
                              a[6], a[7], a[8], a[9], a[10], a[11], a[12], a[13], a[14]);
    case 16:
        return AM_ReplyXfer16(token, off, h, buf, len, a[0], a[1], a[2], a[3], a[4], a[5],
                              a[6], a[7], a[8], a[9], a[10], a[11], a[12], a[13], a[14],
                              a[15]);
    }
    return AM_ERR_BAD_ARG;
}

static int source_of(void *token)
{
    int src = -1;
    AMT_OK(AMUDP_GetSourceId(token, &src));
    return src;
}

static void check_args(int n, const int32_t *v)
{
    for (int i = 0; i < n; i++)
        if (v[i] != arg_value(n, i))
            AMT_FAIL("argument %d of %d is %d, expected %d", i, n, v[i], arg_value(n, i));
}

static void check_payload(int n, const void *buf, size_t nbytes, size_t want, int src)
{
    const unsigned char *p = (const unsigned char *)buf;
    if (nbytes != want)
        AMT_FAIL("%d arguments: %zu bytes, expected %zu", n, nbytes, want);
    for (size_t k = 0; k < nbytes; k++)
        if (p[k] != pattern(n, k, src))
            AMT_FAIL("%d arguments: byte %zu differs", n, k);
}

static void fill(int n, unsigned char *buf, size_t len, int src)
{
    for (size_t k = 0; k < len; k++)
        buf[k] = pattern(n, k, src);
}

static void on_short(void *token, int n, const int32_t *v, int is_request)
{
    check_args(n, v);
    if (is_request)
        AMT_OK(reply_short(token, (handler_t)(H_REP_S + n), n, v));
    else
        replies++;
}

static void on_medium(void *token, void *buf, size_t nbytes, int n, const int32_t *v,
                      int is_request)
{
    AMT_CHECK((uintptr_t)buf % 8 == 0);
    check_args(n, v);
    int src = is_request ? source_of(token) : me;
    check_payload(n, buf, nbytes, bulk_len(n, AM_MaxMedium()), src);
    if (!is_request) {
        replies++;
        return;
    }
    memset(buf, 0xa5, nbytes); /* the buffer is the handler's to write */
    static unsigned char out[AMUDP_MAX_MEDIUM];
    fill(n, out, nbytes, src);
    AMT_OK(reply_medium(token, (handler_t)(H_REP_M + n), out, nbytes, n, v));
}

static void on_long(void *token, void *buf, size_t nbytes, int n, const int32_t *v,
                    int is_request)
{
    check_args(n, v);
    int src = is_request ? source_of(token) : me;
    AMT_CHECK(buf == seg + (is_request ? req_off(n) : rep_off(n)));
    check_payload(n, buf, nbytes, bulk_len(n, AM_MaxLong()), src);
    if (!is_request) {
        replies++;
        return;
    }
    static unsigned char out[AMUDP_MAX_LONG];
    fill(n, out, nbytes, src);
    AMT_OK(reply_long(token, rep_off(n), (handler_t)(H_REP_L + n), out, nbytes, n, v));
}

/* Handlers with the AM-2 prototypes, one per family and argument count. */
#define HANDLERS(n)                                                                      \
    static void req_s##n(void *token P##n)                                               \
    {                                                                                    \
        int32_t v[FAMILY + 1] = {0 V##n};                                                \
        on_short(token, n, v + 1, 1);                                                    \
    }                                                                                    \
    static void rep_s##n(void *token P##n)                                               \
    {                                                                                    \
        int32_t v[FAMILY + 1] = {0 V##n};                                                \
        on_short(token, n, v + 1, 0);                                                    \
    }                                                                                    \
    static void req_m##n(void *token, void *buf, size_t nbytes P##n)                     \
    {                                                                                    \
        int32_t v[FAMILY + 1] = {0 V##n};                                                \
        on_medium(token, buf, nbytes, n, v + 1, 1);                                      \
    }                                                                                    \
    static void rep_m##n(void *token, void *buf, size_t nbytes P##n)                     \
    {                                                                                    \
        int32_t v[FAMILY + 1] = {0 V##n};                                                \
        on_medium(token, buf, nbytes, n, v + 1, 0);                                      \
    }                                                                                    \
    static void req_l##n(void *token, void *buf, size_t nbytes P##n)                     \
    {                                                                                    \
        int32_t v[FAMILY + 1] = {0 V##n};                                                \
        on_long(token, buf, nbytes, n, v + 1, 1);                                        \
    }                                                                                    \
    static void rep_l##n(void *token, void *buf, size_t nbytes P##n)                     \
    {                                                                                    \
        int32_t v[FAMILY + 1] = {0 V##n};                                                \
        on_long(token, buf, nbytes, n, v + 1, 0);                                        \
    }

/* clang-format off */
HANDLERS(0) HANDLERS(1) HANDLERS(2) HANDLERS(3) HANDLERS(4) HANDLERS(5) HANDLERS(6)
HANDLERS(7) HANDLERS(8) HANDLERS(9) HANDLERS(10) HANDLERS(11) HANDLERS(12)
HANDLERS(13) HANDLERS(14) HANDLERS(15) HANDLERS(16)
#define SET6(n)                                                                          \
    AMT_OK(AM_SetHandler(ep, H_REQ_S + n, req_s##n));                                    \
    AMT_OK(AM_SetHandler(ep, H_REP_S + n, rep_s##n));                                    \
    AMT_OK(AM_SetHandler(ep, H_REQ_M + n, req_m##n));                                    \
    AMT_OK(AM_SetHandler(ep, H_REP_M + n, rep_m##n));                                    \
    AMT_OK(AM_SetHandler(ep, H_REQ_L + n, req_l##n));                                    \
    AMT_OK(AM_SetHandler(ep, H_REP_L + n, rep_l##n))
    /* clang-format on */

    static void set_family_handlers(void)
{
    SET6(0);
    SET6(1);
    SET6(2);
    SET6(3);
    SET6(4);
    SET6(5);
    SET6(6);
    SET6(7);
    SET6(8);
    SET6(9);
    SET6(10);
    SET6(11);
    SET6(12);
    SET6(13);
    SET6(14);
    SET6(15);
    SET6(16);
}

/* ---- reduction: everyone sends to 0, 0 sends the sum back ---- */

static void sum_handler(void *token, int32_t v)
{
    (void)token;
    sum += v;
    sum_msgs++;
}

static void result_handler(void *token, int32_t v)
{
    (void)token;
    result = v;
    result_in = 1;
}

/* ---- get and put over active messages ---- */

static void get_handler(void *token, int32_t off, int32_t len, int32_t dest_off)
{
    AMT_OK(AM_ReplyXfer1(token, (uintptr_t)dest_off, H_GOT, seg + off, (size_t)len, len));
}

static void got_handler(void *token, void *buf, size_t nbytes, int32_t len)
{
    (void)token;
    AMT_CHECK((size_t)len == nbytes);
    (void)buf;
    got++;
}

static void put_handler(void *token, void *buf, size_t nbytes)
{
    (void)buf;
    AMT_OK(AM_Reply1(token, H_PUT_ACK, (int32_t)nbytes));
}

static void put_ack_handler(void *token, int32_t n)
{
    (void)token;
    (void)n;
    put_acks++;
}

/* AM-2's own prototype for a medium handler: the length as an int. */
static void int_medium_handler(void *token, void *buf, int nbytes, int32_t a0)
{
    (void)token;
    AMT_CHECK(nbytes == 5 && a0 == -5 && memcmp(buf, "flit", 5) == 0);
    int_medium++;
}

static void families(int rounds)
{
    int next = (me + 1) % nprocs;
    static unsigned char buf[AMUDP_MAX_LONG];
    int32_t a[FAMILY];
    int want = 0;
    for (int r = 0; r < rounds; r++)
        for (int n = 0; n < FAMILY; n++) {
            for (int i = 0; i < n; i++)
                a[i] = arg_value(n, i);
            AMT_OK(request_short(ep, next, (handler_t)(H_REQ_S + n), n, a));
            size_t ml = bulk_len(n, AM_MaxMedium()), ll = bulk_len(n, AM_MaxLong());
            fill(n, buf, ml, me);
            AMT_OK(request_medium(ep, next, (handler_t)(H_REQ_M + n), buf, ml, n, a));
            /* Replies of the last round's long requests must be in before
               the region is written again. */
            AMT_POLL_UNTIL(eb, replies, want + 2);
            fill(n, buf, ll, me);
            AMT_OK(request_long(ep, next, req_off(n), (handler_t)(H_REQ_L + n), buf, ll,
                                n, a));
            want += 3;
            AMT_POLL_UNTIL(eb, replies, want);
        }
}

static void reduce(void)
{
    AMT_OK(AM_Request1(ep, 0, H_SUM, me + 1));
    if (me == 0) {
        AMT_POLL_UNTIL(eb, sum_msgs, nprocs);
        for (int r = 0; r < nprocs; r++)
            AMT_OK(AM_Request1(ep, r, H_RESULT, sum));
    }
    AMT_POLL_UNTIL(eb, result_in, 1);
    AMT_CHECK(result == nprocs * (nprocs + 1) / 2);
}

/* Puts 1000 bytes into the next rank's segment, gets them back. */
static void get_put(void)
{
    int next = (me + 1) % nprocs;
    uintptr_t put_at = 3 * AM_MaxLong() * FAMILY, get_to = put_at + 4096;
    static unsigned char data[1000];
    fill(99, data, sizeof data, me);
    AMT_OK(AM_RequestXfer0(ep, next, put_at, H_PUT, data, sizeof data));
    AMT_POLL_UNTIL(eb, put_acks, 1);
    AMT_OK(AM_Request3(ep, next, H_GET, (int32_t)put_at, (int32_t)sizeof data,
                       (int32_t)get_to));
    AMT_POLL_UNTIL(eb, got, 1);
    AMT_CHECK(memcmp(seg + get_to, data, sizeof data) == 0);
    AMT_OK(AM_RequestI1(ep, me, H_INT_MEDIUM, "flit", 5, -5));
    AMT_POLL_UNTIL(eb, int_medium, 1);
}

static void statistics(int rounds)
{
    amudp_stats_t mine, *all = malloc((size_t)nprocs * sizeof *all);
    AMT_CHECK(all);
    AMT_OK(AMUDP_GetEndpointStatistics(ep, &mine));
    AMT_CHECK(mine.RequestsSent[amudp_Short] ==
              (uint64_t)(rounds * FAMILY + 2 + (me == 0 ? nprocs : 0)));
    AMT_CHECK(mine.RequestsSent[amudp_Medium] == (uint64_t)(rounds * FAMILY + 1));
    AMT_CHECK(mine.RequestsSent[amudp_Long] == (uint64_t)(rounds * FAMILY + 1));
    AMT_OK(AMUDP_SPMDAllGather(&mine, all, sizeof mine));
    amudp_stats_t total = AMUDP_initial_stats;
    for (int r = 0; r < nprocs; r++)
        AMT_OK(AMUDP_AggregateStatistics(&total, &all[r]));
    for (int c = 0; c < amudp_NumCategories; c++) {
        AMT_CHECK(total.RequestsSent[c] == total.RequestsReceived[c]);
        AMT_CHECK(total.RepliesSent[c] == total.RepliesReceived[c]);
    }
    AMT_CHECK(total.ReturnedMessages == 0);
    if (me == 0)
        AMUDP_DumpStatistics(stdout, &total, 1);
    free(all);
}

int main(int argc, char **argv)
{
    uint64_t pid;
    AMT_OK(AMUDP_SPMDStartup(&argc, &argv, 0, 0, NULL, &pid, &eb, &ep));
    me = AMUDP_SPMDMyProc();
    nprocs = AMUDP_SPMDNumProcs();
    AMT_CHECK(me >= 0 && me < nprocs);
    int rounds = argc > 1 ? atoi(argv[1]) : 2;
    size_t seglen = 4 * AM_MaxLong() * FAMILY;
    seg = malloc(seglen);
    AMT_CHECK(seg);
    AMT_OK(AM_SetSeg(ep, seg, seglen));
    set_family_handlers();
    AMT_OK(AM_SetHandler(ep, H_SUM, sum_handler));
    AMT_OK(AM_SetHandler(ep, H_RESULT, result_handler));
    AMT_OK(AM_SetHandler(ep, H_GET, get_handler));
    AMT_OK(AM_SetHandler(ep, H_GOT, got_handler));
    AMT_OK(AM_SetHandler(ep, H_PUT, put_handler));
    AMT_OK(AM_SetHandler(ep, H_PUT_ACK, put_ack_handler));
    AMT_OK(AM_SetHandler(ep, H_INT_MEDIUM, int_medium_handler));
    AMT_OK(AMUDP_SPMDBarrier());

    families(rounds);
    reduce();
    get_put();
    AMT_OK(AMUDP_SPMDBarrier());
    statistics(rounds);
    AMT_OK(AMUDP_SPMDBarrier());
    if (me == 0)
        printf("amudp_all: %d procs, job %016llx: every family passed\n", nprocs,
               (unsigned long long)pid);
    AMUDP_SPMDExit(0);
    return 1; /* not reached */
}

/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The RPC layer's two decoders (src/rpc/wire.h) on any bytes: the three
 * words of a request or reply sent as an active message, and the 16-byte
 * header of one sent as a stream. What a peer's rpc object hands ours.
 *
 *   byte 0   bit 0: the stream form; bit 1: a reply (else a request)
 *   active message: byte 1 the count of words (% 8), the words (4 bytes
 *            each, host order), the rest the payload
 *   stream:  the rest is the message (its total: its length)
 *
 * A model written from wire.h's description gives the verdict; accepted
 * fields must be the bytes, and the message broken (a word more or less,
 * the magic off, a reply's status past the last one) must be refused.
 */
#include "fuzz.h"
#include "rpc/wire.h"

static uint32_t le32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
           (uint32_t)p[3] << 24;
}

/* Three words, and a reply's third one a status of the library. */
static int model_am(const uint32_t *a, unsigned nargs, int reply)
{
    return nargs == 3 && (!reply || a[2] < (uint32_t)FLIT_STATUS_COUNT);
}

static int model_hdr(const uint8_t *m, size_t total, int reply)
{
    return total >= 16 && le32(m + 4) == 0x31637072u &&
           (!reply || le32(m) < (uint32_t)FLIT_STATUS_COUNT);
}

static void check_am(const uint8_t *d, size_t size, int reply)
{
    if (size < 2)
        return;
    unsigned nargs = d[1] % 8;
    if (size < 2 + 4 * (size_t)nargs)
        return;
    uint32_t *a = malloc(4 * (nargs ? nargs : 1));
    FUZZ_CHECK(a != NULL);
    memcpy(a, d + 2, 4 * (size_t)nargs);
    size_t nbytes = size - 2 - 4 * (size_t)nargs;
    struct fl_rpc_msg m = {.id = 7, .word = 7, .len = 7};
    flit_status st = fl_rpc_decode_am(a, nargs, nbytes, reply != 0, &m);
    FUZZ_CHECK((st == FLIT_OK) == model_am(a, nargs, reply));
    if (st == FLIT_OK) {
        FUZZ_CHECK(m.id == (a[0] | (uint64_t)a[1] << 32) && m.word == a[2] &&
                   m.len == nbytes);
        struct fl_rpc_msg x;
        FUZZ_CHECK(fl_rpc_decode_am(a, 2, nbytes, reply != 0, &x) == FLIT_ERR_BAD_PACKET);
        a[2] = (uint32_t)FLIT_STATUS_COUNT;
        FUZZ_CHECK((fl_rpc_decode_am(a, 3, nbytes, true, &x) == FLIT_OK) == 0);
    } else {
        FUZZ_CHECK(m.id == 7 && m.word == 7 && m.len == 7); /* untouched */
    }
    free(a);
}

static void check_hdr(const uint8_t *d, size_t size, int reply)
{
    size_t total = size - 1;
    uint8_t *msg = malloc(total ? total : 1); /* exactly its bytes to ASan */
    FUZZ_CHECK(msg != NULL);
    memcpy(msg, d + 1, total);
    struct fl_rpc_msg m = {.id = 7, .word = 7, .len = 7};
    flit_status st = fl_rpc_decode_hdr(total >= 16 ? msg : NULL, total, reply != 0, &m);
    FUZZ_CHECK((st == FLIT_OK) == model_hdr(msg, total, reply));
    if (st == FLIT_OK) {
        FUZZ_CHECK(m.word == le32(msg) && m.len == total - 16);
        FUZZ_CHECK(m.id == (le32(msg + 8) | (uint64_t)le32(msg + 12) << 32));
        struct fl_rpc_msg x;
        msg[4] ^= 1;
        FUZZ_CHECK(fl_rpc_decode_hdr(msg, total, reply != 0, &x) == FLIT_ERR_BAD_PACKET);
        msg[4] ^= 1;
        FUZZ_CHECK(fl_rpc_decode_hdr(msg, 15, reply != 0, &x) == FLIT_ERR_BAD_PACKET);
    } else {
        FUZZ_CHECK(m.id == 7 && m.word == 7 && m.len == 7);
    }
    free(msg);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    int reply = (data[0] & 2) != 0;
    if (data[0] & 1)
        check_hdr(data, size, reply);
    else
        check_am(data, size, reply);
    return 0;
}

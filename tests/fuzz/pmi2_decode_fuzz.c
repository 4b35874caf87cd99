/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The PMI-2 launcher's readers of what the launcher sends (src/boot/
 * pmi2_wire.h), held to the format: byte 0 picks the reader, the rest is
 * its input.
 *   0  a frame's length field (6 bytes): accepted exactly when it is digits
 *      then spaces, with the value the digits say, 1 .. FL_PMI2_MAX_BODY
 *   1  a frame's body: what is accepted encodes back to the same bytes
 *      (the first key cmd, every pair ended by ';', ';' in values doubled)
 *   2  a PMI-1 handshake line: what is accepted is its pairs joined by
 *      single spaces
 */
#include "boot/pmi2_wire.h"
#include "fuzz.h"

static struct fl_pmi2_msg msg;
static char out[FL_PMI2_HDR + FL_PMI2_MAX_BODY + 16];

static void frame_len(const uint8_t *d, size_t n)
{
    char hdr[FL_PMI2_HDR];
    memset(hdr, 'x', sizeof hdr);
    memcpy(hdr, d, n < sizeof hdr ? n : sizeof hdr);
    long v = fl_pmi2_frame_len(hdr);
    long want = 0;
    size_t i = 0;
    while (i < sizeof hdr && hdr[i] >= '0' && hdr[i] <= '9')
        want = want * 10 + (hdr[i++] - '0');
    int ok = i > 0;
    for (; i < sizeof hdr; i++)
        ok &= hdr[i] == ' ';
    ok &= want >= 1 && want <= FL_PMI2_MAX_BODY;
    FUZZ_CHECK(ok ? v == want : v == -1);
}

static void body(const char *d, size_t n)
{
    if (fl_pmi2_decode(d, n, &msg) != 0)
        return;
    FUZZ_CHECK(msg.n >= 1 && strcmp(msg.pair[0].key, "cmd") == 0);
    const char *kv[2 * FL_PMI2_MAX_PAIRS];
    for (unsigned i = 0; i < msg.n; i++) {
        kv[2 * i] = msg.pair[i].key;
        kv[2 * i + 1] = msg.pair[i].val;
    }
    long len = fl_pmi2_encode(out, sizeof out, kv, msg.n);
    FUZZ_CHECK(len == (long)(FL_PMI2_HDR + n));
    FUZZ_CHECK(fl_pmi2_frame_len(out) == (long)n);
    FUZZ_CHECK(memcmp(out + FL_PMI2_HDR, d, n) == 0);
}

static void line(const char *d, size_t n)
{
    if (fl_pmi2_line_decode(d, n, &msg) != 0)
        return;
    size_t at = 0;
    for (unsigned i = 0; i < msg.n; i++) {
        int k = snprintf(out + at, sizeof out - at, "%s%s=%s", i ? " " : "",
                         msg.pair[i].key, msg.pair[i].val);
        FUZZ_CHECK(k > 0 && at + (size_t)k < sizeof out);
        at += (size_t)k;
    }
    FUZZ_CHECK(at == n && memcmp(out, d, n) == 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1 || size > FL_PMI2_MAX_BODY + 1)
        return 0;
    const char *d = (const char *)data + 1;
    switch (data[0] % 3) {
    case 0:
        frame_len(data + 1, size - 1);
        break;
    case 1:
        body(d, size - 1);
        break;
    default:
        line(d, size - 1);
        break;
    }
    return 0;
}

/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fl_grp_decode, the group layer's one decoder (src/group/internal.h), on
 * any words and any payload length: what a peer's groups send ours.
 *
 *   byte 0   the count of words (% 16)
 *   then     the words, 4 bytes each (host order)
 *   then     4 bytes, little-endian: the payload's length (0 if missing)
 *
 * A model written from the protocol's description (the opcodes and their
 * words in internal.h, the limits FRAG_MIN, FRAG_MAX and the largest
 * message) gives the verdict; an accepted message must decode to its own
 * opcode and stay accepted only with its own count of words.
 */
#include "fuzz.h"
#include "group/internal.h"

/* Words per opcode, 1 (JOIN) .. 19 (INSTALL), as internal.h lists them:
   [0] version and opcode, [1] group, [2] view, then the opcode's own. */
static const unsigned words[] = {0, 4, 4, 5, 6, 6, 12, 4, 4, 5,
                                 3, 5, 3, 3, 4, 6, 6,  7, 4, 3};
#define NOPS (sizeof words / sizeof *words)

static uint64_t w64(const uint32_t *a)
{
    return a[0] | (uint64_t)a[1] << 32;
}

static int model(const uint32_t *a, unsigned n, uint64_t nbytes)
{
    if (n < 3 || a[0] >> 24 != 2 || (a[0] & 0xffff00u))
        return 0;
    unsigned op = a[0] & 0xff;
    if (op == 0 || op >= NOPS || n != words[op])
        return 0;
    int data = op == 3 /* SMALL */ || op == 6 /* DATA */;
    if (nbytes && !data)
        return 0;
    switch (op) {
    case 1: /* JOIN */
    case 2: /* READY */
        return a[3] >= 1024 && a[3] <= 32768;
    case 3:
        return nbytes <= 32768;
    case 4: /* SEQREQ */
        return a[4] > 0;
    case 6: {
        uint64_t total = w64(a + 8), off = w64(a + 10);
        return nbytes <= 32768 && total <= (uint64_t)65536 / 2 * 32768 && off <= total &&
               nbytes <= total - off && (nbytes > 0 || total == 0);
    }
    default:
        return 1;
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    unsigned n = data[0] % 16;
    if (size < 1 + 4 * (size_t)n)
        return 0;
    uint32_t *a = malloc(4 * (n ? n : 1)); /* exactly n words to ASan */
    FUZZ_CHECK(a != NULL);
    memcpy(a, data + 1, 4 * (size_t)n);
    const uint8_t *p = data + 1 + 4 * (size_t)n;
    uint64_t nbytes = 0;
    if (size >= 1 + 4 * (size_t)n + 4)
        nbytes = (uint64_t)p[0] | (uint64_t)p[1] << 8 | (uint64_t)p[2] << 16 |
                 (uint64_t)p[3] << 24;
    enum op op = (enum op)0;
    flit_status st = fl_grp_decode(a, n, (size_t)nbytes, &op);
    FUZZ_CHECK((st == FLIT_OK) == model(a, n, nbytes));
    FUZZ_CHECK(st == FLIT_OK || st == FLIT_ERR_BAD_PACKET);
    if (st == FLIT_OK) {
        FUZZ_CHECK((unsigned)op == (a[0] & 0xff) && op > 0 && op < OP_COUNT);
        enum op again;
        FUZZ_CHECK(fl_grp_decode(a, n - 1, (size_t)nbytes, &again) ==
                   FLIT_ERR_BAD_PACKET);
        a[0] ^= 1u << 24; /* another version */
        FUZZ_CHECK(fl_grp_decode(a, n, (size_t)nbytes, &again) == FLIT_ERR_BAD_PACKET);
    } else {
        FUZZ_CHECK(op == (enum op)0); /* untouched */
    }
    free(a);
    return 0;
}

/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What the fuzz targets share. Each target is one LLVMFuzzerTestOneInput,
 * built two ways (see CMakeLists.txt):
 *
 *  - with clang -fsanitize=fuzzer,address,undefined: libFuzzer explores
 *    from the seed corpus for a bounded time (CTest label fuzz);
 *  - with the project's compiler and replay.c as main(): every seed and
 *    every saved input under regress/<target>/ runs once (label unit), so
 *    an input that once crashed a target stays a test.
 *
 * A target reports a broken property by calling FUZZ_CHECK, which aborts:
 * libFuzzer saves the input, the replay exits non-zero.
 */
#ifndef FLIT_FUZZ_H
#define FLIT_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FUZZ_CHECK(cond)                                                                 \
    do {                                                                                 \
        if (!(cond)) {                                                                   \
            fprintf(stderr, "%s:%d: property broken: %s\n", __FILE__, __LINE__, #cond);  \
            abort();                                                                     \
        }                                                                                \
    } while (0)

/*
 * The input of the chan_recv target: a script for one channel endpoint
 * (rank 0 of 3) over a datagram transport that is only memory.
 *
 *   byte 0   setup: bit 0: 1472-byte datagrams (else 65507); bit 1: reorder
 *            half the datagrams received; bit 2: duplicate a third; bit 3:
 *            packets on the request lane poll the reply lane from their
 *            callback (what a handler whose reply found no room does);
 *            bit 4: drop a fifth
 *   then operations, until the input ends; the top two bits of the first
 *   byte choose:
 *     00  datagram: byte: bits 0-1 the source (0..2, 3: an address outside
 *         the job), bit 2: write the right version, job key, source and
 *         destination into the header; u16 length (little-endian); the
 *         bytes. It waits for the next poll.
 *     01  send: byte destination (1 + b % 2), byte lane (b % 2), u16
 *         length, byte flags (bit 0: FL_COMMIT_MORE)
 *     10  poll: bits 0-1 of the same byte the lane mask (0: both lanes)
 *     11  arm, disarm, and ask whether the channel is settled
 */
/* Reads n bytes at p, so that AddressSanitizer checks that they are all
   inside live memory (memcpy is checked as a whole, and fast). */
static inline void fuzz_touch(const void *p, size_t n)
{
    static unsigned char scratch[1 << 17];
    while (n > 0) {
        size_t k = n < sizeof scratch ? n : sizeof scratch;
        memcpy(scratch, p, k);
        p = (const unsigned char *)p + k;
        n -= k;
    }
}

enum { FUZZ_OP_DGRAM = 0, FUZZ_OP_SEND = 1, FUZZ_OP_POLL = 2, FUZZ_OP_ARM = 3 };

#define FUZZ_SETUP_SMALL_MTU 0x01u
#define FUZZ_SETUP_REORDER   0x02u
#define FUZZ_SETUP_DUP       0x04u
#define FUZZ_SETUP_NEST      0x08u
#define FUZZ_SETUP_DROP      0x10u

#define FUZZ_SRC_STRANGER 3u
#define FUZZ_FIX_HEADER   0x04u

#endif /* FLIT_FUZZ_H */

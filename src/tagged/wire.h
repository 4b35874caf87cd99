/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The tagged layer's wire: a message is one stream to the context's stream
 * handler, an 8-byte little-endian tag, then the payload (total = 8 +
 * length). The sender is the stream's rank. A stream shorter than the tag
 * is malformed: counted, never trusted (arrive.c).
 */
#ifndef FL_TAGGED_WIRE_H
#define FL_TAGGED_WIRE_H

#include <stdint.h>
#include <string.h>

#define HDR_LEN   8u
#define WHOLE_LEN 256u /* payloads sent and taken whole with the header */

/* The wire is little-endian; a byte loop here costs ~60 instructions a
   message, a load and (on big-endian hosts) a swap cost two. */
static inline void put_le64(uint8_t *p, uint64_t v)
{
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    v = __builtin_bswap64(v);
#endif
    memcpy(p, &v, sizeof v);
}

static inline uint64_t get_le64(const uint8_t *p)
{
    uint64_t v;
    memcpy(&v, p, sizeof v);
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    v = __builtin_bswap64(v);
#endif
    return v;
}

#endif /* FL_TAGGED_WIRE_H */

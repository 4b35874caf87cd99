/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Fixed little-endian field access for everything that goes on a wire.
 * memcpy + le*toh compiles to one plain load or store on little-endian
 * machines and stays correct (and alignment-safe) everywhere else.
 */
#ifndef FL_PLATFORM_LE_H
#define FL_PLATFORM_LE_H

#include <endian.h>
#include <stdint.h>
#include <string.h>

static inline void fl_put16(uint8_t *p, uint16_t v)
{
    v = htole16(v);
    memcpy(p, &v, sizeof v);
}

static inline void fl_put32(uint8_t *p, uint32_t v)
{
    v = htole32(v);
    memcpy(p, &v, sizeof v);
}

static inline void fl_put64(uint8_t *p, uint64_t v)
{
    v = htole64(v);
    memcpy(p, &v, sizeof v);
}

static inline uint16_t fl_get16(const uint8_t *p)
{
    uint16_t v;
    memcpy(&v, p, sizeof v);
    return le16toh(v);
}

static inline uint32_t fl_get32(const uint8_t *p)
{
    uint32_t v;
    memcpy(&v, p, sizeof v);
    return le32toh(v);
}

static inline uint64_t fl_get64(const uint8_t *p)
{
    uint64_t v;
    memcpy(&v, p, sizeof v);
    return le64toh(v);
}

#endif /* FL_PLATFORM_LE_H */

/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The PMI-2 wire protocol, as a process speaks it to its launcher over the
 * file descriptor the launcher names in PMI_FD (Slurm's srun --mpi=pmi2,
 * MPICH's Hydra, Cray's PMI). It is text:
 *
 *  1. A PMI-1 style handshake, one line each way, pairs split by spaces:
 *         cmd=init pmi_version=2 pmi_subversion=0\n
 *         cmd=response_to_init pmi_version=2 pmi_subversion=0 rc=0\n
 *  2. Then PMI-2 commands, each answered by one response, in frames:
 *         6 characters: the body's length in decimal, padded with spaces
 *         body: key=value; pairs, the first one cmd=..., every pair ends
 *         with ';', and a ';' inside a value is written twice (";;")
 *     e.g. "30    cmd=kvs-fence;" ... "cmd=kvs-fence-response;rc=0;".
 *
 * Keys and values are text: a key holds neither '=' nor ';', nothing holds
 * a NUL or a newline. Values are at most FL_PMI2_VALLEN bytes (Slurm's and
 * MPICH's limit is 1024 with the terminator): binary data travels as hex.
 *
 * fl_pmi2_decode and fl_pmi2_line_decode are the only readers of what the
 * launcher sends; both validate everything and never read past len.
 */
#ifndef FL_BOOT_PMI2_WIRE_H
#define FL_BOOT_PMI2_WIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define FL_PMI2_HDR       6     /* length field of a frame */
#define FL_PMI2_MAX_BODY  65536 /* longest body this side sends or accepts */
#define FL_PMI2_VALLEN    1000  /* longest value this side puts */
#define FL_PMI2_MAX_PAIRS 32

struct fl_pmi2_pair {
    const char *key, *val; /* NUL-terminated, inside the message's buffer */
};

/* A decoded message: pairs in the order they came; pair[0] is "cmd". */
struct fl_pmi2_msg {
    unsigned n;
    struct fl_pmi2_pair pair[FL_PMI2_MAX_PAIRS];
    char buf[FL_PMI2_MAX_BODY + FL_PMI2_MAX_PAIRS * 2];
};

/*
 * A frame's length field -> the body's length (1 .. FL_PMI2_MAX_BODY), or
 * -1: decimal digits, then only spaces, at least one digit, no sign.
 */
long fl_pmi2_frame_len(const char hdr[FL_PMI2_HDR]);

/*
 * Decodes a frame's body (without the length field). 0, or -1 when it is
 * not exactly what the format above allows (*out then undefined).
 */
int fl_pmi2_decode(const char *body, size_t len, struct fl_pmi2_msg *out);

/*
 * Decodes a PMI-1 line (without its '\n'): key=value pairs split by one
 * space each, the first "cmd"; values hold no space. 0 or -1.
 */
int fl_pmi2_line_decode(const char *line, size_t len, struct fl_pmi2_msg *out);

/* The value of key (the first pair that has it), or NULL. */
const char *fl_pmi2_get(const struct fl_pmi2_msg *m, const char *key);

/* Whether m is a response to cmd ("<cmd>-response") with rc=0. */
bool fl_pmi2_ok(const struct fl_pmi2_msg *m, const char *resp);

/*
 * Writes a whole frame for the pairs kv[0..2n) (key, value, key, value...;
 * the first key must be "cmd") to out, escaping ';' in values. Returns the
 * frame's length, or -1 when it would not fit cap or FL_PMI2_MAX_BODY, or a
 * key is not one the format allows.
 */
long fl_pmi2_encode(char *out, size_t cap, const char *const *kv, unsigned n);

/*
 * The job attribute PMI_process_mapping (MPICH's format, which Slurm and
 * Hydra give): "(vector,(node,count,ppn),...)", no spaces. Each block puts
 * ppn consecutive ranks on each of count nodes from node on, and the blocks
 * repeat until every rank has its node (a cyclic placement over 2 nodes is
 * "(vector,(0,2,1))"). Writes size node numbers to node_of. 0, or -1 when
 * the text is anything else, a number is above FL_PMI2_MAX_NODE, or a pass
 * over the blocks places no rank.
 */
#define FL_PMI2_MAX_NODE (1u << 20)
int fl_pmi2_parse_mapping(const char *s, uint32_t size, uint32_t *node_of);

#endif /* FL_BOOT_PMI2_WIRE_H */

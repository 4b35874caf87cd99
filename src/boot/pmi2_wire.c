/* SPDX-License-Identifier: BSD-3-Clause */
/* PMI-2's text frames, both ways; see pmi2_wire.h. */
#include "boot/pmi2_wire.h"

#include <stdio.h>
#include <string.h>

long fl_pmi2_frame_len(const char hdr[FL_PMI2_HDR])
{
    long v = 0;
    int i = 0;
    while (i < FL_PMI2_HDR && hdr[i] >= '0' && hdr[i] <= '9')
        v = v * 10 + (hdr[i++] - '0');
    if (i == 0)
        return -1;
    for (; i < FL_PMI2_HDR; i++)
        if (hdr[i] != ' ')
            return -1;
    return v >= 1 && v <= FL_PMI2_MAX_BODY ? v : -1;
}

static bool key_ok(const char *k, size_t len)
{
    if (len == 0)
        return false;
    for (size_t i = 0; i < len; i++)
        if (k[i] == '=' || k[i] == ';' || k[i] == ' ' || k[i] == '\0' || k[i] == '\n')
            return false;
    return true;
}

/* Appends a pair to out; its key and value are copied to out->buf at *at
   by the caller. */
static int add_pair(struct fl_pmi2_msg *out, const char *key, const char *val)
{
    if (out->n == FL_PMI2_MAX_PAIRS)
        return -1;
    out->pair[out->n].key = key;
    out->pair[out->n].val = val;
    out->n++;
    return 0;
}

static bool first_is_cmd(const struct fl_pmi2_msg *m)
{
    return m->n > 0 && strcmp(m->pair[0].key, "cmd") == 0 && m->pair[0].val[0];
}

int fl_pmi2_decode(const char *body, size_t len, struct fl_pmi2_msg *out)
{
    if (len > FL_PMI2_MAX_BODY)
        return -1;
    out->n = 0;
    size_t i = 0, at = 0;
    while (i < len) {
        const char *eq = memchr(body + i, '=', len - i);
        if (!eq || !key_ok(body + i, (size_t)(eq - body) - i))
            return -1;
        char *key = out->buf + at;
        size_t klen = (size_t)(eq - body) - i;
        memcpy(key, body + i, klen);
        at += klen;
        out->buf[at++] = '\0';
        char *val = out->buf + at;
        bool ended = false;
        for (i += klen + 1; i < len && !ended; i++) {
            char c = body[i];
            if (c == '\0' || c == '\n')
                return -1;
            if (c == ';' && i + 1 < len && body[i + 1] == ';') {
                out->buf[at++] = ';';
                i++;
            } else if (c == ';') {
                ended = true;
            } else {
                out->buf[at++] = c;
            }
        }
        if (!ended)
            return -1;
        out->buf[at++] = '\0';
        if (add_pair(out, key, val) != 0)
            return -1;
    }
    return first_is_cmd(out) ? 0 : -1;
}

int fl_pmi2_line_decode(const char *line, size_t len, struct fl_pmi2_msg *out)
{
    if (len > FL_PMI2_MAX_BODY || len == 0)
        return -1;
    out->n = 0;
    size_t i = 0, at = 0;
    while (i < len) {
        const char *sp = memchr(line + i, ' ', len - i);
        size_t end = sp ? (size_t)(sp - line) : len;
        const char *eq = memchr(line + i, '=', end - i);
        if (!eq || !key_ok(line + i, (size_t)(eq - line) - i))
            return -1;
        for (size_t j = i; j < end; j++)
            if (line[j] == '\0' || line[j] == '\n' || line[j] == ';')
                return -1;
        memcpy(out->buf + at, line + i, end - i);
        char *key = out->buf + at;
        key[eq - line - i] = '\0';
        out->buf[at + end - i] = '\0';
        if (add_pair(out, key, key + (eq - line - i) + 1) != 0)
            return -1;
        at += end - i + 1;
        /* One space between pairs, none at the end. */
        if (sp && end + 1 == len)
            return -1;
        i = end + 1;
    }
    return first_is_cmd(out) ? 0 : -1;
}

const char *fl_pmi2_get(const struct fl_pmi2_msg *m, const char *key)
{
    for (unsigned i = 0; i < m->n; i++)
        if (strcmp(m->pair[i].key, key) == 0)
            return m->pair[i].val;
    return NULL;
}

bool fl_pmi2_ok(const struct fl_pmi2_msg *m, const char *resp)
{
    const char *rc = fl_pmi2_get(m, "rc");
    return strcmp(m->pair[0].val, resp) == 0 && rc && strcmp(rc, "0") == 0;
}

long fl_pmi2_encode(char *out, size_t cap, const char *const *kv, unsigned n)
{
    if (n == 0 || strcmp(kv[0], "cmd") != 0 || cap < FL_PMI2_HDR + 1)
        return -1;
    size_t at = FL_PMI2_HDR;
    for (unsigned p = 0; p < n; p++) {
        const char *k = kv[2 * p], *v = kv[2 * p + 1];
        size_t klen = strlen(k);
        if (!key_ok(k, klen) || strchr(v, '\n'))
            return -1;
        if (at + klen + 1 > cap)
            return -1;
        memcpy(out + at, k, klen);
        at += klen;
        out[at++] = '=';
        for (; *v; v++) {
            if (at + 2 > cap)
                return -1;
            if (*v == ';')
                out[at++] = ';';
            out[at++] = *v;
        }
        if (at + 1 > cap)
            return -1;
        out[at++] = ';';
    }
    size_t body = at - FL_PMI2_HDR;
    if (body > FL_PMI2_MAX_BODY)
        return -1;
    char hdr[FL_PMI2_HDR + 1];
    snprintf(hdr, sizeof hdr, "%-6zu", body);
    memcpy(out, hdr, FL_PMI2_HDR);
    return (long)at;
}

/* A number of at most FL_PMI2_MAX_NODE digits-only at *p, then `end`. */
static int map_number(const char **p, char end, uint32_t *out)
{
    const char *s = *p;
    uint32_t v = 0;
    if (*s < '0' || *s > '9')
        return -1;
    for (; *s >= '0' && *s <= '9'; s++) {
        v = v * 10 + (uint32_t)(*s - '0');
        if (v > FL_PMI2_MAX_NODE)
            return -1;
    }
    if (*s != end)
        return -1;
    *p = s + 1;
    *out = v;
    return 0;
}

int fl_pmi2_parse_mapping(const char *s, uint32_t size, uint32_t *node_of)
{
    static const char head[] = "(vector,";
    if (strncmp(s, head, sizeof head - 1) != 0)
        return -1;
    const char *first = s + sizeof head - 1;
    /* Validates every block once, then places ranks pass after pass. */
    uint32_t placed = 0;
    for (int pass = 0; placed < size || pass == 0; pass++) {
        uint32_t before = placed;
        const char *p = first;
        for (;;) {
            uint32_t node, count, ppn;
            if (*p++ != '(' || map_number(&p, ',', &node) != 0 ||
                map_number(&p, ',', &count) != 0 || map_number(&p, ')', &ppn) != 0)
                return -1;
            if (node + count > FL_PMI2_MAX_NODE)
                return -1;
            for (uint32_t n = 0; n < count && placed < size; n++)
                for (uint32_t k = 0; k < ppn && placed < size; k++)
                    node_of[placed++] = node + n;
            if (*p == ')' && p[1] == '\0')
                break;
            if (*p++ != ',')
                return -1;
        }
        if (placed == before && placed < size)
            return -1; /* blocks that place nobody */
    }
    return 0;
}

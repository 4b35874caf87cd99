/* SPDX-License-Identifier: BSD-3-Clause */
/* The fake PMI-2 launcher: see pmi2_fake.h. */
#include "pmi2_fake.h"

#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "boot/pmi2_wire.h"

int pmi2_fake_init(struct pmi2_fake *f, unsigned n, enum pmi2_fault fault)
{
    memset(f, 0, sizeof *f);
    if (n == 0 || n > PMI2_FAKE_MAX) {
        errno = EINVAL;
        return -1;
    }
    f->n = n;
    f->fault = fault;
    f->jobid = "fake;job=1";
    for (unsigned r = 0; r < n; r++) {
        int sv[2];
        if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0)
            return -1;
        f->server[r] = sv[0];
        f->client[r] = sv[1];
    }
    return 0;
}

int pmi2_fake_client_fd(struct pmi2_fake *f, unsigned r)
{
    return f->client[r];
}

void pmi2_fake_close_clients(struct pmi2_fake *f)
{
    for (unsigned r = 0; r < f->n; r++) {
        if (f->client[r] >= 0)
            close(f->client[r]);
        f->client[r] = -1;
    }
}

void pmi2_fake_free(struct pmi2_fake *f)
{
    pmi2_fake_close_clients(f);
    for (unsigned r = 0; r < f->n; r++) {
        if (f->server[r] >= 0)
            close(f->server[r]);
        free(f->in[r]);
    }
    for (unsigned r = 0; r < f->n; r++)
        for (unsigned i = 0; i < f->nheld[r]; i++)
            free(f->held[r][i]);
    for (size_t i = 0; i < f->nkv; i++) {
        free(f->kv[i].key);
        free(f->kv[i].val);
    }
    free(f->kv);
    for (size_t i = 0; i < f->nnode; i++) {
        free(f->node[i].key);
        free(f->node[i].val);
    }
    free(f->node);
    for (unsigned r = 0; r < f->n; r++)
        free(f->waiting[r]);
}

static int broke(struct pmi2_fake *f, unsigned r, const char *fmt, ...)
{
    int at = snprintf(f->error, sizeof f->error, "rank %u: ", r);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(f->error + at, sizeof f->error - (size_t)at, fmt, ap);
    va_end(ap);
    return -1;
}

static void send_raw(struct pmi2_fake *f, unsigned r, const char *p, size_t len)
{
    while (len > 0) {
        ssize_t k = send(f->server[r], p, len, MSG_NOSIGNAL);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            return; /* the rank is gone: it finds out by itself */
        p += k;
        len -= (size_t)k;
    }
}

/* Sends a response made of pairs (key, value, ..., NULL). */
static void respond(struct pmi2_fake *f, unsigned r, ...)
{
    const char *kv[2 * 16];
    unsigned n = 0;
    va_list ap;
    va_start(ap, r);
    for (const char *k; n < 16 && (k = va_arg(ap, const char *));) {
        kv[2 * n] = k;
        kv[2 * n + 1] = va_arg(ap, const char *);
        n++;
    }
    va_end(ap);
    static char frame[FL_PMI2_HDR + FL_PMI2_MAX_BODY];
    long len = fl_pmi2_encode(frame, sizeof frame, kv, n);
    if (len > 0)
        send_raw(f, r, frame, (size_t)len);
}

static const char *find(const struct pmi2_fake_kv *kv, size_t n, const char *key)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(kv[i].key, key) == 0)
            return kv[i].val;
    return NULL;
}

static const char *lookup(struct pmi2_fake *f, const char *key)
{
    return find(f->kv, f->nkv, key);
}

/* Adds key to a space (the job's or the node's). */
static int add(struct pmi2_fake_kv **kvp, size_t *n, const char *key, const char *val)
{
    if (find(*kvp, *n, key))
        return -1; /* flit puts every key once */
    struct pmi2_fake_kv *kv = realloc(*kvp, (*n + 1) * sizeof *kv);
    if (!kv)
        return -1;
    *kvp = kv;
    kv[*n].key = strdup(key);
    kv[*n].val = strdup(val);
    (*n)++;
    return 0;
}

static int store(struct pmi2_fake *f, const char *key, const char *val)
{
    return add(&f->kv, &f->nkv, key, val);
}

static void fullinit(struct pmi2_fake *f, unsigned r, const struct fl_pmi2_msg *m)
{
    char rank[16], size[16];
    unsigned say = r;
    if (f->fault == PMI2_FAULT_RANK_RANGE)
        say = f->n;
    else if (f->fault == PMI2_FAULT_RANK_OTHER)
        say = (r + 1) % f->n;
    snprintf(rank, sizeof rank, "%u", say);
    snprintf(size, sizeof size, "%u", f->n);
    (void)m;
    if (f->fault == PMI2_FAULT_BAD_LENGTH)
        send_raw(f, r, "abcdef", 6);
    else if (f->fault == PMI2_FAULT_GARBLED)
        send_raw(f, r, "27    cmd=fullinit-response;rank;", 33);
    else if (f->fault == PMI2_FAULT_RC)
        respond(f, r, "cmd", "fullinit-response", "rc", "14", "errmsg",
                "no such rank; go away", NULL);
    else
        respond(f, r, "cmd", "fullinit-response", "pmi-version", "2", "pmi-subversion",
                "0", "rank", rank, "size", size, "appnum", "0", "debugged", "FALSE",
                "pmiverbose", "FALSE", "rc", "0", NULL);
}

/* Everyone waiting in the fence gets its answer once all ranks are in. */
static void fence(struct pmi2_fake *f, unsigned r)
{
    if (f->fault == PMI2_FAULT_CLOSE_AT_FENCE) {
        shutdown(f->server[r], SHUT_RDWR);
        return;
    }
    f->fenced[r] = true;
    for (unsigned i = 0; i < f->n; i++)
        if (!f->fenced[i])
            return;
    for (unsigned i = 0; i < f->n; i++) {
        f->fenced[i] = false;
        respond(f, i, "cmd", "kvs-fence-response", "rc", "0", NULL);
    }
    f->fences++;
}

static void answer_get(struct pmi2_fake *f, unsigned r, const char *key);

/* "flit.R.r": the first piece of a blob. */
static bool first_piece(const char *key)
{
    const char *d = strchr(key, '.');
    return strncmp(key, "flit.", 5) == 0 && d && (d = strchr(d + 1, '.')) &&
           !strchr(d + 1, '.');
}

static int get(struct pmi2_fake *f, unsigned r, const char *key)
{
    if (!f->gets_together || !first_piece(key)) {
        answer_get(f, r, key);
        return 0;
    }
    if (f->nheld[r] == PMI2_FAKE_MAX || !(f->held[r][f->nheld[r]] = strdup(key)))
        return broke(f, r, "too many gets held");
    if (++f->nheld[r] < f->n)
        return 0;
    for (unsigned i = 0; i < f->nheld[r]; i++) {
        answer_get(f, r, f->held[r][i]);
        free(f->held[r][i]);
    }
    f->nheld[r] = 0;
    return 0;
}

static void answer_get(struct pmi2_fake *f, unsigned r, const char *key)
{
    const char *val = f->fault == PMI2_FAULT_NO_KEY ? NULL : lookup(f, key);
    char bad[FL_PMI2_VALLEN + 1];
    /* flit.R.r: a blob's length, ':', its first bytes in hex; flit.R.r.i:
       more of them. */
    bool blob = strncmp(key, "flit.", 5) == 0 && strcmp(key, "flit.job") != 0;
    const char *hex = val && blob ? strchr(val, ':') : NULL;
    hex = hex ? hex + 1 : val;
    if (val && blob && f->fault == PMI2_FAULT_BAD_HEX && *hex) {
        snprintf(bad, sizeof bad, "%s", val);
        bad[hex - val] = 'g';
        val = bad;
    } else if (val && blob && f->fault == PMI2_FAULT_BAD_BLOB_LEN) {
        val = "12x";
    }
    if (val)
        respond(f, r, "cmd", "kvs-get-response", "found", "TRUE", "value", val, "rc", "0",
                NULL);
    else
        respond(f, r, "cmd", "kvs-get-response", "found", "FALSE", "rc", "0", NULL);
}

static void end_deadlock(struct pmi2_fake *f);

/* "flit.R.all": rank 0's gathered blobs. */
static bool gathered(const char *key)
{
    const char *who = strncmp(key, "flit.", 5) == 0 ? strchr(key + 5, '.') : NULL;
    return who && strcmp(who + 1, "all") == 0;
}

static void node_answer(struct pmi2_fake *f, unsigned r, const char *key, const char *val)
{
    bool spoil = val && f->fault == PMI2_FAULT_BAD_GATHER && gathered(key);
    if (spoil)
        val = "12:000000000000000000000000";
    if (val)
        respond(f, r, "cmd", "info-getnodeattr-response", "found", "TRUE", "value", val,
                "rc", "0", NULL);
    else
        respond(f, r, "cmd", "info-getnodeattr-response", "found", "FALSE", "rc", "0",
                NULL);
    if (spoil) { /* the rank fails on it: the launcher sees it go (it still
                    reads the answer) */
        close(f->server[r]);
        f->server[r] = -1;
        end_deadlock(f);
    }
}

/* info-putnodeattr: stored, and answered to those waiting for it. */
static int node_put(struct pmi2_fake *f, unsigned r, const char *key, const char *val)
{
    if (f->refuse_node_attrs) {
        respond(f, r, "cmd", "info-putnodeattr-response", "rc", "1", NULL);
        return 0;
    }
    if (!key || !val || strlen(val) > 1023 || add(&f->node, &f->nnode, key, val) != 0)
        return broke(f, r, "a bad info-putnodeattr of %s", key ? key : "(no key)");
    f->node_puts++;
    respond(f, r, "cmd", "info-putnodeattr-response", "rc", "0", NULL);
    for (unsigned w = 0; w < f->n; w++)
        if (f->waiting[w] && strcmp(f->waiting[w], key) == 0) {
            free(f->waiting[w]);
            f->waiting[w] = NULL;
            node_answer(f, w, key, val);
        }
    return 0;
}

/* info-getnodeattr: answered now, or (wait=TRUE) when the key is put. */
static int node_get(struct pmi2_fake *f, unsigned r, const char *key, const char *wait)
{
    if (!key || !wait || (strcmp(wait, "TRUE") != 0 && strcmp(wait, "FALSE") != 0))
        return broke(f, r, "info-getnodeattr without key or wait=TRUE|FALSE");
    const char *val = find(f->node, f->nnode, key);
    f->wait_asks += strcmp(wait, "TRUE") == 0;
    f->node_gets++;
    /* Only rank 0 gathers: the others get "flit.R.all" (and its pieces). */
    f->stray_gets += r > 0 && strncmp(key, "flit.", 5) == 0 && !gathered(key) &&
                     strstr(key, ".all.") == NULL && strncmp(key, "flit.pid.", 9) != 0;
    if (strcmp(wait, "FALSE") == 0) {
        bool not_yet = f->node_not_yet && f->not_yet_turn[r]++ % 3 == 0;
        node_answer(f, r, key, not_yet ? NULL : val);
        return 0;
    }
    if (val) {
        node_answer(f, r, key, val);
        return 0;
    }
    /* Slurm answers waiting gets in the order of the puts: a client with
       two waiting could not tell the answers apart. */
    if (f->waiting[r])
        return broke(f, r, "a second waiting info-getnodeattr (%s, already %s)", key,
                     f->waiting[r]);
    if (!(f->waiting[r] = strdup(key)))
        return broke(f, r, "out of memory");
    end_deadlock(f);
    return 0;
}

static int command(struct pmi2_fake *f, unsigned r, const char *body, size_t len)
{
    static struct fl_pmi2_msg m;
    if (fl_pmi2_decode(body, len, &m) != 0)
        return broke(f, r, "a malformed command: %.*s", (int)len, body);
    const char *cmd = m.pair[0].val, *key = fl_pmi2_get(&m, "key");
    if (strcmp(cmd, "fullinit") == 0) {
        const char *pr = fl_pmi2_get(&m, "pmirank");
        if (!pr || strtoul(pr, NULL, 10) != r || !fl_pmi2_get(&m, "threaded"))
            return broke(f, r, "fullinit without pmirank=%u or threaded", r);
        fullinit(f, r, &m);
    } else if (strcmp(cmd, "job-getid") == 0) {
        respond(f, r, "cmd", "job-getid-response", "jobid", f->jobid, "rc", "0", NULL);
    } else if (strcmp(cmd, "info-getjobattr") == 0) {
        if (!key || strcmp(key, "PMI_process_mapping") != 0)
            return broke(f, r, "info-getjobattr of %s", key ? key : "(no key)");
        f->attr_asks++;
        if (f->refuse_attr)
            respond(f, r, "cmd", "info-getjobattr-response", "rc", "3", NULL);
        else if (f->mapping)
            respond(f, r, "cmd", "info-getjobattr-response", "found", "TRUE", "value",
                    f->mapping, "rc", "0", NULL);
        else
            respond(f, r, "cmd", "info-getjobattr-response", "found", "FALSE", "rc", "0",
                    NULL);
    } else if (strcmp(cmd, "kvs-put") == 0) {
        const char *val = fl_pmi2_get(&m, "value");
        if (!key || !val || strlen(val) > 1023 || store(f, key, val) != 0)
            return broke(f, r, "a bad kvs-put of %s", key ? key : "(no key)");
        respond(f, r, "cmd", "kvs-put-response", "rc", "0", NULL);
    } else if (strcmp(cmd, "kvs-fence") == 0) {
        fence(f, r);
    } else if (strcmp(cmd, "kvs-get") == 0) {
        const char *job = fl_pmi2_get(&m, "jobid");
        if (!key || !job || strcmp(job, f->jobid) != 0)
            return broke(f, r, "kvs-get without key, or with another jobid");
        return get(f, r, key);
    } else if (strcmp(cmd, "info-putnodeattr") == 0) {
        return node_put(f, r, key, fl_pmi2_get(&m, "value"));
    } else if (strcmp(cmd, "info-getnodeattr") == 0) {
        return node_get(f, r, key, fl_pmi2_get(&m, "wait"));
    } else if (strcmp(cmd, "finalize") == 0) {
        f->finalized[r] = true;
        respond(f, r, "cmd", "finalize-response", "rc", "0", NULL);
    } else {
        return broke(f, r, "an unknown command %s", cmd);
    }
    return 0;
}

static int handshake(struct pmi2_fake *f, unsigned r, const char *line, size_t len)
{
    struct fl_pmi2_msg *m = malloc(sizeof *m);
    const char *v;
    int ok = m && fl_pmi2_line_decode(line, len, m) == 0 &&
             strcmp(m->pair[0].val, "init") == 0 && (v = fl_pmi2_get(m, "pmi_version")) &&
             strcmp(v, "2") == 0;
    free(m);
    if (!ok)
        return broke(f, r, "a bad handshake: %.*s", (int)len, line);
    if (f->fault == PMI2_FAULT_NOT_PMI2) {
        static const char one[] =
            "cmd=response_to_init pmi_version=1 pmi_subversion=1 rc=0\n";
        send_raw(f, r, one, sizeof one - 1);
    } else {
        static const char two[] =
            "cmd=response_to_init pmi_version=2 pmi_subversion=0 rc=0\n";
        send_raw(f, r, two, sizeof two - 1);
    }
    f->pmi2[r] = true;
    return 0;
}

/* Handles every whole message in rank r's input. */
static int drain(struct pmi2_fake *f, unsigned r)
{
    size_t at = 0;
    int rc = 0;
    while (rc == 0) {
        char *p = f->in[r] + at;
        size_t left = f->inlen[r] - at;
        if (!f->pmi2[r]) {
            char *nl = memchr(p, '\n', left);
            if (!nl)
                break;
            rc = handshake(f, r, p, (size_t)(nl - p));
            at += (size_t)(nl - p) + 1;
            continue;
        }
        if (left < FL_PMI2_HDR)
            break;
        long len = fl_pmi2_frame_len(p);
        if (len < 0)
            return broke(f, r, "a bad frame length \"%.6s\"", p);
        if (left < FL_PMI2_HDR + (size_t)len)
            break;
        rc = command(f, r, p + FL_PMI2_HDR, (size_t)len);
        at += FL_PMI2_HDR + (size_t)len;
    }
    memmove(f->in[r], f->in[r] + at, f->inlen[r] - at);
    f->inlen[r] -= at;
    return rc;
}

/* When every rank still connected waits for a node attribute, none can
   come: the launcher ends them (it hangs up), as Slurm ends a step. */
static void end_deadlock(struct pmi2_fake *f)
{
    unsigned open = 0, waiting = 0;
    for (unsigned r = 0; r < f->n; r++) {
        open += f->server[r] >= 0;
        waiting += f->server[r] >= 0 && f->waiting[r];
    }
    if (open == 0 || waiting < open)
        return;
    for (unsigned r = 0; r < f->n; r++)
        if (f->server[r] >= 0) {
            close(f->server[r]);
            f->server[r] = -1;
        }
}

static int receive(struct pmi2_fake *f, unsigned r)
{
    char *in = realloc(f->in[r], f->inlen[r] + 65536);
    if (!in)
        return broke(f, r, "out of memory");
    f->in[r] = in;
    ssize_t k = recv(f->server[r], in + f->inlen[r], 65536, 0);
    if (k < 0 && errno == EINTR)
        return 0;
    if (k <= 0) {
        close(f->server[r]);
        f->server[r] = -1;
        end_deadlock(f);
        return 0;
    }
    f->inlen[r] += (size_t)k;
    return drain(f, r);
}

int pmi2_fake_serve(struct pmi2_fake *f, int timeout_ms)
{
    for (;;) {
        struct pollfd pfd[PMI2_FAKE_MAX];
        unsigned who[PMI2_FAKE_MAX], n = 0;
        for (unsigned r = 0; r < f->n; r++) {
            if (f->server[r] < 0)
                continue;
            pfd[n] = (struct pollfd){.fd = f->server[r], .events = POLLIN};
            who[n++] = r;
        }
        if (n == 0)
            return 0;
        int k = poll(pfd, n, timeout_ms);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0) {
            snprintf(f->error, sizeof f->error, "nothing from the ranks in %d ms",
                     timeout_ms);
            return -1;
        }
        for (unsigned i = 0; i < n; i++)
            if (pfd[i].revents && receive(f, who[i]) != 0)
                return -1;
    }
}

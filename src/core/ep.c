/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Endpoints: creation (open the transports, exchange addresses, connect every
 * peer through the first transport that reaches it), destruction, tags,
 * segments, and peers going down.
 */
#include "core/ep.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <unistd.h>

#include "boot/boot.h"
#include "core/barrier.h"
#include "core/packet.h"
#include "core/pub_layer.h"
#include "core/select.h"
#include "platform/le.h"
#include "platform/os.h"
#include "util/config.h"
#include "util/log.h"

__thread unsigned fl_handler_depth __attribute__((tls_model("initial-exec")));
__thread struct flit_ep *fl_in_call __attribute__((tls_model("initial-exec")));

#define BLOB_MAGIC  0x32454c46u /* "FLE2" */
#define FAIL_MAGIC  0x4c494146u /* "FAIL": magic, version, status */
#define FAIL_BLOB   12u
/* magic, version, tag, seg size, ntp, flags, the job-wide settings (their
   number, then FL_CONFIG_JOB_MAX values), then the transports' parts */
#define BLOB_SETTINGS   32u
#define BLOB_HDR        (BLOB_SETTINGS + 4u + 8u * FL_CONFIG_JOB_MAX)
#define BLOB_RENDEZVOUS 1u /* flags: a transport asked for the round */
#define TP_BLOB_MAX 512u
#define KNOWN_PARAMS                                                                     \
    (FLIT_EP_PARAM_THREAD_MODE | FLIT_EP_PARAM_SEGMENT | FLIT_EP_PARAM_TAG |             \
     FLIT_EP_PARAM_HANDLER_COUNT | FLIT_EP_PARAM_PROGRESS_THREAD | FLIT_EP_PARAM_LAYERS)

flit_status fl_ep_check(struct flit_ep *ep)
{
    flit_status st = fl_job_check();
    if (st != FLIT_OK)
        return st;
    if (ep && ep->magic == FL_EP_RETIRED)
        return FLIT_ERR_CLOSED;
    return ep && ep->magic == FL_EP_MAGIC ? FLIT_OK : FLIT_ERR_INVALID_ARG;
}

flit_status fl_ep_enter_slow(struct flit_ep *ep)
{
    if (ep && ep->magic == FL_EP_RETIRED)
        return FLIT_ERR_CLOSED;
    if (!ep || ep->magic != FL_EP_MAGIC)
        return FLIT_ERR_INVALID_ARG;
    if (fl_handler_depth)
        return FLIT_ERR_IN_HANDLER;
    if (fl_in_call) {
        /* This very thread is inside a call already: only a signal handler
           gets here (nothing inside flit calls flit again). */
        static _Atomic int reentered;
        if (!atomic_exchange(&reentered, 1))
            fl_error("endpoint %u was called while this thread was inside a "
                     "call on endpoint %u: from a signal handler? flit calls "
                     "are not async-signal-safe",
                     ep->index, fl_in_call->index);
        return FLIT_ERR_IN_HANDLER;
    }
    /* Single-threaded endpoint, and another thread is inside a call. */
    static _Atomic int reported;
    if (!atomic_exchange(&reported, 1))
        fl_error("endpoint %u is single-threaded but two threads used it at "
                 "once; create it with FLIT_THREAD_SAFE",
                 ep->index);
    return FLIT_ERR_THREAD;
}

void fl_ep_left_closing(struct flit_ep *ep)
{
    pthread_cond_broadcast(&ep->progress_cond); /* the destroyer waits there */
}

/*
 * Thread-safe endpoints: ends the calls other threads are inside. They
 * see closing when they wake (off the fd, out of the condition, or at the
 * next pass of a wait) and leave with FLIT_ERR_CLOSED; returns when only
 * the caller is inside. Under lock, entered.
 */
static void close_out_others(struct flit_ep *ep)
{
    ep->closing = true;
    ep->closer = fl_thread_id();
    while (ep->inside > 1) {
        uint64_t one = 1;
        ssize_t w = write(ep->evfd, &one, sizeof one);
        (void)w;
        pthread_cond_broadcast(&ep->progress_cond);
        ep->cond_waiters++; /* so that those leaving broadcast */
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        ts.tv_nsec += 10000000; /* a poke lost to a thread not asleep yet */
        if (ts.tv_nsec >= 1000000000) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000;
        }
        pthread_cond_timedwait(&ep->progress_cond, &ep->lock, &ts);
        ep->cond_waiters--;
    }
}

_Noreturn void fl_ep_thread_clash(struct flit_ep *ep)
{
    fl_error("endpoint %u is single-threaded but two threads were inside it "
             "at once; its state cannot be trusted: aborting. Create it with "
             "FLIT_THREAD_SAFE to share it between threads",
             ep->index);
    abort();
}

/* ---- parameters ---- */

struct ep_setup {
    flit_thread_mode mode;
    void *seg_addr;
    size_t seg_size;
    uint64_t tag;
    uint32_t handler_count;
    bool progress_thread;
    const char *layers; /* the layers on request to open (pub_layer.h) */
};

static flit_status read_params(const flit_ep_params_t *p, struct ep_setup *s)
{
    s->mode = FLIT_THREAD_SINGLE;
    s->seg_addr = NULL;
    s->seg_size = 0;
    s->tag = fl_job.default_tag;
    s->handler_count = FLIT_HANDLER_COUNT_DEFAULT;
    s->progress_thread = fl_cfg.progress_thread != 0;
    s->layers = NULL;
    if (!p) {
        if (s->progress_thread)
            s->mode = FLIT_THREAD_SAFE; /* as below: two threads will use it */
        return FLIT_OK;
    }
    uint64_t f = p->field_mask;
    if (f & ~(uint64_t)KNOWN_PARAMS)
        return FLIT_ERR_INVALID_ARG;
    if (f & FLIT_EP_PARAM_THREAD_MODE) {
        if (p->thread_mode != FLIT_THREAD_SINGLE && p->thread_mode != FLIT_THREAD_SAFE)
            return FLIT_ERR_INVALID_ARG;
        s->mode = p->thread_mode;
    }
    if (f & FLIT_EP_PARAM_SEGMENT) {
        if (p->segment_addr && p->segment_size == 0)
            return FLIT_ERR_INVALID_ARG;
        if (p->segment_size > ((size_t)1 << 46))
            return FLIT_ERR_TOO_LARGE;
        s->seg_addr = p->segment_addr;
        s->seg_size = p->segment_size;
    }
    if (f & FLIT_EP_PARAM_TAG)
        s->tag = p->tag;
    if (f & FLIT_EP_PARAM_HANDLER_COUNT) {
        if (p->handler_count == 0 || p->handler_count > FLIT_HANDLER_COUNT_MAX)
            return FLIT_ERR_INVALID_ARG;
        s->handler_count = p->handler_count;
    }
    if (f & FLIT_EP_PARAM_PROGRESS_THREAD)
        s->progress_thread = p->progress_thread != 0;
    if (s->progress_thread)
        s->mode = FLIT_THREAD_SAFE; /* two threads will use it */
    if (f & FLIT_EP_PARAM_LAYERS) {
        if (!fl_pub_names_ok(p->layers))
            return FLIT_ERR_INVALID_ARG;
        s->layers = p->layers;
    }
    return FLIT_OK;
}

/* ---- segment ---- */

static flit_status segment_open(struct flit_ep *ep, const struct ep_setup *s)
{
    ep->seg_fd = -1;
    ep->seg_size = s->seg_size;
    if (s->seg_size == 0)
        return FLIT_OK;
    if (s->seg_addr) {
        ep->seg = s->seg_addr;
        return FLIT_OK;
    }
    char name[96];
    fl_job_shm_name(name, sizeof name, ep->rank, ep->index, "-seg");
    int err = fl_shm_create(name, s->seg_size, &ep->seg_fd, &ep->seg);
    if (err) {
        fl_error("cannot create a %zu-byte segment in /dev/shm: %s", s->seg_size,
                 strerror(-err));
        return err == -ENOMEM || err == -ENOSPC ? FLIT_ERR_NO_MEMORY : FLIT_ERR_SYSTEM;
    }
    ep->seg_owned = true;
    return FLIT_OK;
}

static void segment_close(struct flit_ep *ep)
{
    if (!ep->seg_owned)
        return;
    munmap(ep->seg, ep->seg_size);
    close(ep->seg_fd);
    char name[96];
    fl_job_shm_name(name, sizeof name, ep->rank, ep->index, "-seg");
    fl_shm_unlink(name); /* normally gone already, after setup */
}

/* ---- transports and the exchange ---- */

static void transport_saw_down(void *ctx, uint32_t rank, flit_status reason)
{
    fl_ep_peer_down(ctx, rank, reason);
}

/* Opens tp with a counter block of its own, which the endpoint keeps. */
static flit_status open_transport(struct flit_ep *ep, const struct fl_transport *tp,
                                  struct fl_tp_open_args *args)
{
    void *counters = tp->counters_size ? calloc(1, tp->counters_size) : NULL;
    if (tp->counters_size && !counters)
        return FLIT_ERR_NO_MEMORY;
    args->counters = counters;
    struct fl_tp_ep *t = NULL;
    flit_status st = tp->open(args, &t);
    if (st == FLIT_OK) {
        ep->tps[ep->ntp] = tp;
        ep->tp_counters[ep->ntp] = counters;
        ep->tpes[ep->ntp++] = t;
        return fl_counters_add(ep, tp->name, tp->counters, counters);
    }
    free(counters);
    return st;
}

static flit_status open_transports(struct flit_ep *ep)
{
    struct fl_tp_open_args args = {
        .job_id = fl_job.job_id,
        .rank = ep->rank,
        .size = ep->size,
        .ep_index = ep->index,
        .segment = ep->seg,
        .segment_size = ep->seg_size,
        .segment_fd = ep->seg_fd,
        .tag = ep->tag,
        .host_of = fl_job.host_of,
        .net_hint = fl_job.net_hint,
        .max_packet = FL_PACKET_MAX,
        .peer_down = transport_saw_down,
        .up_ctx = ep,
    };
    const struct fl_transport *const *all = fl_job.transports;
    for (int i = 0; all[i] && ep->ntp < FL_MAX_TRANSPORTS; i++) {
        if (!fl_select_opens(all[i]))
            continue; /* another serves every peer it could */
        flit_status st = open_transport(ep, all[i], &args);
        if (st == FLIT_ERR_NOT_SUPPORTED)
            continue; /* not needed by this job (no local peers, ...) */
        if (st != FLIT_OK) {
            fl_error("cannot open the %s transport: %s", all[i]->name, flit_strerror(st));
            return st;
        }
    }
    return FLIT_OK;
}

static flit_status build_blob(struct flit_ep *ep, uint8_t **out, size_t *len)
{
    size_t cap = BLOB_HDR + (size_t)ep->ntp * (8 + TP_BLOB_MAX);
    uint8_t *b = malloc(cap);
    if (!b)
        return FLIT_ERR_NO_MEMORY;
    fl_put32(b, BLOB_MAGIC);
    fl_put32(b + 4, FL_WIRE_VERSION);
    fl_put64(b + 8, ep->tag);
    fl_put64(b + 16, ep->seg_size);
    fl_put32(b + 24, (uint32_t)ep->ntp);
    uint32_t flags = 0;
    for (int i = 0; i < ep->ntp; i++)
        if (ep->tps[i]->rendezvous && ep->tps[i]->rendezvous(ep->tpes[i]))
            flags |= BLOB_RENDEZVOUS;
    fl_put32(b + 28, flags);
    int64_t set[FL_CONFIG_JOB_MAX] = {0};
    fl_put32(b + BLOB_SETTINGS, fl_config_job_values(set, FL_CONFIG_JOB_MAX));
    for (unsigned k = 0; k < FL_CONFIG_JOB_MAX; k++)
        fl_put64(b + BLOB_SETTINGS + 4 + 8 * k, (uint64_t)set[k]);
    size_t pos = BLOB_HDR;
    for (int i = 0; i < ep->ntp; i++) {
        size_t n = TP_BLOB_MAX;
        flit_status st = ep->tps[i]->address(ep->tpes[i], b + pos + 8, &n);
        if (st != FLIT_OK) {
            free(b);
            return st;
        }
        fl_put32(b + pos, fl_tp_id(ep->tps[i]));
        fl_put32(b + pos + 4, (uint32_t)n);
        pos += 8 + n;
    }
    *out = b;
    *len = pos;
    return FLIT_OK;
}

/* Finds transport tp's part in a peer's blob. */
static const uint8_t *blob_part(const uint8_t *b, size_t len, uint32_t id,
                                size_t *part_len)
{
    uint32_t ntp = fl_get32(b + 24);
    size_t pos = BLOB_HDR;
    for (uint32_t i = 0; i < ntp && pos + 8 <= len; i++) {
        uint32_t n = fl_get32(b + pos + 4);
        if (n > len - pos - 8)
            return NULL;
        if (fl_get32(b + pos) == id) {
            *part_len = n;
            return b + pos + 8;
        }
        pos += 8 + n;
    }
    return NULL;
}

static flit_status connect_peer(struct flit_ep *ep, uint32_t r, const uint8_t *b,
                                size_t len)
{
    struct fl_peer *p = &ep->peers[r];
    if (len < BLOB_HDR || fl_get32(b) != BLOB_MAGIC ||
        fl_get32(b + 4) != FL_WIRE_VERSION) {
        fl_error("rank %u published an endpoint address this flit cannot read", r);
        return FLIT_ERR_BOOT;
    }
    p->tag = fl_get64(b + 8);
    p->seg_size = fl_get64(b + 16);
    unsigned kind = fl_select_kind(r);
    for (int i = 0; i < ep->ntp; i++) {
        size_t n;
        if (!fl_select_allowed(ep->tps[i], kind))
            continue;
        const uint8_t *part = blob_part(b, len, fl_tp_id(ep->tps[i]), &n);
        if (!part || !ep->tps[i]->reachable(ep->tpes[i], r, part, n))
            continue;
        flit_status st = ep->tps[i]->connect(ep->tpes[i], r, part, n);
        if (st != FLIT_OK)
            return st;
        p->tp = ep->tps[i];
        p->tpe = ep->tpes[i];
        p->put_ok = (p->tp->caps & FL_TP_PUT) && p->seg_size > 0;
        return FLIT_OK;
    }
    char may[128];
    fl_select_describe(kind, may, sizeof may);
    if (kind == FL_REACH_HOST)
        fl_error("no transport reaches rank %u (tried: %s), on this host by the "
                 "launcher's account: does one of us run in namespaces of its own (IPC, "
                 "network, /dev/shm)? Start such ranks as if on other hosts (flitrun "
                 "--hosts, --launch)",
                 r, may);
    else
        fl_error("no transport reaches rank %u (tried: %s)", r, may);
    return FLIT_ERR_UNREACHABLE;
}

/*
 * The round a rendezvous asks for: every rank says how connecting went, and
 * all of them fail if one did (nobody is left waiting in the next exchange).
 * Returns the first failure, ours first.
 */
static flit_status agree(struct flit_ep *ep, flit_status mine, const char *step)
{
    uint8_t b[4];
    fl_put32(b, (uint32_t)mine);
    struct fl_blobs *all;
    flit_status st = fl_boot_allgather_in("flit_ep_create", b, sizeof b, &all);
    if (st != FLIT_OK)
        return st;
    for (uint32_t r = 0; r < ep->size; r++) {
        flit_status theirs =
            all->len[r] == 4 ? (flit_status)fl_get32(all->blob[r]) : FLIT_ERR_BOOT;
        if (theirs == FLIT_OK || r == ep->rank)
            continue;
        fl_error("rank %u could not %s endpoint %u: %s", r, step, ep->index,
                 flit_strerror(theirs));
        if (mine == FLIT_OK)
            mine = theirs;
    }
    fl_blobs_free(all);
    return mine;
}

/*
 * Whether every rank has this rank's job-wide settings (FLIT_TRANSPORT, ...):
 * ranks that differ there can reach some peers and not others, and fail
 * connecting alone. Every rank sees the same blobs, so all of them fail
 * here together, each naming the first rank that differs from it.
 */
static flit_status same_settings(struct flit_ep *ep, const struct fl_blobs *all)
{
    const uint8_t *mine = all->blob[ep->rank];
    for (uint32_t r = 0; r < ep->size; r++) {
        const uint8_t *b = all->blob[r];
        if (all->len[r] < BLOB_HDR || fl_get32(b) != BLOB_MAGIC)
            continue; /* connect_peer says what is wrong with it */
        for (unsigned k = 0; k < FL_CONFIG_JOB_MAX; k++) {
            size_t at = BLOB_SETTINGS + 4 + 8 * k;
            if (fl_get64(b + at) == fl_get64(mine + at))
                continue;
            const char *name;
            char theirs[64], ours[64];
            fl_config_job_describe(k, (int64_t)fl_get64(b + at), &name, theirs,
                                   sizeof theirs);
            fl_config_job_describe(k, (int64_t)fl_get64(mine + at), &name, ours,
                                   sizeof ours);
            fl_error("rank %u has %s=%s, this rank %s: it must be the same on every rank",
                     r, name, theirs, ours);
            return FLIT_ERR_INVALID_ARG;
        }
    }
    return FLIT_OK;
}

/* A rank that could not open the endpoint says so in place of its address. */
static flit_status failed_blob(const uint8_t *b, size_t len)
{
    if (len != FAIL_BLOB || fl_get32(b) != FAIL_MAGIC ||
        fl_get32(b + 4) != FL_WIRE_VERSION)
        return FLIT_OK;
    flit_status st = (flit_status)fl_get32(b + 8);
    return st != FLIT_OK ? st : FLIT_ERR_BOOT;
}

/*
 * One exchange: every rank's address, or the status that kept it from
 * opening the endpoint. Every rank sees the same blobs, so all of them fail
 * together when one could not open (the first failure, ours first), and
 * otherwise connect to every peer. Connecting fails only on what the
 * addresses say, which both ends of a pair see (->connect), so no second
 * round is needed to fail together, unless a transport asked for one: a
 * launcher round costs a fence of every process, 10-40 ms at 32-64 ranks a
 * host under PMIx.
 */
static flit_status exchange_and_connect(struct flit_ep *ep, flit_status opened)
{
    uint8_t fail[FAIL_BLOB], *mine = fail;
    size_t len = FAIL_BLOB;
    if (opened == FLIT_OK)
        opened = build_blob(ep, &mine, &len);
    if (opened != FLIT_OK) {
        mine = fail;
        len = FAIL_BLOB;
        fl_put32(fail, FAIL_MAGIC);
        fl_put32(fail + 4, FL_WIRE_VERSION);
        fl_put32(fail + 8, (uint32_t)opened);
    }
    struct fl_blobs *all;
    flit_status st = fl_boot_allgather_in("flit_ep_create", mine, len, &all);
    if (mine != fail)
        free(mine);
    if (st != FLIT_OK)
        return st;
    st = opened;
    for (uint32_t r = 0; r < ep->size; r++) {
        flit_status theirs = failed_blob(all->blob[r], all->len[r]);
        if (theirs == FLIT_OK || r == ep->rank)
            continue;
        fl_error("rank %u could not open endpoint %u: %s", r, ep->index,
                 flit_strerror(theirs));
        if (st == FLIT_OK)
            st = theirs;
    }
    if (st == FLIT_OK)
        st = same_settings(ep, all);
    if (st != FLIT_OK) {
        fl_blobs_free(all);
        return st;
    }
    bool rendezvous = false;
    for (uint32_t r = 0; r < ep->size; r++) {
        if (st == FLIT_OK)
            st = connect_peer(ep, r, all->blob[r], all->len[r]);
        if (all->len[r] >= BLOB_HDR && (fl_get32(all->blob[r] + 28) & BLOB_RENDEZVOUS)) {
            if (!rendezvous)
                fl_info("endpoint %u: rank %u asks for a rendezvous: one more round", ep->index,
                        r);
            rendezvous = true;
        }
    }
    fl_blobs_free(all);
    return rendezvous ? agree(ep, st, "connect") : st;
}

/* Nobody needs the names any more (after the rendezvous, where there was one). */
static void forget_names(struct flit_ep *ep)
{
    for (int i = 0; i < ep->ntp; i++)
        ep->tps[i]->connected(ep->tpes[i]);
    if (ep->seg_owned) {
        char name[96];
        fl_job_shm_name(name, sizeof name, ep->rank, ep->index, "-seg");
        fl_shm_unlink(name);
    }
}

static flit_status build_epoll(struct flit_ep *ep)
{
    ep->epfd = epoll_create1(EPOLL_CLOEXEC);
    ep->evfd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (ep->epfd < 0 || ep->evfd < 0)
        return FLIT_ERR_SYSTEM;
    struct epoll_event ev = {.events = EPOLLIN};
    if (epoll_ctl(ep->epfd, EPOLL_CTL_ADD, ep->evfd, &ev) != 0)
        return FLIT_ERR_SYSTEM;
    for (int i = 0; i < ep->ntp; i++) {
        int fd = ep->tps[i]->fd(ep->tpes[i]);
        if (fd >= 0 && epoll_ctl(ep->epfd, EPOLL_CTL_ADD, fd, &ev) != 0)
            return FLIT_ERR_SYSTEM;
    }
    return FLIT_OK;
}

static void print_peers(struct flit_ep *ep)
{
    for (uint32_t r = 0; r < ep->size; r++) {
        char line[200];
        ep->peers[r].tp->dump_peer(ep->peers[r].tpe, r, line, sizeof line);
        fl_info("endpoint %u: rank %u -> %s: %s", ep->index, r, ep->peers[r].tp->name,
                line);
    }
}

/* ---- create / destroy ---- */

/* Everything the endpoint holds but its own struct (lock, closing flag). */
static void ep_release(struct flit_ep *ep)
{
    ep->ncounter_srcs = 0; /* what they count from goes now */
    fl_pub_ep_free(ep);
    fl_layers_ep_close(ep);
    for (int i = 0; i < ep->ntp; i++) {
        ep->tps[i]->close(ep->tpes[i]);
        free(ep->tp_counters[i]);
    }
    ep->ntp = 0;
    if (ep->epfd >= 0)
        close(ep->epfd);
    if (ep->evfd >= 0)
        close(ep->evfd);
    ep->epfd = ep->evfd = -1;
    segment_close(ep);
    free(ep->peers);
    ep->peers = NULL;
}

static void ep_free(struct flit_ep *ep)
{
    ep_release(ep);
    pthread_mutex_destroy(&ep->lock);
    pthread_cond_destroy(&ep->progress_cond);
    ep->magic = 0;
    free(ep);
}

/*
 * A destroyed endpoint keeps its struct (2 KB) until flit_finalize: a
 * thread whose call began as the endpoint was being destroyed may still be
 * on its way in, past the handle check or blocked on its lock, and it must
 * find the lock and the closing flag there (FLIT_ERR_CLOSED), not freed
 * memory; a call that starts later answers FLIT_ERR_CLOSED too.
 */
static struct flit_ep *retired; /* under fl_job.lock */

static void ep_retire(struct flit_ep *ep)
{
    ep_release(ep);
    ep->magic = FL_EP_RETIRED;
    pthread_mutex_lock(&fl_job.lock);
    ep->next = retired;
    retired = ep;
    pthread_mutex_unlock(&fl_job.lock);
}

void fl_ep_free_retired(void)
{
    pthread_mutex_lock(&fl_job.lock);
    struct flit_ep *ep = retired;
    retired = NULL;
    pthread_mutex_unlock(&fl_job.lock);
    while (ep) {
        struct flit_ep *next = ep->next;
        pthread_mutex_destroy(&ep->lock);
        pthread_cond_destroy(&ep->progress_cond);
        ep->magic = 0;
        free(ep);
        ep = next;
    }
}

/* s NULL: allocation failed; still takes part in the exchanges, to fail
   together with the others. */
static flit_status ep_setup(struct flit_ep *ep, const struct ep_setup *s)
{
    flit_status st = s ? segment_open(ep, s) : FLIT_ERR_NO_MEMORY;
    if (st == FLIT_OK)
        st = open_transports(ep);
    if (st == FLIT_OK)
        st = build_epoll(ep);
    st = exchange_and_connect(ep, st);
    if (st == FLIT_OK)
        forget_names(ep);
    return st;
}

static void job_list_add(struct flit_ep *ep)
{
    pthread_mutex_lock(&fl_job.lock);
    struct flit_ep **pp = &fl_job.eps;
    while (*pp)
        pp = &(*pp)->next;
    *pp = ep;
    pthread_mutex_unlock(&fl_job.lock);
}

static void job_list_remove(struct flit_ep *ep)
{
    pthread_mutex_lock(&fl_job.lock);
    for (struct flit_ep **pp = &fl_job.eps; *pp; pp = &(*pp)->next)
        if (*pp == ep) {
            *pp = ep->next;
            break;
        }
    pthread_mutex_unlock(&fl_job.lock);
}

flit_status flit_ep_create(const flit_ep_params_t *params, flit_ep_t **ep_out)
{
    flit_status st = fl_job_check();
    if (st != FLIT_OK)
        return st;
    if (fl_handler_depth)
        return FLIT_ERR_IN_HANDLER;
    if (!ep_out)
        return FLIT_ERR_INVALID_ARG;
    struct ep_setup s;
    st = read_params(params, &s);
    if (st != FLIT_OK)
        return st;
    struct flit_ep *ep = calloc(1, sizeof *ep);
    if (!ep)
        return FLIT_ERR_NO_MEMORY;
    /* Creation is collective and matched by order: one at a time. */
    static pthread_mutex_t create_lock = PTHREAD_MUTEX_INITIALIZER;
    pthread_mutex_lock(&create_lock);
    ep->magic = FL_EP_MAGIC;
    ep->rank = fl_job.rank;
    ep->size = fl_job.size;
    ep->mode = s.mode;
    ep->tag = s.tag;
    ep->epfd = ep->evfd = -1;
    ep->handler_count = s.handler_count;
    ep->handler_floor = s.handler_count;
    pthread_mutex_init(&ep->lock, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&ep->progress_cond, &ca);
    pthread_condattr_destroy(&ca);
    pthread_mutex_lock(&fl_job.lock);
    ep->index = fl_job.next_ep_index++;
    pthread_mutex_unlock(&fl_job.lock);
    ep->peers = calloc(ep->size, sizeof *ep->peers);
    st = ep->peers ? FLIT_OK : FLIT_ERR_NO_MEMORY;
    if (st == FLIT_OK)
        st = fl_counters_add(ep, "core", fl_core_counters, &ep->stats);
    if (st == FLIT_OK)
        st = fl_layers_ep_open(ep);
    st = ep_setup(ep, st == FLIT_OK ? &s : NULL);
    pthread_mutex_unlock(&create_lock);
    if (st == FLIT_OK && s.progress_thread)
        st = fl_progress_thread_start(ep);
    if (st != FLIT_OK) {
        ep_free(ep);
        return st;
    }
    job_list_add(ep);
    if (fl_cfg.verbose)
        print_peers(ep);
    /* The layers on the public API open on an endpoint that works. */
    if ((st = fl_pub_ep_open(ep, s.layers)) != FLIT_OK) {
        (void)flit_ep_destroy(ep);
        return st;
    }
    *ep_out = ep;
    return FLIT_OK;
}

/* Destruction waits this long at most for the last acknowledgements. */
#define LINGER_US 2000000

bool fl_ep_settled(struct flit_ep *ep, void *arg)
{
    (void)arg;
    for (int i = 0; i < ep->ntp; i++)
        if (!ep->tps[i]->settled(ep->tpes[i]))
            return false;
    return true;
}

flit_status flit_ep_destroy(flit_ep_t *ep)
{
    flit_status st = fl_ep_check(ep);
    if (st != FLIT_OK)
        return st;
    if (fl_handler_depth)
        return FLIT_ERR_IN_HANDLER;
    fl_pub_ep_close(ep);
    fl_listeners_closing(ep);
    fl_progress_thread_stop(ep);
    st = fl_ep_enter(ep);
    if (st != FLIT_OK)
        return st;
    if (ep->mode == FLIT_THREAD_SAFE)
        close_out_others(ep);
    st = fl_layers_ep_quiesce(ep);
    if (st == FLIT_OK)
        st = fl_ep_quiesce(ep);
    if (st == FLIT_OK)
        fl_progress_until(ep, fl_ep_settled, NULL, LINGER_US);
    fl_ep_leave(ep);
    job_list_remove(ep);
    if (fl_cfg.stats)
        fl_stats_print(ep);
    ep_retire(ep);
    return st;
}

/* Single-threaded endpoints another thread is inside a call on. */
static struct flit_ep *busy_single_ep(void)
{
    uintptr_t self = fl_thread_id();
    struct flit_ep *busy = NULL;
    pthread_mutex_lock(&fl_job.lock);
    for (struct flit_ep *ep = fl_job.eps; ep && !busy; ep = ep->next) {
        uintptr_t owner = atomic_load_explicit(&ep->owner, memory_order_relaxed);
        if (ep->mode == FLIT_THREAD_SINGLE && owner && owner != self)
            busy = ep;
    }
    pthread_mutex_unlock(&fl_job.lock);
    return busy;
}

flit_status fl_ep_destroy_all(void)
{
    struct flit_ep *busy = busy_single_ep();
    if (busy) {
        fl_error("flit_finalize: endpoint %u is single-threaded and another "
                 "thread is inside a call on it (flit_wait?); nothing was "
                 "finalized: call it again once that thread has returned",
                 busy->index);
        return FLIT_ERR_THREAD;
    }
    for (;;) {
        pthread_mutex_lock(&fl_job.lock);
        struct flit_ep *ep = fl_job.eps;
        pthread_mutex_unlock(&fl_job.lock);
        if (!ep)
            return FLIT_OK;
        /* Only a thread that entered since the look above can refuse us;
           never retry in a loop (it may stay inside for ever). */
        flit_status st = flit_ep_destroy(ep);
        if (st == FLIT_ERR_THREAD || st == FLIT_ERR_CLOSED)
            return st;
    }
}

void fl_ep_dump_all(int fd)
{
    pthread_mutex_lock(&fl_job.lock);
    for (struct flit_ep *ep = fl_job.eps; ep; ep = ep->next)
        fl_stats_dump(ep, fd);
    pthread_mutex_unlock(&fl_job.lock);
}

/* ---- peers going down ---- */

/* What we sent a dead peer and it never took goes back to its layer. */
static void reclaim_one(void *ctx, uint32_t dst, unsigned lane, void *pkt, size_t len)
{
    (void)lane;
    fl_packet_back(ctx, dst, pkt, len, FLIT_ERR_PEER_DOWN, true);
}

void fl_ep_peer_down(struct flit_ep *ep, uint32_t rank, flit_status reason)
{
    struct fl_peer *p = &ep->peers[rank];
    int expected = 0;
    if (!atomic_compare_exchange_strong(&p->down, &expected, (int)reason))
        return;
    ep->events++;
    if (ep->cond_waiters)
        pthread_cond_broadcast(&ep->progress_cond);
    if (p->fin[FL_LANE_REP])
        return; /* it was done with this endpoint: a clean exit */
    if (ep->quiescing && !p->tp->in_contact(p->tpe, rank))
        return; /* we are ending, and it never sent or was sent a packet here */
    FL_COUNT(ep->stats.peers_down, 1);
    p->tp->reclaim(p->tpe, rank, reclaim_one, ep);
    fl_layers_peer_down(ep, rank);
    if (!ep->down_fn && !ep->nlisteners)
        fl_warn("endpoint %u: rank %u is down: %s", ep->index, rank,
                flit_strerror(reason));
    fl_handler_depth++; /* they may not send: the endpoint is mid-progress */
    if (ep->down_fn)
        ep->down_fn(ep, flit_rank(rank), reason, ep->down_user);
    fl_listeners_peer_down(ep, rank, reason);
    fl_pub_peer_down(ep, rank, reason);
    fl_handler_depth--;
}

/* ---- small queries and settings ---- */

flit_status flit_ep_segment(flit_ep_t *ep, void **addr_out, size_t *size_out)
{
    flit_status st = fl_ep_check(ep);
    if (st != FLIT_OK)
        return st;
    if (!addr_out || !size_out)
        return FLIT_ERR_INVALID_ARG;
    *addr_out = ep->seg;
    *size_out = ep->seg_size;
    return FLIT_OK;
}

flit_status flit_ep_peer_segment_size(flit_ep_t *ep, flit_rank_t rank, size_t *size_out)
{
    flit_status st = fl_ep_check(ep);
    if (st != FLIT_OK)
        return st;
    if (!size_out)
        return FLIT_ERR_INVALID_ARG;
    if (rank.idx >= ep->size)
        return FLIT_ERR_RANK;
    *size_out = ep->peers[rank.idx].seg_size;
    return FLIT_OK;
}

flit_status flit_ep_peer_info(flit_ep_t *ep, flit_rank_t rank, flit_peer_info_t *info_out)
{
    flit_status st = fl_ep_check(ep);
    if (st != FLIT_OK)
        return st;
    if (!info_out || info_out->struct_size != sizeof *info_out)
        return FLIT_ERR_INVALID_ARG;
    if (rank.idx >= ep->size)
        return FLIT_ERR_RANK;
    const struct fl_peer *p = &ep->peers[rank.idx];
    info_out->transport = p->tp->name;
    p->tp->peer_address(p->tpe, rank.idx, info_out->address, sizeof info_out->address);
    info_out->max_packet = p->tp->max_packet(p->tpe);
    info_out->datagram =
        p->tp->peer_datagram ? p->tp->peer_datagram(p->tpe, rank.idx) : 0;
    info_out->down = fl_peer_is_down(p);
    return FLIT_OK;
}

flit_status flit_ep_tag(flit_ep_t *ep, uint64_t *tag_out)
{
    flit_status st = fl_ep_check(ep);
    if (st != FLIT_OK)
        return st;
    if (!tag_out)
        return FLIT_ERR_INVALID_ARG;
    *tag_out = ep->tag;
    return FLIT_OK;
}

flit_status flit_ep_set_tag(flit_ep_t *ep, uint64_t tag)
{
    flit_status st = fl_ep_enter(ep);
    if (st != FLIT_OK)
        return st;
    ep->tag = tag;
    for (int i = 0; i < ep->ntp; i++)
        if (ep->tps[i]->caps & FL_TP_PUT)
            ep->tps[i]->set_tag(ep->tpes[i], tag);
    fl_ep_leave(ep);
    return FLIT_OK;
}

flit_status flit_ep_set_peer_tag(flit_ep_t *ep, flit_rank_t rank, uint64_t tag)
{
    flit_status st = fl_ep_enter(ep);
    if (st != FLIT_OK)
        return st;
    if (rank.idx >= ep->size)
        st = FLIT_ERR_RANK;
    else
        ep->peers[rank.idx].tag = tag;
    fl_ep_leave(ep);
    return st;
}

flit_status flit_ep_thread_mode(flit_ep_t *ep, flit_thread_mode *mode_out)
{
    flit_status st = fl_ep_check(ep);
    if (st != FLIT_OK)
        return st;
    if (!mode_out)
        return FLIT_ERR_INVALID_ARG;
    *mode_out = ep->mode;
    return FLIT_OK;
}

flit_status flit_ep_set_peer_down_handler(flit_ep_t *ep, flit_peer_down_fn fn, void *user)
{
    flit_status st = fl_ep_enter(ep);
    if (st != FLIT_OK)
        return st;
    ep->down_fn = fn;
    ep->down_user = user;
    fl_ep_leave(ep);
    return FLIT_OK;
}

size_t fl_ep_piece_size(struct flit_ep *ep, uint32_t dst, size_t hdr_len)
{
    struct fl_peer *p = &ep->peers[dst];
    if (__builtin_expect(p->max_packet == 0, 0)) {
        p->max_packet = (uint32_t)p->tp->max_packet(p->tpe);
        p->packet_fit =
            p->tp->peer_packet_fit ? (uint32_t)p->tp->peer_packet_fit(p->tpe, dst) : 0;
    }
    size_t room = p->max_packet - hdr_len;
    size_t chunk = (size_t)fl_cfg.long_chunk < room ? (size_t)fl_cfg.long_chunk : room;
    /* Over datagrams, a piece fills one datagram: fewer, fuller system calls. */
    size_t fit = p->packet_fit;
    if (fit > hdr_len + 64)
        chunk = fit - hdr_len < room ? fit - hdr_len : room;
    return chunk;
}

/* SPDX-License-Identifier: BSD-3-Clause */
/* flit_init / flit_finalize: joining and leaving the job. */
#include "core/job.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "boot/boot.h"
#include "core/barrier.h"
#include "core/ep.h"
#include "core/select.h"
#include "platform/fiber.h"
#include "platform/os.h"
#include "util/config.h"
#include "util/log.h"

struct fl_job fl_job = {.lock = PTHREAD_MUTEX_INITIALIZER};
_Atomic int fl_job_state = FL_JOB_NONE;

flit_status fl_job_state_error(void)
{
    switch (atomic_load_explicit(&fl_job_state, memory_order_relaxed)) {
    case FL_JOB_NONE:
        return FLIT_ERR_NOT_INITIALIZED;
    case FL_JOB_FINALIZED:
        return FLIT_ERR_FINALIZED;
    case FL_JOB_FORKED:
        return FLIT_ERR_FORKED;
    default:
        return FLIT_OK;
    }
}

void fl_job_shm_name(char *buf, size_t len, uint32_t rank, uint32_t ep,
                     const char *suffix)
{
    fl_shm_name(buf, len, fl_job.job_id, rank, ep, suffix);
}

/* A child of fork() shares the parent's shared memory and sockets; letting
   it use them would corrupt the parent's rings. */
static void atfork_child(void)
{
    if (atomic_load_explicit(&fl_job_state, memory_order_relaxed) == FL_JOB_ACTIVE) {
        atomic_store_explicit(&fl_job_state, FL_JOB_FORKED, memory_order_relaxed);
        fl_log_set_rank(-1);
    }
}

/* host_of[] (size numbers, from the launcher or the exchange; taken) ->
   dense host numbers in the order of their first rank, nhosts, and this
   rank's place among those on its host. O(ranks x hosts), whatever the
   numbers the launcher gave. */
static flit_status number_hosts(uint32_t *host_of)
{
    /* seen[d]: the launcher's number of dense host d. */
    uint32_t *seen = malloc(fl_job.size * sizeof *seen);
    if (!seen) {
        free(host_of);
        return FLIT_ERR_NO_MEMORY;
    }
    fl_job.nhosts = fl_job.local_size = 0;
    for (uint32_t r = 0; r < fl_job.size; r++) {
        uint32_t d = 0;
        while (d < fl_job.nhosts && seen[d] != host_of[r])
            d++;
        if (d == fl_job.nhosts)
            seen[fl_job.nhosts++] = host_of[r];
        host_of[r] = d;
    }
    free(seen);
    fl_job.host_of = host_of;
    uint32_t me = host_of[fl_job.rank];
    for (uint32_t r = 0; r < fl_job.size; r++) {
        if (host_of[r] != me)
            continue;
        if (r == fl_job.rank)
            fl_job.local_rank = fl_job.local_size;
        fl_job.local_size++;
    }
    return FLIT_OK;
}

/* What each rank gives flit_init's exchange: its host's identity and, from
   rank 0, random bits for the job id (zero from the others). */
#define HOST_BLOB 24

/*
 * Learns which ranks share a host (they can share memory) and makes the job
 * id unique, in at most one exchange: none when the launcher told both
 * (info->host_of, info->job_id_unique).
 */
static flit_status exchange_hosts(struct fl_boot_info *info)
{
    uint8_t mine[HOST_BLOB] = {0};
    if (fl_job.size == 1 || (info->host_of && info->job_id_unique)) {
        if (!info->job_id_unique) { /* a job of one: its own random bits */
            if (fl_random_bytes(mine + 16, 8) != 0)
                return FLIT_ERR_SYSTEM;
            fl_job.job_id = fl_boot_job_mix(fl_job.job_id, mine + 16);
        }
        uint32_t *host_of = info->host_of ? info->host_of : calloc(1, sizeof *host_of);
        info->host_of = NULL;
        return host_of ? number_hosts(host_of) : FLIT_ERR_NO_MEMORY;
    }
    free(info->host_of); /* the exchange says it too */
    info->host_of = NULL;
    fl_host_id(mine);
    if (fl_job.rank == 0 && fl_random_bytes(mine + 16, 8) != 0)
        return FLIT_ERR_SYSTEM;
    struct fl_blobs *all;
    flit_status st = fl_boot_allgather_in("flit_init", mine, sizeof mine, &all);
    if (st != FLIT_OK)
        return st;
    /* host_of[r]: the first rank seen with r's host identity. O(ranks x
       hosts). */
    uint32_t *host_of = calloc(fl_job.size, sizeof *host_of), *rep = NULL, nrep = 0;
    if (host_of)
        rep = calloc(fl_job.size, sizeof *rep);
    st = rep ? FLIT_OK : FLIT_ERR_NO_MEMORY;
    for (uint32_t r = 0; r < fl_job.size && st == FLIT_OK; r++) {
        if (all->len[r] != HOST_BLOB) {
            fl_error("rank %u sent a host identity of %zu bytes", r, all->len[r]);
            st = FLIT_ERR_BOOT;
            break;
        }
        uint32_t h = 0;
        while (h < nrep && memcmp(all->blob[rep[h]], all->blob[r], 16))
            h++;
        if (h == nrep)
            rep[nrep++] = r;
        host_of[r] = h;
    }
    if (st == FLIT_OK && !info->job_id_unique)
        fl_job.job_id = fl_boot_job_mix(fl_job.job_id, all->blob[0] + 16);
    free(rep);
    fl_blobs_free(all);
    if (st != FLIT_OK) {
        free(host_of);
        return st;
    }
    return number_hosts(host_of);
}

/* FLIT_STATS=1 for a program that exits without flit_finalize. */
static void stats_at_exit(void)
{
    if (atomic_load(&fl_job_state) != FL_JOB_ACTIVE || !fl_cfg.stats)
        return;
    pthread_mutex_lock(&fl_job.lock);
    for (struct flit_ep *ep = fl_job.eps; ep; ep = ep->next)
        fl_stats_print(ep);
    pthread_mutex_unlock(&fl_job.lock);
}

static void print_start(void)
{
    if (fl_job.rank != 0)
        return;
    fprintf(stderr, "flit[0] info: flit %d.%d.%d, %u ranks on %u host(s), launcher %s\n",
            FLIT_VERSION_MAJOR, FLIT_VERSION_MINOR, FLIT_VERSION_PATCH, fl_job.size,
            fl_job.nhosts, fl_job.launcher);
    fprintf(stderr, "flit[0] info: configuration:\n");
    fl_config_print(stderr);
}

/* One-sided ops (transport.h), when offered: ->reaches, each pair both or
   neither, memory to map where peers' is mapped, and puts and gets where
   memory is exposed, early puts where puts are. */
static bool onesided_ok(const struct fl_tp_onesided *o)
{
    return !o || (o->reaches && !o->mem_alloc == !o->mem_free && !o->map == !o->unmap &&
                  !o->put == !o->get && (!o->map || o->mem_alloc) &&
                  !o->expose == !o->unexpose && (!o->expose || o->put) &&
                  !o->put_early == !o->settle && (!o->put_early || o->put));
}

/* A transport's name: [a-z0-9]+, not "auto", unique in the list. */
static bool name_ok(const struct fl_transport *const *all, int i)
{
    const char *n = all[i]->name;
    if (!n || !*n || strcmp(n, "auto") == 0 ||
        n[strspn(n, "abcdefghijklmnopqrstuvwxyz0123456789")])
        return false;
    for (int j = 0; j < i; j++)
        if (strcmp(all[j]->name, n) == 0 || fl_tp_id(all[j]) == fl_tp_id(all[i]))
            return false;
    return true;
}

/* Every transport op is required but the optional ones (an optional pair,
   both or neither), the name is unique and the reach says something, and
   the list fits an endpoint: anything else is our bug. */
static void check_transports(const struct fl_transport *const *all)
{
    for (int i = 0; all[i]; i++) {
        const struct fl_transport *t = all[i];
        bool ok = name_ok(all, i) && i < FL_MAX_TRANSPORTS && t->reach && t->open &&
                  t->address && t->reachable && t->connect && t->connected &&
                  t->max_packet && t->reserve && t->commit && t->cancel && t->poll &&
                  t->arm && t->disarm && t->fd && t->want_room && t->check_peers &&
                  t->reclaim && t->settled && t->in_contact && t->peer_address &&
                  t->dump_peer && t->close &&
                  (!(t->caps & FL_TP_PUT) || (t->put && t->set_tag)) &&
                  !t->commit_lent == !t->settle_lent && onesided_ok(t->onesided);
        if (!ok) {
            fl_error("transport %s is not described right (name, reach, a required "
                     "op)",
                     t->name ? t->name : "?");
            abort();
        }
    }
}

static struct fl_layer *const *init_layers;

/* Once per process: the layers claim their opcodes. */
static void register_layers(void)
{
    fl_ctrl_init();
    fl_layers_init(init_layers);
}

flit_status fl_job_init(const flit_init_params_t *params,
                        const struct fl_transport *const *transports,
                        struct fl_layer *const *layers)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    int state = atomic_load(&fl_job_state);
    if (state == FL_JOB_ACTIVE)
        return FLIT_ERR_ALREADY_INITIALIZED;
    if (state != FL_JOB_NONE)
        return fl_job_state_error();
    if (params && params->field_mask != 0)
        return FLIT_ERR_INVALID_ARG;
    flit_status st = fl_config_load();
    if (st != FLIT_OK)
        return st;
    check_transports(transports);
    fl_job.transports = transports;
    for (int i = 0; transports[i]; i++)
        if (transports[i]->prepare && fl_select_may_use(transports[i]))
            transports[i]->prepare();
    struct fl_boot_info info = {0};
    st = fl_boot_open(&info);
    if (st != FLIT_OK)
        return st;
    fl_job.rank = info.rank;
    fl_job.size = info.size;
    fl_job.job_id = info.job_id;
    fl_job.launcher = info.launcher;
    fl_job.net_hint = info.net_hint;
    st = exchange_hosts(&info);
    free(info.host_of);
    if (st != FLIT_OK) {
        fl_boot_close(false);
        return st;
    }
    fl_job.default_tag = fl_job.job_id ^ 0x5a5a5a5a5a5a5a5aull;
    fl_progress_init();
    init_layers = layers;
    pthread_once(&once, register_layers);
    static bool at_exit;
    if (fl_cfg.stats && !at_exit)
        at_exit = atexit(stats_at_exit) == 0;
    pthread_atfork(NULL, NULL, atfork_child);
    atomic_store(&fl_job_state, FL_JOB_ACTIVE);
    fl_log_set_rank(fl_job.rank);
    fl_boot_set_dump_fn(fl_ep_dump_all);
    if (fl_cfg.verbose)
        print_start();
    return FLIT_OK;
}

flit_status flit_finalize(void)
{
    flit_status st = fl_job_check();
    if (st != FLIT_OK)
        return st;
    if (fl_handler_depth)
        return FLIT_ERR_IN_HANDLER;
    st = fl_ep_destroy_all();
    if (st != FLIT_OK)
        return st;
    fl_fiber_pool_drain();
    fl_boot_close(true);
    atomic_store(&fl_job_state, FL_JOB_FINALIZED);
    fl_ep_free_retired();
    fl_log_set_rank(-1);
    free(fl_job.host_of);
    fl_job.host_of = NULL;
    return FLIT_OK;
}

flit_rank_t flit_job_rank(void)
{
    return flit_rank(fl_job_check() == FLIT_OK ? fl_job.rank : 0);
}

uint32_t flit_job_size(void)
{
    return fl_job_check() == FLIT_OK ? fl_job.size : 0;
}

void flit_job_abort(int status, const char *why)
{
    int code = (status & 0xff) ? (status & 0xff) : 1;
    fflush(stdout);
    fflush(stderr);
    /* a fork() child shares its parent's connection to the launcher */
    if (atomic_load_explicit(&fl_job_state, memory_order_relaxed) == FL_JOB_ACTIVE)
        fl_boot_abort(code, why ? why : "");
    _exit(code);
}

/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * VMMC's basic library on flit's one-sided layer (<flit/rma.h>), which has
 * VMMC's semantics: export with permissions, import, puts with no receive
 * call, notifications after the data. Built on the public API alone.
 *
 * Names: VMMC matched exports and imports by name through its daemons, so
 * an import never waited for the exporting program. Here a region is
 * exported with its name as its key (name + 1), and on this host the
 * importer finds it, and imports it, in the exporter's export directory in
 * shared memory (flit_rma_lookup, flit_rma_import), the exporter taking
 * no part: it may be spinning on its memory. Where that directory cannot
 * be read (another host) the importer asks the exporter (one active
 * message and its reply) for the region id, and the import is a round
 * trip: both need the exporter's progress, which a progress thread
 * (FLIT_PROGRESS_THREAD=1) makes without the program, handlers then
 * running on that thread: the export table is read there under
 * table_lock. Either way the exporter's permissions and unexports are
 * enforced by flit's import and puts.
 *
 * Destination proxy space: one range of this process's address space,
 * reserved inaccessible (PROT_NONE) and backed by nothing; each import
 * takes the next page-aligned piece of it, a page apart from the next one
 * so that an address just past a buffer belongs to no import, and never
 * given out again. SendMsg
 * finds the import whose piece holds destAddr and puts at that offset.
 */
#include <flit/rma.h>

#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "vmmc.h"

#define MAX_EXPORTS 1024
#define MAX_IMPORTS 1024
#define PROXY_SPACE (1ull << 34) /* 16 GiB of addresses, no memory */
#define H_QUERY     1
#define H_ANSWER    2

struct export
{
    int used, name;
    flit_rma_region_t *region;
    uint64_t id;
    VMMC_NotifyHandler handler;
};

struct import {
    int used, node;
    char *base;
    size_t len;
    flit_rma_remote_t *remote;
};

static flit_ep_t *ep;
static struct export exports[MAX_EXPORTS];
static struct import imports[MAX_IMPORTS];
static char *proxy_space;
static size_t proxy_used;
/* Written by the program, read by handlers, which a progress thread may run. */
static pthread_mutex_t table_lock = PTHREAD_MUTEX_INITIALIZER;
static _Atomic int answered;    /* the exporter's answer to our query is in */
static _Atomic uint64_t answer; /* its region id, 0: no such name */

static int status(flit_status st)
{
    switch (st) {
    case FLIT_OK:
        return VMMC_SUCCESS;
    case FLIT_ERR_NOT_INITIALIZED:
    case FLIT_ERR_FINALIZED:
        return VMMC_ERR_NOT_INIT;
    case FLIT_ERR_INVALID_ARG:
    case FLIT_ERR_RANK:
    case FLIT_ERR_BOUNDS:
    case FLIT_ERR_IN_HANDLER:
        return VMMC_ERR_BAD_ARG;
    case FLIT_ERR_DENIED:
        return VMMC_ERR_DENIED;
    case FLIT_ERR_REVOKED:
        return VMMC_ERR_NO_BUFFER;
    default:
        fprintf(stderr, "VMMC (flit-vmmc): %s\n", flit_strerror(st));
        return VMMC_ERR_SYSTEM;
    }
}

static struct export *export_named(int name)
{
    for (int i = 0; i < MAX_EXPORTS; i++)
        if (exports[i].used && exports[i].name == name)
            return &exports[i];
    return NULL;
}

/* The exporter's side of a name lookup: answers the region id, or 0. */
static void on_query(flit_token_t *t, void *buf, size_t n, const uint32_t *args,
                     unsigned nargs, void *user)
{
    (void)buf, (void)n, (void)user;
    pthread_mutex_lock(&table_lock);
    struct export *e = nargs == 1 ? export_named((int)args[0]) : NULL;
    uint64_t id = e ? e->id : 0;
    pthread_mutex_unlock(&table_lock);
    uint32_t a[2] = {(uint32_t)id, (uint32_t)(id >> 32)};
    flit_am_reply_short(t, flit_handler(H_ANSWER), a, 2);
}

static void on_answer(flit_token_t *t, void *buf, size_t n, const uint32_t *args,
                      unsigned nargs, void *user)
{
    (void)t, (void)buf, (void)n, (void)user;
    answer = nargs == 2 ? args[0] | (uint64_t)args[1] << 32 : 0;
    answered = 1;
}

static void on_notify(flit_ep_t *e, uint64_t export_id, flit_rank_t from, uint64_t offset,
                      size_t len, void *user)
{
    (void)e, (void)user;
    VMMC_NotifyHandler fn = NULL;
    int name = 0;
    pthread_mutex_lock(&table_lock);
    for (int i = 0; i < MAX_EXPORTS && !fn; i++)
        if (exports[i].used && exports[i].id == export_id && exports[i].handler) {
            fn = exports[i].handler;
            name = exports[i].name;
        }
    pthread_mutex_unlock(&table_lock);
    if (fn)
        fn(name, (int)from.idx, (size_t)offset, len);
}

/*
 * How VMMC ends flit. flitrun fails a job in which a rank exits 0 without
 * flit_finalize while others run, so VMMC_Finalize finalizes flit when
 * VMMC_Init joined the job (vmmc_owns_flit; a program that called
 * flit_init itself finalizes it itself). VMMC programs may just return
 * from main: an exit handler, registered at the first VMMC_Init, calls
 * VMMC_Finalize then for status 0. Both are collective, as VMMC_Finalize
 * is: an early node waits in its barrier for the others. A failing exit
 * (status not 0) ends the job anyway, and must not wait for peers that
 * may wait for it.
 */
static int vmmc_owns_flit;

/* The exit handler must outlive a dlclose of this library (on_exit, unlike
   atexit, does not drop a library's handlers when it is unloaded): the
   library is pinned in memory (RTLD_NODELETE) when the handler goes in. */
static void pin_library(void)
{
    Dl_info info;
    if (dladdr(&vmmc_owns_flit, &info) && info.dli_fname)
        (void)dlopen(info.dli_fname, RTLD_NOW | RTLD_NOLOAD | RTLD_NODELETE);
}

static void vmmc_at_exit(int code, void *arg)
{
    (void)arg;
    if (ep && code == 0 && !flit_in_handler()) /* in a handler flit refuses */
        (void)VMMC_Finalize();
}

int VMMC_Init(void)
{
    static int at_exit;
    if (ep)
        return VMMC_SUCCESS;
    flit_status st = flit_init(NULL);
    if (st != FLIT_OK && st != FLIT_ERR_ALREADY_INITIALIZED)
        return status(st);
    vmmc_owns_flit = vmmc_owns_flit || st == FLIT_OK;
    if (!at_exit && (at_exit = on_exit(vmmc_at_exit, NULL) == 0))
        pin_library();
    void *space = mmap(NULL, PROXY_SPACE, PROT_NONE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (space == MAP_FAILED)
        return VMMC_ERR_SYSTEM;
    flit_ep_t *e = NULL;
    /* The barrier: no node's query may reach one whose handlers are not in
       yet (a progress thread takes packets as soon as the endpoint exists,
       and one returned for want of a handler would abort its sender). */
    if ((st = flit_ep_create(NULL, &e)) == FLIT_OK &&
        (st = flit_am_register(e, flit_handler(H_QUERY), on_query, NULL)) == FLIT_OK &&
        (st = flit_am_register(e, flit_handler(H_ANSWER), on_answer, NULL)) == FLIT_OK &&
        (st = flit_rma_set_notify_handler(e, on_notify, NULL)) == FLIT_OK)
        st = flit_barrier(e);
    if (st != FLIT_OK) {
        if (e)
            flit_ep_destroy(e);
        munmap(space, PROXY_SPACE);
        return status(st);
    }
    ep = e;
    proxy_space = space;
    proxy_used = 0;
    return VMMC_SUCCESS;
}

int VMMC_Finalize(void)
{
    if (!ep)
        return VMMC_ERR_NOT_INIT;
    /* Nobody unexports while another node may still look a name up. */
    flit_status st = flit_barrier(ep);
    if (st != FLIT_OK)
        return status(st);
    for (int i = 0; i < MAX_IMPORTS; i++)
        if (imports[i].used)
            VMMC_Unimport(imports[i].base);
    for (int i = 0; i < MAX_EXPORTS; i++)
        if (exports[i].used)
            VMMC_Unexport(exports[i].name);
    st = flit_ep_destroy(ep);
    ep = NULL;
    munmap(proxy_space, PROXY_SPACE);
    proxy_space = NULL;
    flit_status fin = vmmc_owns_flit ? flit_finalize() : FLIT_OK;
    vmmc_owns_flit = 0;
    return status(st != FLIT_OK ? st : fin);
}

int VMMC_MyNode(void)
{
    return ep ? (int)flit_job_rank().idx : VMMC_ERR_NOT_INIT;
}

int VMMC_NumNodes(void)
{
    return ep ? (int)flit_job_size() : VMMC_ERR_NOT_INIT;
}

/* ---------------------------------------------------------------- exporter */

/* The region's key in flit: never 0. */
static uint64_t name_key(int name)
{
    return (uint64_t)(unsigned)name + 1;
}

int VMMC_Export(int name, void *buf, size_t nbytes, const int *importers, int nimporters,
                VMMC_NotifyHandler handler)
{
    if (!ep)
        return VMMC_ERR_NOT_INIT;
    if (name < 0 || !buf || !nbytes || nimporters < 0 || (nimporters && !importers))
        return VMMC_ERR_BAD_ARG;
    if (export_named(name))
        return VMMC_ERR_IN_USE;
    struct export *e = NULL;
    for (int i = 0; i < MAX_EXPORTS && !e; i++)
        if (!exports[i].used)
            e = &exports[i];
    flit_rank_t *allowed = calloc((size_t)nimporters + 1, sizeof *allowed);
    if (!e || !allowed) {
        free(allowed);
        return VMMC_ERR_SYSTEM;
    }
    for (int i = 0; i < nimporters; i++) {
        if (importers[i] < 0) {
            free(allowed);
            return VMMC_ERR_BAD_ARG;
        }
        allowed[i] = flit_rank((uint32_t)importers[i]);
    }
    flit_status st = flit_rma_export(ep, buf, nbytes, FLIT_RMA_WRITE, allowed,
                                     (size_t)nimporters, &e->region);
    free(allowed);
    if (st == FLIT_OK &&
        (st = flit_rma_region_set_key(e->region, name_key(name))) != FLIT_OK)
        flit_rma_unexport(e->region);
    if (st != FLIT_OK)
        return status(st);
    pthread_mutex_lock(&table_lock);
    e->used = 1;
    e->name = name;
    e->id = flit_rma_region_id(e->region);
    e->handler = handler;
    pthread_mutex_unlock(&table_lock);
    return VMMC_SUCCESS;
}

int VMMC_Unexport(int name)
{
    if (!ep)
        return VMMC_ERR_NOT_INIT;
    struct export *e = export_named(name);
    if (!e)
        return VMMC_ERR_NO_BUFFER;
    pthread_mutex_lock(&table_lock);
    e->used = 0;
    pthread_mutex_unlock(&table_lock);
    return status(flit_rma_unexport(e->region));
}

/* ---------------------------------------------------------------- importer */

/* The exporter's answer to a name query: its progress needed. */
static flit_status ask(int node, int name, uint64_t *id)
{
    uint32_t a = (uint32_t)name;
    answered = 0;
    flit_status st =
        flit_am_short(ep, flit_rank((uint32_t)node), flit_handler(H_QUERY), &a, 1, 0);
    while (st == FLIT_OK && !answered)
        if ((st = flit_wait(ep, 100000)) == FLIT_ERR_TIMEOUT)
            st = FLIT_OK;
    *id = answer;
    return st;
}

/* Found in node's export directory, without node's help; else asked. */
static flit_status lookup(int node, int name, uint64_t *id)
{
    flit_status st = flit_rma_lookup(ep, flit_rank((uint32_t)node), name_key(name), id);
    if (st == FLIT_ERR_REVOKED) { /* no such name there (yet) */
        *id = 0;
        return FLIT_OK;
    }
    if (st == FLIT_ERR_DENIED) /* the import is refused, and counted there */
        return FLIT_OK;
    return st == FLIT_ERR_NOT_SUPPORTED ? ask(node, name, id) : st;
}

int VMMC_Import(int node, int name, void **proxy, size_t *nbytes)
{
    if (!ep)
        return VMMC_ERR_NOT_INIT;
    if (node < 0 || node >= VMMC_NumNodes() || name < 0 || !proxy || !nbytes)
        return VMMC_ERR_BAD_ARG;
    struct import *im = NULL;
    for (int i = 0; i < MAX_IMPORTS && !im; i++)
        if (!imports[i].used)
            im = &imports[i];
    if (!im)
        return VMMC_ERR_SYSTEM;
    uint64_t id;
    flit_status st = lookup(node, name, &id);
    if (st != FLIT_OK)
        return status(st);
    if (!id)
        return VMMC_ERR_NO_BUFFER;
    if ((st = flit_rma_import(ep, flit_rank((uint32_t)node), id, &im->remote)) != FLIT_OK)
        return status(st);
    size_t len = flit_rma_remote_size(im->remote);
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    size_t span = (len + page - 1) / page * page + page; /* a gap after each */
    if (span > PROXY_SPACE - proxy_used) {
        flit_rma_release(im->remote);
        return VMMC_ERR_SYSTEM;
    }
    im->used = 1;
    im->node = node;
    im->base = proxy_space + proxy_used;
    im->len = len;
    proxy_used += span;
    *proxy = im->base;
    *nbytes = len;
    return VMMC_SUCCESS;
}

int VMMC_Unimport(void *proxy)
{
    if (!ep)
        return VMMC_ERR_NOT_INIT;
    for (int i = 0; i < MAX_IMPORTS; i++)
        if (imports[i].used && imports[i].base == (char *)proxy) {
            imports[i].used = 0;
            return status(flit_rma_release(imports[i].remote));
        }
    return VMMC_ERR_PROXY;
}

/* The import whose piece of the proxy space holds addr. */
static struct import *import_at(const char *addr)
{
    for (int i = 0; i < MAX_IMPORTS; i++)
        if (imports[i].used && addr >= imports[i].base &&
            (size_t)(addr - imports[i].base) < imports[i].len)
            return &imports[i];
    return NULL;
}

static int send(void *src, void *dest, size_t nbytes, unsigned flags)
{
    if (!ep)
        return VMMC_ERR_NOT_INIT;
    if (!src && nbytes)
        return VMMC_ERR_BAD_ARG;
    struct import *im = import_at((const char *)dest);
    if (!im)
        return VMMC_ERR_PROXY;
    /* Past the buffer's end: the owner's bounds check refuses it. */
    return status(flit_rma_put(im->remote, (uint64_t)((char *)dest - im->base), src,
                               nbytes, flags, NULL));
}

int SendMsg(void *srcAddr, void *destAddr, size_t nbytes)
{
    return send(srcAddr, destAddr, nbytes, 0);
}

int SendMsgNotify(void *srcAddr, void *destAddr, size_t nbytes)
{
    return send(srcAddr, destAddr, nbytes, FLIT_RMA_NOTIFY);
}

int VMMC_Flush(int node)
{
    if (!ep)
        return VMMC_ERR_NOT_INIT;
    if (node < 0 || node >= VMMC_NumNodes())
        return VMMC_ERR_BAD_ARG;
    return status(flit_rma_flush(ep, flit_rank((uint32_t)node)));
}

int VMMC_Poll(void)
{
    return ep ? status(flit_poll(ep)) : VMMC_ERR_NOT_INIT;
}

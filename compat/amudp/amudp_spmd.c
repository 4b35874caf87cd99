/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * AMUDP's SPMD start-up and collectives on flit.
 *
 * Master: typed as `prog NPROCS SPAWNFN args`, the process is replaced by
 * flitrun starting NPROCS workers of the same program with `args`; flitrun
 * relays their output (the console) and exits with the job's status.
 *
 * Worker (any process a launcher started): two flit endpoints, made in the
 * same order everywhere. The first, the control endpoint, carries only
 * AMUDP_SPMDExit's word; after start-up it belongs to a thread of this
 * library, the exit thread, which polls it every CTL_POLL_MS while it
 * sleeps on a pipe, so that a worker busy computing still hears the word,
 * at almost no cost (a progress thread would spin after every wake-up). The second is the
 * SPMD endpoint the program gets. AMUDP_SPMDExit may run in a signal handler, where no
 * flit call may be made: it writes the code to the pipe, and the exit thread tells the
 * peers, runs the exit callback, flushes stdio and ends the process. A peer that hears it
 * acks and ends itself the same way; the teller waits for every ack (or an exit word from
 * that peer: both may tell at once) for at most two seconds.
 *
 * Ending flit (flitrun fails a job whose rank exits 0 without flit_finalize
 * while others still run). AM_Terminate's last call, and an exit with
 * status 0 that comes without it (an exit handler), end flit's job on the
 * program's thread: the exit thread first lets go of the control endpoint
 * (it stops polling it, and from then on AMUDP_SPMDExit just ends this
 * process), then flit_finalize destroys the endpoints, a collective that
 * waits for the procs still at work. AMUDP_SPMDExit does not finalize: it
 * may run in a signal handler, and the procs it ends are stopped wherever
 * they are, maybe inside a flit call on their single-threaded SPMD
 * endpoint, which the exit thread may then not touch; every proc ends
 * within moments of the DIE word, well inside flitrun's grace for ranks
 * that end without flit_finalize.
 */
#include <dlfcn.h>
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "amudp_internal.h"
#include "amudp_spmd.h"

#define CTL_EXIT      0 /* control endpoint: args[0] the exit code */
#define CTL_ACK       1
#define CTL_DIE       2
#define CTL_POLL_MS   20 /* how often the exit thread looks for an exit word */
#define DEFAULT_DEPTH 8
#define EXIT_WAIT_NS  2000000000LL
#define LINGER_US     500000 /* the flush of a proc's last words */

extern char **environ;

void (*AMUDP_SPMDkillmyprocess)(int) = _exit;

static struct {
    int started;
    int ended; /* AM_Terminate ended flit: no more collectives */
    uint32_t rank, size;
    eb_t eb;
    ep_t ep;
    flit_ep_t *ctl;
    char **env; /* the environment at start-up */
    _Atomic(amudp_exitcallback_t)
        callback; /* set by the program, run by the exit thread */
    int pipe[2];
    /* AllGather in progress */
    unsigned char *dest;
    size_t len, got;
} spmd = {.pipe = {-1, -1}};

/* ---------------------------------------------------------------- exit */

/*
 * The exit protocol, on the exit threads alone (they alone poll the control
 * endpoint after start-up, so these flags need no lock). The teller runs
 * its exit callback, tells every peer (EXIT), waits until each has run its
 * own callback (ACK), then lets them all go (DIE) and ends. Nobody ends
 * before every callback ran: flitrun stops the whole job as soon as one
 * process exits with a code other than 0. A peer that is gone answers
 * through the returned-message handler; a peer that tells at the same time
 * counts as having acked.
 *
 * The procs must end together, for flitrun fails a job whose rank exits 0
 * without flit_finalize while another still runs five seconds later. So a
 * DIE ends every wait, a teller's too (it is sent only once every callback
 * ran), and every proc flushes the control endpoint before it ends, for at
 * most LINGER_US: its last words (an ACK, the DIE) lost on the wire are
 * sent again meanwhile, where a proc that ended at once would leave the
 * one they were for waiting out EXIT_WAIT_NS. A peer gone before our word
 * reached it costs the linger, no more. Nobody ends before the last proc
 * began its exit (an ACK or EXIT of every proc comes before any DIE), and
 * the last ends at most EXIT_WAIT_NS + LINGER_US after it began, 2.5 s:
 * half flitrun's grace.
 */
enum {
    P_TOLD_ME = 1,  /* it sent EXIT: it is a teller */
    P_ACKED = 2,    /* it ran its callback (ACK, its own EXIT), or is gone */
    P_ACK_SENT = 4, /* our ACK to its EXIT went */
};
static unsigned char *peer;
static int heard = -1, die;
static _Atomic int exiting; /* the protocol started here: peers may go */
/* The program's thread is ending flit: the exit thread lets go of the
   control endpoint (released), and tells nobody when it ends the process. */
static _Atomic int ctl_closing, ctl_released;

int amx_spmd_exiting(void)
{
    return atomic_load_explicit(&exiting, memory_order_relaxed);
}

static uint32_t sender_of(flit_token_t *ft)
{
    uint32_t from = flit_token_rank(ft).idx;
    return from < spmd.size ? from : spmd.rank;
}

static void ctl_exit(flit_token_t *ft, void *buf, size_t nbytes, const uint32_t *args,
                     unsigned nargs, void *user)
{
    (void)buf, (void)nbytes, (void)user;
    peer[sender_of(ft)] |= P_TOLD_ME | P_ACKED;
    if (heard < 0)
        heard = nargs ? (int)args[0] : 1;
}

static void ctl_ack(flit_token_t *ft, void *buf, size_t nbytes, const uint32_t *args,
                    unsigned nargs, void *user)
{
    (void)buf, (void)nbytes, (void)args, (void)nargs, (void)user;
    peer[sender_of(ft)] |= P_ACKED;
}

static void ctl_die(flit_token_t *ft, void *buf, size_t nbytes, const uint32_t *args,
                    unsigned nargs, void *user)
{
    (void)ft, (void)buf, (void)nbytes, (void)args, (void)nargs, (void)user;
    die = 1;
}

/* A word to a peer that is gone already: nothing to wait for. */
static void ctl_returned(flit_ep_t *fep, const flit_returned_t *info, void *user)
{
    (void)fep, (void)user;
    if (info->peer.idx < spmd.size)
        peer[info->peer.idx] |= P_ACKED;
}

/*
 * A peer gone. In the protocol that is how every teller ends, the moment it
 * sent DIE: nothing more to wait for from it (a teller of ours gone counts
 * as its DIE), and nothing to say. Before any exit word, a worker died:
 * said on stderr, as flit says it for endpoints without such a handler.
 */
static void ctl_down(flit_ep_t *fep, flit_rank_t who, flit_status reason, void *user)
{
    (void)fep, (void)user;
    if (who.idx >= spmd.size)
        return;
    peer[who.idx] |= P_ACKED;
    if (peer[who.idx] & P_TOLD_ME)
        die = 1;
    if (!amx_spmd_exiting() && heard < 0)
        fprintf(stderr, "AMUDP: proc %u is down: %s\n", who.idx, flit_strerror(reason));
}

static long long now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void send_word(uint32_t r, unsigned h, int code)
{
    uint32_t word = (uint32_t)code;
    if (flit_am_short(spmd.ctl, flit_rank(r), flit_handler((uint16_t)h), &word, 1, 0) !=
        FLIT_OK)
        peer[r] |= P_ACKED; /* unreachable: nothing to wait for */
}

/* A teller's wait: every callback ran (or somebody else's DIE says so). */
static int teller_done(void)
{
    if (die)
        return 1;
    for (uint32_t r = 0; r < spmd.size; r++)
        if (r != spmd.rank && !(peer[r] & P_ACKED))
            return 0;
    return 1;
}

/* A peer's wait: acks every teller not acked yet; 1 once DIE came. */
static int peer_done(void)
{
    for (uint32_t r = 0; r < spmd.size; r++)
        if ((peer[r] & P_TOLD_ME) && !(peer[r] & P_ACK_SENT)) {
            peer[r] |= P_ACK_SENT;
            send_word(r, CTL_ACK, 0);
        }
    return die;
}

static void wait_until(int (*done)(void))
{
    long long deadline = now_ns() + EXIT_WAIT_NS;
    while (!done() && now_ns() < deadline)
        flit_wait(spmd.ctl, 10000);
}

static void exit_now(int code, int teller)
{
    amudp_exitcallback_t callback = atomic_load(&spmd.callback);
    atomic_store(&exiting, 1); /* before any ack: nobody ends before that */
    if (callback)
        callback(code);
    fflush(NULL);
    if (atomic_load(&ctl_released)) {
        /* flit ended here: no word can go, nobody waits for one */
    } else {
        if (teller) {
            for (uint32_t r = 0; r < spmd.size; r++)
                if (r != spmd.rank && !(peer[r] & P_TOLD_ME))
                    send_word(r, CTL_EXIT, code);
            wait_until(teller_done);
        } else {
            wait_until(peer_done);
        }
        if (teller && !die) /* every callback ran, and no DIE came yet */
            for (uint32_t r = 0; r < spmd.size; r++)
                if (r != spmd.rank)
                    send_word(r, CTL_DIE, code);
        (void)flit_ep_flush(spmd.ctl, LINGER_US);
    }
    amx_spawn_exit(code); /* a worker of the program's spawn function: last,
                             as its relay's end stops the job */
    AMUDP_SPMDkillmyprocess(code);
    _exit(code);
}

/*
 * Serves the pipe, and the control endpoint every CTL_POLL_MS, until one
 * of them says exit. The endpoint is polled, never armed for sleeping: an
 * armed endpoint makes the peers' senders wake this process with a system
 * call, and the wake-ups cost every message of the program's endpoint a
 * round of this thread (amudp-bench's round trip grew tenfold).
 */
static void *exit_thread(void *arg)
{
    (void)arg;
    struct pollfd fd = {.fd = spmd.pipe[0], .events = POLLIN};
    for (;;) {
        if (atomic_load(&ctl_closing))
            atomic_store(&ctl_released, 1); /* the program's thread ends flit */
        if (!atomic_load(&ctl_released)) {
            flit_poll(spmd.ctl);
            if (heard >= 0)
                exit_now(heard, 0);
        }
        if (poll(&fd, 1, CTL_POLL_MS) <= 0 || !(fd.revents & POLLIN))
            continue;
        int code;
        if (read(spmd.pipe[0], &code, sizeof code) == (ssize_t)sizeof code)
            exit_now(code, 1);
    }
    return NULL; /* not reached */
}

int AMUDP_SPMDExit(int exitcode)
{
    if (!spmd.started)
        return amx_err(AM_ERR_NOT_INIT, "AMUDP_SPMDExit", "AMUDP_SPMDStartup not called");
    if (write(spmd.pipe[1], &exitcode, sizeof exitcode) != (ssize_t)sizeof exitcode)
        _exit(exitcode);
    for (;;)
        pause(); /* the exit thread ends the process */
}

int AMUDP_SPMDSetExitCallback(amudp_exitcallback_t fp)
{
    atomic_store(&spmd.callback, fp);
    return AM_OK;
}

/* ---------------------------------------------------------------- end */

static int owns_flit; /* AM_Init joined flit's job: ending it is ours */

/* The exit handler must outlive a dlclose of this library (on_exit, unlike
   atexit, does not drop a library's handlers when it is unloaded): the
   library is pinned in memory (RTLD_NODELETE) when the handler goes in. */
static void pin_library(void)
{
    Dl_info info;
    if (dladdr(&owns_flit, &info) && info.dli_fname)
        (void)dlopen(info.dli_fname, RTLD_NOW | RTLD_NOLOAD | RTLD_NODELETE);
}

/* An exit with status 0 the program made without AM_Terminate: every
   AM_Init it made ends now. Not for another status (the job fails anyway,
   and a failing proc must not wait in a collective for procs that may
   wait for it), nor from a handler or the exit thread. */
static void end_at_exit(int code, void *arg)
{
    (void)arg;
    if (code == 0 && amx_initialized > 0 && !flit_in_handler() && !amx_spmd_exiting()) {
        amx_initialized = 1;
        (void)AM_Terminate();
    }
}

void amx_end_joined(int joined)
{
    static int at_exit;
    owns_flit = owns_flit || joined;
    if (!at_exit && (at_exit = on_exit(end_at_exit, NULL) == 0))
        pin_library();
}

/* The exit thread lets go of the control endpoint: 1 once it has (it looks
   every CTL_POLL_MS); 0 when it does not within CTL_RELEASE_MS. */
#define CTL_RELEASE_MS 10000
static int release_control(void)
{
    atomic_store(&ctl_closing, 1);
    struct timespec ms = {0, 1000000};
    for (int i = 0; i < CTL_RELEASE_MS && !atomic_load(&ctl_released); i++)
        nanosleep(&ms, NULL);
    return atomic_load(&ctl_released);
}

void amx_end_flit(void)
{
    if (!owns_flit || amx_spmd_exiting())
        return; /* the exit thread ends the process (maybe from this call) */
    if (spmd.started && !release_control()) {
        fprintf(stderr, "AMUDP: AM_Terminate: the exit thread did not let go of "
                        "its endpoint: flit is not finalized\n");
        return;
    }
    spmd.ended = spmd.started; /* the collectives answer AM_ERR_NOT_INIT now */
    owns_flit = 0;
    flit_status st = flit_finalize();
    if (st != FLIT_OK)
        fprintf(stderr, "AMUDP: AM_Terminate: flit_finalize: %s\n", flit_strerror(st));
}

/* ---------------------------------------------------------------- collectives */

static flit_status send_chunks(flit_rank_t to, unsigned h, const unsigned char *buf,
                               size_t len)
{
    for (size_t off = 0; off < len;) {
        size_t c = len - off < FLIT_AM_MAX_MEDIUM ? len - off : FLIT_AM_MAX_MEDIUM;
        uint32_t args[2] = {(uint32_t)off, (uint32_t)((uint64_t)off >> 32)};
        flit_status st = amx_send_own(amx_ep_of(spmd.ep), to, h, buf + off, c, args, 2);
        if (st != FLIT_OK)
            return st;
        off += c;
    }
    return FLIT_OK;
}

/* Stores a piece of the AllGather at its place in dest, if it fits there. */
static void gather_store(size_t at, const uint32_t *args, unsigned nargs, const void *buf,
                         size_t nbytes, size_t limit)
{
    if (nargs != 2 || !spmd.dest)
        return;
    uint64_t off = args[0] | (uint64_t)args[1] << 32;
    if (off > limit || nbytes > limit - off)
        return;
    memcpy(spmd.dest + at + off, buf, nbytes);
    spmd.got += nbytes;
}

void amx_gather_part(flit_token_t *ft, void *buf, size_t nbytes, const uint32_t *args,
                     unsigned nargs, void *user)
{
    (void)user;
    uint32_t from = flit_token_rank(ft).idx;
    if (from < spmd.size)
        gather_store(from * spmd.len, args, nargs, buf, nbytes, spmd.len);
}

void amx_gather_whole(flit_token_t *ft, void *buf, size_t nbytes, const uint32_t *args,
                      unsigned nargs, void *user)
{
    (void)ft, (void)user;
    gather_store(0, args, nargs, buf, nbytes, spmd.len * spmd.size);
}

/*
 * The SPMD barrier, on the SPMD endpoint's messages so that its waits go
 * as AMUDP_PoliteSync says (flit_barrier polls FLIT_SPIN_US whatever the
 * program asked): each proc tells rank 0 it arrived (AMX_H_ARRIVE
 * [epoch]); rank 0, once every other proc has, releases them
 * (AMX_H_RELEASE [epoch]). A proc is released from epoch e before it can
 * arrive for e + 1, so rank 0 counts arrivals by the epoch's parity. The
 * automatic replies each proc told are settled first: after a barrier the
 * job's reply counts add up, as AMUDP's statistics do.
 */
static uint32_t epoch;      /* barriers this proc entered */
static uint32_t arrived[2]; /* rank 0: arrivals, by the epoch's parity */
static uint32_t released;   /* the last epoch rank 0 released */

void amx_barrier_arrive(flit_token_t *ft, void *buf, size_t nbytes, const uint32_t *args,
                        unsigned nargs, void *user)
{
    (void)ft, (void)buf, (void)nbytes, (void)user;
    if (nargs == 1 && spmd.rank == 0)
        arrived[args[0] & 1]++;
}

void amx_barrier_release(flit_token_t *ft, void *buf, size_t nbytes, const uint32_t *args,
                         unsigned nargs, void *user)
{
    (void)buf, (void)nbytes, (void)user;
    if (nargs == 1 && flit_token_rank(ft).idx == 0)
        released = args[0];
}

static int all_arrived(void *arg)
{
    (void)arg;
    return arrived[epoch & 1] >= spmd.size - 1;
}

static int was_released(void *arg)
{
    (void)arg;
    return released == epoch;
}

static int spmd_barrier(const char *fn)
{
    struct amudp_ep *ep = amx_ep_of(spmd.ep);
    int rc = amx_auto_settle(ep, fn);
    if (rc != AM_OK)
        return rc;
    uint32_t e = ++epoch;
    flit_status st = FLIT_OK;
    if (spmd.rank != 0) {
        st = amx_send_own(ep, flit_rank(0), AMX_H_ARRIVE, NULL, 0, &e, 1);
        return st != FLIT_OK ? amx_status(st, fn)
                             : amx_wait_until(ep, was_released, NULL, fn);
    }
    if ((rc = amx_wait_until(ep, all_arrived, NULL, fn)) != AM_OK)
        return rc;
    arrived[e & 1] = 0;
    for (uint32_t r = 1; st == FLIT_OK && r < spmd.size; r++)
        st = amx_send_own(ep, flit_rank(r), AMX_H_RELEASE, NULL, 0, &e, 1);
    return amx_status(st, fn);
}

static int gathered(void *need)
{
    return spmd.got >= *(size_t *)need;
}

static int gather(const void *source, void *dest, size_t len)
{
    static const char fn[] = "AMUDP_SPMDAllGather";
    struct amudp_ep *ep = amx_ep_of(spmd.ep);
    spmd.dest = (unsigned char *)dest;
    spmd.len = len;
    spmd.got = 0;
    int rc = spmd_barrier(fn); /* every dest is in place */
    size_t need = len * spmd.size;
    if (rc == AM_OK && spmd.rank == 0) {
        memcpy(dest, source, len);
        need -= len;
    } else if (rc == AM_OK) {
        rc = amx_status(
            send_chunks(flit_rank(0), AMX_H_GATHER, (const unsigned char *)source, len),
            fn);
    }
    if (rc == AM_OK)
        rc = amx_wait_until(ep, gathered, &need, fn);
    for (uint32_t r = 1; rc == AM_OK && spmd.rank == 0 && r < spmd.size; r++)
        rc = amx_status(send_chunks(flit_rank(r), AMX_H_SCATTER,
                                    (const unsigned char *)dest, len * spmd.size),
                        fn);
    if (rc == AM_OK)
        rc = spmd_barrier(fn); /* no piece of this round is still on its way */
    spmd.dest = NULL;
    return rc;
}

int AMUDP_SPMDAllGather(void *source, void *dest, size_t len)
{
    if (!spmd.started || spmd.ended)
        return amx_err(AM_ERR_NOT_INIT, "AMUDP_SPMDAllGather",
                       spmd.ended ? "AM_Terminate ended AM"
                                  : "AMUDP_SPMDStartup not called");
    if ((len && (!source || !dest)) || len > SIZE_MAX / spmd.size)
        return amx_err(AM_ERR_BAD_ARG, "AMUDP_SPMDAllGather", "source, dest or len");
    return gather(source, dest, len);
}

int AMUDP_SPMDBarrier(void)
{
    if (!spmd.started || spmd.ended)
        return amx_err(AM_ERR_NOT_INIT, "AMUDP_SPMDBarrier",
                       spmd.ended ? "AM_Terminate ended AM"
                                  : "AMUDP_SPMDStartup not called");
    return spmd_barrier("AMUDP_SPMDBarrier");
}

/* flit offers no checkpointing (AMUDP's needs BLCR): the documented failure. */
int AMUDP_SPMDCheckpoint(eb_t *eb, ep_t *ep, const char *dir)
{
    (void)eb, (void)ep;
    amx_err(AM_ERR_RESOURCE, "AMUDP_SPMDCheckpoint",
            dir ? "checkpointing is not offered on flit" : "dir is NULL");
    errno = dir ? ENOTSUP : EINVAL;
    return -1;
}

int AMUDP_SPMDNumProcs(void)
{
    return spmd.started ? (int)spmd.size : -1;
}

int AMUDP_SPMDMyProc(void)
{
    return spmd.started ? (int)spmd.rank : -1;
}

const char *AMUDP_SPMDgetenvMaster(const char *keyname)
{
    if (!spmd.started || !keyname)
        return NULL;
    size_t k = strlen(keyname);
    for (char **e = spmd.env; *e; e++)
        if (strncmp(*e, keyname, k) == 0 && (*e)[k] == '=')
            return *e + k + 1;
    return NULL;
}

int AMUDP_SPMDIsWorker(char **argv)
{
    if (argv && argv[0] && argv[1] && argv[2] &&
        (strcmp(argv[1], AMX_WORKER_ARG) == 0 || strcmp(argv[1], AMX_RELAY_ARG) == 0))
        return 1;
    return getenv("FLIT_BOOT") || getenv("PMIX_RANK") || getenv("PMI_RANK");
}

/* ---------------------------------------------------------------- worker */

static char **copy_env(void)
{
    size_t n = 0;
    while (environ && environ[n])
        n++;
    char **env = calloc(n + 1, sizeof *env);
    for (size_t i = 0; env && i < n; i++)
        if (!(env[i] = strdup(environ[i])))
            break;
    return env;
}

static flit_status open_control(void)
{
    flit_status st = flit_ep_create(NULL, &spmd.ctl);
    if (st == FLIT_OK)
        st = flit_am_register(spmd.ctl, flit_handler(CTL_EXIT), ctl_exit, NULL);
    if (st == FLIT_OK)
        st = flit_am_register(spmd.ctl, flit_handler(CTL_ACK), ctl_ack, NULL);
    if (st == FLIT_OK)
        st = flit_am_register(spmd.ctl, flit_handler(CTL_DIE), ctl_die, NULL);
    if (st == FLIT_OK)
        st = flit_am_set_returned_handler(spmd.ctl, ctl_returned, NULL);
    if (st == FLIT_OK)
        st = flit_ep_set_peer_down_handler(spmd.ctl, ctl_down, NULL);
    return st;
}

/* Every worker maps every worker at its rank, with tags that differ per
   worker and per job: the job's id (rank 0's random number) plus the rank. */
static int map_all(uint64_t *networkpid, int depth)
{
    uint64_t mine = 0, *all = calloc(spmd.size, sizeof *all);
    if (!all)
        return amx_err(AM_ERR_RESOURCE, "AMUDP_SPMDStartup", "out of memory");
    if (getrandom(&mine, sizeof mine, 0) != (ssize_t)sizeof mine)
        mine = (uint64_t)now_ns() ^ ((uint64_t)getpid() << 32);
    int rc = AMUDP_SPMDAllGather(&mine, all, sizeof mine);
    uint64_t pid = all[0];
    free(all);
    if (rc == AM_OK && (int)spmd.size > amx_ep_of(spmd.ep)->nxl)
        rc = AM_SetNumTranslations(spmd.ep, (int)spmd.size);
    for (uint32_t r = 0; rc == AM_OK && r < spmd.size; r++)
        rc = AM_Map(spmd.ep, (int)r, amx_name(r, amx_ep_of(spmd.ep)->serial), pid + r);
    if (rc == AM_OK)
        rc = AM_SetTag(spmd.ep, pid + spmd.rank);
    if (rc == AM_OK)
        rc = AM_SetExpectedResources(spmd.ep, (int)spmd.size, depth);
    if (rc == AM_OK) /* nobody sends before every tag is in place */
        rc = amx_status(flit_barrier(amx_ep_of(spmd.ep)->fep), "AMUDP_SPMDStartup");
    if (rc == AM_OK && networkpid)
        *networkpid = pid;
    return rc;
}

static int worker_start(int depth, uint64_t *networkpid, eb_t *eb, ep_t *ep)
{
    int rc = AM_Init();
    if (rc != AM_OK)
        return rc;
    spmd.rank = flit_job_rank().idx;
    spmd.size = flit_job_size();
    peer = calloc(spmd.size, 1);
    spmd.env = copy_env();
    if (!peer || !spmd.env || pipe(spmd.pipe) != 0)
        return amx_err(AM_ERR_RESOURCE, "AMUDP_SPMDStartup", "out of memory or pipes");
    flit_status st = open_control();
    if (st != FLIT_OK)
        return amx_status(st, "AMUDP_SPMDStartup");
    en_t name;
    if ((rc = AM_AllocateBundle(AM_SEQ, &spmd.eb)) != AM_OK ||
        (rc = AM_AllocateEndpoint(spmd.eb, &spmd.ep, &name)) != AM_OK)
        return rc;
    spmd.started = 1;
    if ((rc = map_all(networkpid, depth)) != AM_OK) {
        spmd.started = 0;
        return rc;
    }
    pthread_t t;
    if (pthread_create(&t, NULL, exit_thread, NULL) != 0) {
        spmd.started = 0;
        return amx_err(AM_ERR_RESOURCE, "AMUDP_SPMDStartup", "cannot start a thread");
    }
    pthread_detach(t);
    *eb = spmd.eb;
    *ep = spmd.ep;
    return AM_OK;
}

/* flitrun ran the master's program by its full path; the program gets
   argv[0] back as the master was given it, as AMUDP's spawners pass it. */
static void restore_argv0(char **argv)
{
    static char *argv0; /* the program's from now on */
    const char *v = getenv(AMX_ENV_ARGV0);
    if (v && !argv0 && (argv0 = strdup(v)) != NULL)
        argv[0] = argv0;
    unsetenv(AMX_ENV_ARGV0); /* not for the program's own children */
}

int AMUDP_SPMDStartup(int *argc, char ***argv, int nproc, int networkdepth,
                      amudp_spawnfn_t spawnfn, uint64_t *networkpid, eb_t *eb, ep_t *ep)
{
    if (!argc || !argv || !*argv || *argc < 1 || !eb || !ep || nproc < 0 ||
        nproc > (int)AMUDP_MAX_SPMDPROCS || networkdepth < 0 ||
        networkdepth > AMUDP_MAX_NETWORKDEPTH)
        return amx_err(AM_ERR_BAD_ARG, "AMUDP_SPMDStartup", "arguments");
    if (spmd.started)
        return amx_err(AM_ERR_RESOURCE, "AMUDP_SPMDStartup", "called twice");
    int depth = networkdepth ? networkdepth : DEFAULT_DEPTH;
    char **a = *argv;
    if (*argc >= 5 && strcmp(a[1], AMX_RELAY_ARG) == 0)
        amx_spawn_relay(a); /* does not return */
    int rc;
    if (*argc >= 3 && strcmp(a[1], AMX_WORKER_ARG) == 0 &&
        (rc = amx_spawn_worker(argc, argv)) != AM_OK)
        return rc;
    if (!AMUDP_SPMDIsWorker(*argv))
        return amx_master_start(*argc, *argv, nproc, depth, spawnfn);
    const char *d = getenv(AMX_ENV_DEPTH);
    if (d && atoi(d) > 0 && atoi(d) <= AMUDP_MAX_NETWORKDEPTH)
        depth = atoi(d);
    amx_spawn_inherit();
    restore_argv0(*argv);
    return worker_start(depth, networkpid, eb, ep);
}

/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Non-blocking collectives as coroutines. MPI_Ibcast and the others run
 * the blocking collective's own code (mpi_coll.c) on a stack of their own
 * (ucontext): where that code would wait for a message (progress_wait in
 * mpi_p2p.c), the coroutine hands the thread back instead, and the
 * progress engine resumes it whenever the program is in an MPI call that
 * makes progress (Wait, Test, a blocking call, another collective). So
 * every algorithm, datatype and MPI_IN_PLACE case of the blocking calls is
 * the non-blocking calls' too, with no second implementation to diverge.
 *
 * The call runs its first steps at once (its arguments are checked and
 * its number on the communicator taken there, in call order, as MPI's
 * rule that every rank calls a communicator's collectives in one order
 * requires: the number is in its messages' tags, so two collectives in
 * flight on one communicator never take each other's messages).
 *
 * Sanitizers are told of each switch (ASan's and TSan's fiber calls):
 * without it ASan takes the coroutine's stack for a stack overflow.
 */
#include <stdlib.h>
#include <sys/mman.h>
#include <ucontext.h>

#include "mpi_internal.h"

#if defined(__SANITIZE_ADDRESS__)
#define MP_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define MP_ASAN 1
#endif
#endif
#if defined(__SANITIZE_THREAD__)
#define MP_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define MP_TSAN 1
#endif
#endif

#ifdef MP_ASAN
void __sanitizer_start_switch_fiber(void **fake_stack_save, const void *bottom,
                                    size_t size);
void __sanitizer_finish_switch_fiber(void *fake_stack_save, const void **bottom_old,
                                     size_t *size_old);
#endif
#ifdef MP_TSAN
void *__tsan_get_current_fiber(void);
void *__tsan_create_fiber(unsigned flags);
void __tsan_destroy_fiber(void *fiber);
void __tsan_switch_to_fiber(void *fiber, unsigned flags);
#endif

/* 256 KiB of stack (the collectives keep their buffers on the heap; the
   rest is flit's send and receive paths and an error message's printf),
   below it one page that faults: an overflow stops, never corrupts. */
#define STACK_BYTES (256 * 1024)
#define GUARD_BYTES 4096

typedef struct mp_nbc {
    ucontext_t self, back;
    char *map; /* guard page, then the stack */
    mp_coll_fn *fn;
    mp_coll_args a;
    MPI_Datatype *held; /* the types this call holds (NULL: none held) */
    int nheld;
    const char *name;
    int done, rc;
    uint32_t seq; /* mp_coll_seq while it is switched out */
    MPI_Request req;
    struct mp_nbc *next;
    void *fake;            /* ASan: this stack's fake frames while out */
    const void *back_base; /* ASan: the resumer's stack */
    size_t back_size;
    void *fiber, *back_fib; /* TSan */
} mp_nbc;

static mp_nbc *live, **live_tail = &live; /* in start order */
static mp_nbc *running;                   /* the coroutine on the CPU */

/* A stack, its guard page below it: a fresh one per coroutine. (Reusing
   ended ones saves 8 of a 2-rank MPI_Ibarrier's 10 us, but under ASan,
   which supports swapcontext only in part, mpi_icoll then reported a
   stack underflow in 1 run of 30 or 40, not yet explained.) */
static char *stack_get(void)
{
    char *m = mmap(NULL, GUARD_BYTES + STACK_BYTES, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_STACK, -1, 0);
    if (m == MAP_FAILED)
        return NULL;
    if (mprotect(m, GUARD_BYTES, PROT_NONE) != 0) {
        munmap(m, GUARD_BYTES + STACK_BYTES);
        return NULL;
    }
    return m;
}

static void stack_put(char *m)
{
    munmap(m, GUARD_BYTES + STACK_BYTES);
}

int mp_nbc_inside(void)
{
    return running != NULL;
}

int mp_nbc_live(void)
{
    return live != NULL;
}

const char *mp_nbc_name(void)
{
    return running ? running->name : NULL;
}

/* ---- switching ---- */

/* From the resumer to c, until c yields or ends. */
static void switch_in(mp_nbc *c)
{
#ifdef MP_ASAN
    void *fake = NULL;
    __sanitizer_start_switch_fiber(&fake, c->map + GUARD_BYTES, STACK_BYTES);
#endif
#ifdef MP_TSAN
    c->back_fib = __tsan_get_current_fiber();
    __tsan_switch_to_fiber(c->fiber, 0);
#endif
    swapcontext(&c->back, &c->self);
#ifdef MP_ASAN
    __sanitizer_finish_switch_fiber(fake, NULL, NULL);
#endif
}

/* From c back to its resumer; `last`: c never runs again. */
static void switch_out(mp_nbc *c, int last)
{
#ifdef MP_ASAN
    __sanitizer_start_switch_fiber(last ? NULL : &c->fake, c->back_base, c->back_size);
#endif
#ifdef MP_TSAN
    __tsan_switch_to_fiber(c->back_fib, 0);
#endif
    swapcontext(&c->self, &c->back);
#ifdef MP_ASAN
    __sanitizer_finish_switch_fiber(c->fake, &c->back_base, &c->back_size);
#endif
    (void)last;
}

static void body(void)
{
    mp_nbc *c = running;
#ifdef MP_ASAN
    __sanitizer_finish_switch_fiber(NULL, &c->back_base, &c->back_size);
#endif
    c->rc = c->fn(&c->a);
    c->done = 1;
    switch_out(c, 1);
}

void mp_nbc_yield(void)
{
    switch_out(running, 0);
}

/* Runs c until it yields or ends, with its own collective number. */
static void resume(mp_nbc *c)
{
    uint32_t seq = mp_coll_seq;
    mp_coll_seq = c->seq;
    running = c;
    switch_in(c);
    running = NULL;
    c->seq = mp_coll_seq;
    mp_coll_seq = seq;
}

/* ---- life ---- */

/* A derived type the call names lives until it ends (MPI lets the
   program free it meanwhile); the one held, else NULL. */
static MPI_Datatype hold_type(MPI_Datatype t)
{
    if (!mp_type_ok(t) || t->predefined)
        return NULL;
    t->refs++;
    return t;
}

/* Holds every type the call names: its two, and Alltoallw's per rank. */
static int hold_types(mp_nbc *c)
{
    int n = c->a.comm->size, k = 2 + (c->a.stypes ? n : 0) + (c->a.rtypes ? n : 0);
    c->held = calloc((size_t)k, sizeof *c->held);
    if (!c->held)
        return -1;
    c->held[c->nheld++] = hold_type(c->a.stype);
    c->held[c->nheld++] = hold_type(c->a.rtype);
    for (int i = 0; c->a.stypes && i < n; i++)
        c->held[c->nheld++] = hold_type(c->a.stypes[i]);
    for (int i = 0; c->a.rtypes && i < n; i++)
        c->held[c->nheld++] = hold_type(c->a.rtypes[i]);
    return 0;
}

static void nbc_free(mp_nbc *c)
{
#ifdef MP_TSAN
    if (c->fiber)
        __tsan_destroy_fiber(c->fiber);
#endif
    if (c->map)
        stack_put(c->map);
    free(c);
}

/* c's first switch_in runs body() on c's stack (getcontext returns once:
   its own function, so the caller's variables are not in its frame). */
static void context_make(mp_nbc *c)
{
    getcontext(&c->self);
    c->self.uc_stack.ss_sp = c->map + GUARD_BYTES;
    c->self.uc_stack.ss_size = STACK_BYTES;
    c->self.uc_link = NULL;
    makecontext(&c->self, body, 0);
}

static mp_nbc *nbc_new(mp_coll_fn *fn, const mp_coll_args *a, const char *name)
{
    mp_nbc *c = calloc(1, sizeof *c);
    if (!c)
        return NULL;
    if (!(c->map = stack_get())) {
        nbc_free(c);
        return NULL;
    }
    context_make(c);
#ifdef MP_TSAN
    c->fiber = __tsan_create_fiber(0);
#endif
    c->fn = fn, c->a = *a, c->name = name;
    if (hold_types(c) == 0)
        return c;
    nbc_free(c);
    return NULL;
}

/* c's types released, its stack and itself freed. */
static void drop(mp_nbc *c)
{
    for (int i = 0; i < c->nheld; i++)
        mp_type_release(c->held[i]);
    free(c->held);
    nbc_free(c);
}

/* c has ended: its request completes (and is freed if the program freed
   it), its stack goes. */
static void nbc_end(mp_nbc *c)
{
    MPI_Request r = c->req;
    int rc = c->rc;
    drop(c);
    mp_req_coll_done(r, rc);
}

/* One pass over the live coroutines; takes out the ended ones. */
static void run_pass(void)
{
    live_tail = &live;
    for (mp_nbc **p = &live; *p;) {
        mp_nbc *c = *p;
        resume(c);
        if (c->done) {
            *p = c->next;
            nbc_end(c);
        } else {
            p = &c->next;
        }
        live_tail = p;
    }
}

/*
 * Resumes every coroutine until a whole pass handles no message and
 * completes no request (each resumed coroutine polls once and goes back
 * to waiting unless what it waits for is there). Bounded by the messages
 * there are: a pass that moves nothing ends it. Not from a coroutine.
 */
int mp_nbc_run(void)
{
    int moved = 0;
    while (live && !running) {
        unsigned long before = mp_progress_count;
        run_pass();
        if (mp_progress_count == before)
            break;
        moved = 1;
    }
    return moved;
}

int mp_nbc_start(mp_coll_fn *fn, const mp_coll_args *a, MPI_Request *out,
                 const char *name)
{
    MP_CHECK_INIT(name);
    if (!mp_comm_ok(a->comm))
        return mp_err(MPI_COMM_NULL, MPI_ERR_COMM, name);
    if (!out)
        return mp_err(a->comm, MPI_ERR_REQUEST, name);
    if (running) /* no MPI call is made from a coroutine but collectives */
        return mp_err(a->comm, MPI_ERR_INTERN, name);
    mp_nbc *c = nbc_new(fn, a, name);
    MPI_Request r = c ? mp_req_coll(a->comm) : NULL;
    if (!r) {
        if (c)
            drop(c);
        return mp_err(a->comm, MPI_ERR_NO_MEM, name);
    }
    c->req = r;
    c->seq = mp_coll_seq;
    resume(c);
    if (c->done && c->rc != MPI_SUCCESS) { /* refused: no request */
        int rc = c->rc;
        drop(c);
        mp_req_coll_free(r);
        *out = MPI_REQUEST_NULL;
        return mp_err(a->comm, rc, name);
    }
    if (c->done) {
        nbc_end(c);
    } else {
        c->next = NULL;
        *live_tail = c;
        live_tail = &c->next;
    }
    *out = r;
    return MPI_SUCCESS;
}

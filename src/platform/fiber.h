/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Fibers: a function running on a stack of its own that can stop in the
 * middle (fl_fiber_yield) and be continued later (fl_fiber_resume), by the
 * same or another thread. The stream layer runs a handler on one when the
 * handler may have to wait for bytes still on the wire.
 *
 * Two implementations of the switch: our own few instructions (x86-64,
 * AArch64: callee-saved registers and the stack pointer, nothing else), and
 * the portable ucontext one (makecontext/swapcontext: it also saves the
 * signal mask, with a system call per switch). FLIT_FIBERS=ucontext picks
 * the portable one where the fast one exists, so both are tested.
 *
 * Stacks are mapped (untouched pages cost nothing) with a guard page below
 * them, and kept in a pool for reuse. AddressSanitizer is told of every
 * switch (__sanitizer_start/finish_switch_fiber).
 *
 * Threads: a fiber runs on one thread at a time. It may be resumed by a
 * different thread than the one that resumed it last; the caller serialises
 * (the endpoint's lock). Code inside a fiber must not keep the address of a
 * thread-local variable across a yield, and that includes errno and
 * pthread_self(): their functions are declared const, so a compiler may
 * compute the address (the id) once for the code on both sides of a yield
 * in one function (after inlining).
 */
#ifndef FL_PLATFORM_FIBER_H
#define FL_PLATFORM_FIBER_H

#include <stdbool.h>
#include <stddef.h>

struct fl_fiber;
typedef void (*fl_fiber_fn)(struct fl_fiber *self, void *arg);

/*
 * A fiber that runs fn(self, arg) when first resumed, on a stack of
 * FLIT_FIBER_STACK_KB (from the pool when one is free). NULL when out of
 * memory.
 */
struct fl_fiber *fl_fiber_new(fl_fiber_fn fn, void *arg);

/*
 * Runs f from where it stopped until it yields or fn returns. Returns true
 * when fn has returned: f is finished, and only fl_fiber_free may be called
 * on it (resuming it again aborts). Not from inside f itself.
 */
bool fl_fiber_resume(struct fl_fiber *f);

/* Inside f: back to the fl_fiber_resume that runs it, which returns false. */
void fl_fiber_yield(struct fl_fiber *self);

/* Gives a finished or never started fiber's stack back to the pool (one
   stopped halfway is a bug: logged, then abort). NULL is ignored. */
void fl_fiber_free(struct fl_fiber *f);

/* Which switch is in use: "asm" or "ucontext". */
const char *fl_fiber_kind(void);

/* Frees the pooled stacks (flit_finalize). */
void fl_fiber_pool_drain(void);

#endif /* FL_PLATFORM_FIBER_H */

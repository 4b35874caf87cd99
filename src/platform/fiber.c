/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Fibers (see fiber.h): our own context switch for x86-64 and AArch64, the
 * ucontext one everywhere else (and under FLIT_FIBERS=ucontext), stacks
 * mapped with a guard page and pooled, AddressSanitizer and
 * ThreadSanitizer told of every switch.
 *
 * A fiber's mapping holds, from the low end: the guard page, the stack
 * (FLIT_FIBER_STACK_KB), then struct fl_fiber itself, so one mmap is all a
 * fiber costs and the struct's page is one the stack touches anyway.
 */
#include "platform/fiber.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>

#include "util/config.h"
#include "util/log.h"

/* ---- AddressSanitizer ---- */

#if defined(__SANITIZE_ADDRESS__)
#define FL_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define FL_ASAN 1
#endif
#endif

#ifdef FL_ASAN
#include <sanitizer/asan_interface.h>
#include <sanitizer/common_interface_defs.h>
#include <sanitizer/lsan_interface.h>
#endif

/* ---- ThreadSanitizer ---- */

#if defined(__SANITIZE_THREAD__)
#define FL_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define FL_TSAN 1
#endif
#endif

#ifdef FL_TSAN
#include <sanitizer/tsan_interface.h>
#endif

/* ---- which switch this build has ---- */

/* ELF only (the directives below), and LP64 only: x32 and AArch64 ILP32
   have 4-byte pointers where the switch stores 8. */
#if defined(__ELF__) && defined(__x86_64__) && !defined(__ILP32__)
#define FL_FIBER_ASM 1
#elif defined(__ELF__) && defined(__aarch64__) && !defined(__ILP32__)
#define FL_FIBER_ASM 1
#endif

struct fl_fiber {
    /* Own switch: the stack pointers saved by fl_fiber_switch_asm, the
       fiber's while it is stopped, its resumer's while it runs. Kept here
       and not in thread-local storage since the next resume may come from
       another thread. */
    void *sp;
    void *resumer_sp;
    fl_fiber_fn fn;
    void *arg;
    char *map; /* the whole mapping: guard page, stack, this */
    size_t map_len;
    char *stack;       /* lowest usable byte, just above the guard page */
    size_t stack_len;  /* up to this struct */
    bool use_ucontext; /* which switch this fiber was made for */
    bool started;
    bool finished;
    struct fl_fiber *next; /* in the pool */
#ifdef FL_ASAN
    /* The fiber's fake stack while it is stopped, and the stack of whoever
       resumed it last (which thread, hence which stack, can change). */
    void *asan_fake;
    const void *resumer_bottom;
    size_t resumer_size;
#endif
#ifdef FL_TSAN
    /* ThreadSanitizer's context of the fiber (its own shadow call stack),
       and that of whoever resumed it last. */
    void *tsan_fiber;
    void *tsan_resumer;
#endif
    ucontext_t uc;         /* the fiber's, for the ucontext switch */
    ucontext_t resumer_uc; /* its resumer's */
};

/* ---- the own switch ---- */

#ifdef FL_FIBER_ASM
/*
 * fl_fiber_switch_asm(save, to): pushes the callee-saved state on the
 * current stack, stores the stack pointer in *save, moves to stack `to`
 * and pops the state found there, returning to whoever stored `to`. To the
 * compiler it is an ordinary call, so everything else (caller-saved
 * registers, memory) is already assumed clobbered.
 *
 * fl_fiber_start_asm: where a new fiber's first switch "returns" to. The
 * initial frame (fl_fiber_new) leaves the fiber in one callee-saved
 * register and the C entry in another; the trampoline calls entry(fiber) on a
 * 16-byte aligned stack. entry never returns. The CFI marks the trampoline as
 * the outermost frame, so debuggers and unwinders stop there.
 */
void fl_fiber_switch_asm(void **save, void *to);
void fl_fiber_start_asm(void);

#if defined(__x86_64__)
/*
 * Frame (64 bytes, from the saved rsp up): MXCSR (4 bytes) and the x87
 * control word (2) — control state the SysV ABI makes callee-saved —
 * padding, r15, r14, r13, r12, rbx, rbp, return address. endbr64 is a NOP
 * without CET; with -fcf-protection it lets an indirect call land here.
 */
__asm__(".pushsection .text\n"
        ".p2align 4\n"
        ".globl fl_fiber_switch_asm\n"
        ".hidden fl_fiber_switch_asm\n"
        ".type fl_fiber_switch_asm, %function\n"
        "fl_fiber_switch_asm:\n"
        "    endbr64\n"
        "    pushq %rbp\n"
        "    pushq %rbx\n"
        "    pushq %r12\n"
        "    pushq %r13\n"
        "    pushq %r14\n"
        "    pushq %r15\n"
        "    subq $8, %rsp\n"
        "    stmxcsr (%rsp)\n"
        "    fnstcw 4(%rsp)\n"
        "    movq %rsp, (%rdi)\n"
        "    movq %rsi, %rsp\n"
        "    ldmxcsr (%rsp)\n"
        "    fldcw 4(%rsp)\n"
        "    addq $8, %rsp\n"
        "    popq %r15\n"
        "    popq %r14\n"
        "    popq %r13\n"
        "    popq %r12\n"
        "    popq %rbx\n"
        "    popq %rbp\n"
        "    ret\n"
        ".size fl_fiber_switch_asm, .-fl_fiber_switch_asm\n"
        "\n"
        ".p2align 4\n"
        ".globl fl_fiber_start_asm\n"
        ".hidden fl_fiber_start_asm\n"
        ".type fl_fiber_start_asm, %function\n"
        "fl_fiber_start_asm:\n"
        "    .cfi_startproc\n"
        "    .cfi_undefined rip\n"
        "    endbr64\n"
        "    movq %r12, %rdi\n"
        "    call *%r13\n"
        "    ud2\n"
        "    .cfi_endproc\n"
        ".size fl_fiber_start_asm, .-fl_fiber_start_asm\n"
        ".popsection\n"
        ".pushsection .note.GNU-stack,\"\",%progbits\n"
        ".popsection\n");

enum { ASM_FRAME = 64 };

/* The first frame of a new fiber: what fl_fiber_switch_asm pops. top is
   16-byte aligned; after the ret the trampoline runs with rsp == top, so its
   call sees the aligned stack the ABI wants. */
static void *asm_initial_frame(char *top, struct fl_fiber *f,
                               void (*entry)(struct fl_fiber *))
{
    uint64_t *w = (uint64_t *)(void *)(top - ASM_FRAME);
    uint32_t mxcsr;
    uint16_t fcw;
    /* The creator's rounding modes and exception masks, as makecontext's
       context would have them. */
    __asm__ __volatile__("stmxcsr %0" : "=m"(mxcsr));
    __asm__ __volatile__("fnstcw %0" : "=m"(fcw));
    memset(w, 0, ASM_FRAME);
    memcpy((char *)w, &mxcsr, sizeof mxcsr);
    memcpy((char *)w + 4, &fcw, sizeof fcw);
    w[1] = 0;                                       /* r15 */
    w[2] = 0;                                       /* r14 */
    w[3] = (uint64_t)(uintptr_t)entry;              /* r13 */
    w[4] = (uint64_t)(uintptr_t)f;                  /* r12 */
    w[5] = 0;                                       /* rbx */
    w[6] = 0;                                       /* rbp: ends frame-pointer chains */
    w[7] = (uint64_t)(uintptr_t)fl_fiber_start_asm; /* return address */
    return w;
}

#elif defined(__aarch64__)
/*
 * Frame (176 bytes, from the saved sp up): x19..x28, x29 (frame pointer),
 * x30 (link register: where the switch returns), d8..d15 (the low halves of
 * v8..v15, all AAPCS64 keeps), FPCR (rounding mode and the like, which
 * AAPCS64 also preserves across calls) and padding. Writing FPCR can stall,
 * so it is written only when the two sides differ. "hint #34" is bti c: a
 * NOP without BTI.
 */
__asm__(".pushsection .text\n"
        ".p2align 4\n"
        ".globl fl_fiber_switch_asm\n"
        ".hidden fl_fiber_switch_asm\n"
        ".type fl_fiber_switch_asm, %function\n"
        "fl_fiber_switch_asm:\n"
        "    hint #34\n"
        "    sub sp, sp, #176\n"
        "    stp x19, x20, [sp, #0]\n"
        "    stp x21, x22, [sp, #16]\n"
        "    stp x23, x24, [sp, #32]\n"
        "    stp x25, x26, [sp, #48]\n"
        "    stp x27, x28, [sp, #64]\n"
        "    stp x29, x30, [sp, #80]\n"
        "    stp d8, d9, [sp, #96]\n"
        "    stp d10, d11, [sp, #112]\n"
        "    stp d12, d13, [sp, #128]\n"
        "    stp d14, d15, [sp, #144]\n"
        "    mrs x9, fpcr\n"
        "    str x9, [sp, #160]\n"
        "    mov x10, sp\n"
        "    str x10, [x0]\n"
        "    mov sp, x1\n"
        "    ldp x19, x20, [sp, #0]\n"
        "    ldp x21, x22, [sp, #16]\n"
        "    ldp x23, x24, [sp, #32]\n"
        "    ldp x25, x26, [sp, #48]\n"
        "    ldp x27, x28, [sp, #64]\n"
        "    ldp x29, x30, [sp, #80]\n"
        "    ldp d8, d9, [sp, #96]\n"
        "    ldp d10, d11, [sp, #112]\n"
        "    ldp d12, d13, [sp, #128]\n"
        "    ldp d14, d15, [sp, #144]\n"
        "    ldr x10, [sp, #160]\n"
        "    cmp x9, x10\n"
        "    b.eq 1f\n"
        "    msr fpcr, x10\n"
        "1:  add sp, sp, #176\n"
        "    ret\n"
        ".size fl_fiber_switch_asm, .-fl_fiber_switch_asm\n"
        "\n"
        ".p2align 4\n"
        ".globl fl_fiber_start_asm\n"
        ".hidden fl_fiber_start_asm\n"
        ".type fl_fiber_start_asm, %function\n"
        "fl_fiber_start_asm:\n"
        "    .cfi_startproc\n"
        "    .cfi_undefined x30\n"
        "    hint #34\n"
        "    mov x0, x19\n"
        "    blr x20\n"
        "    brk #0\n"
        "    .cfi_endproc\n"
        ".size fl_fiber_start_asm, .-fl_fiber_start_asm\n"
        ".popsection\n"
        ".pushsection .note.GNU-stack,\"\",%progbits\n"
        ".popsection\n");

enum { ASM_FRAME = 176 };

/* The first frame of a new fiber; after the ret the trampoline runs with
   sp == top, 16-byte aligned. */
static void *asm_initial_frame(char *top, struct fl_fiber *f,
                               void (*entry)(struct fl_fiber *))
{
    uint64_t *w = (uint64_t *)(void *)(top - ASM_FRAME);
    uint64_t fpcr;
    __asm__ __volatile__("mrs %0, fpcr" : "=r"(fpcr));
    memset(w, 0, ASM_FRAME);                         /* x21..x28, x29 = 0, d8..d15 */
    w[0] = (uint64_t)(uintptr_t)f;                   /* x19 */
    w[1] = (uint64_t)(uintptr_t)entry;               /* x20 */
    w[11] = (uint64_t)(uintptr_t)fl_fiber_start_asm; /* x30 */
    w[20] = fpcr;                                    /* the creator's, as makecontext's */
    return w;
}
#endif
#endif /* FL_FIBER_ASM */

#if defined(FL_FIBER_ASM) && defined(__x86_64__)
/* Whether this thread runs with a CET shadow stack (the kernel, glibc and a
   binary built with -fcf-protection all agreeing): then every ret must match
   it, and our switch does not move it, so glibc's swapcontext (which does)
   is used instead. rdsspq, spelt in bytes for old assemblers, is a NOP
   where shadow stacks are off and leaves the 0. */
static bool shadow_stack_on(void)
{
    uint64_t ssp = 0;
    __asm__ __volatile__(".byte 0xf3, 0x48, 0x0f, 0x1e, 0xc8"
                         : "+a"(ssp)); /* rdsspq %rax */
    return ssp != 0;
}
#else
static bool shadow_stack_on(void)
{
    return false;
}
#endif

static bool use_ucontext_now(void)
{
#ifdef FL_FIBER_ASM
    return fl_cfg.fibers == FL_FIBERS_UCONTEXT || shadow_stack_on();
#else
    return true;
#endif
}

const char *fl_fiber_kind(void)
{
    return use_ucontext_now() ? "ucontext" : "asm";
}

/* ---- AddressSanitizer's fiber protocol ---- */

/* The resumer announces the fiber's stack before switching in, and closes
   the switch (restoring its own fake stack) once control is back. */
static inline void asan_resumer_out(struct fl_fiber *f, void **fake)
{
#ifdef FL_ASAN
    __sanitizer_start_switch_fiber(fake, f->stack, f->stack_len);
#else
    (void)f, (void)fake;
#endif
}

static inline void asan_resumer_back(void *fake)
{
#ifdef FL_ASAN
    __sanitizer_finish_switch_fiber(fake, NULL, NULL);
#else
    (void)fake;
#endif
}

/* The fiber, each time it runs again (first entry included): learns the
   stack of the resumer it will go back to. */
static inline void asan_fiber_in(struct fl_fiber *f)
{
#ifdef FL_ASAN
    __sanitizer_finish_switch_fiber(f->asan_fake, &f->resumer_bottom, &f->resumer_size);
#else
    (void)f;
#endif
}

/* The fiber, before switching back; last: its fake stack can go. */
static inline void asan_fiber_out(struct fl_fiber *f, bool last)
{
#ifdef FL_ASAN
    __sanitizer_start_switch_fiber(last ? NULL : &f->asan_fake, f->resumer_bottom,
                                   f->resumer_size);
#else
    (void)f, (void)last;
#endif
}

/* ---- ThreadSanitizer's fiber protocol ---- */

/* Every switch names the context it enters, with synchronisation (flags
   0): what one side did before the switch happens before what the other
   does after it, as it does, whichever threads resume the fiber. Without
   this ThreadSanitizer runs the fiber on its resumer's shadow stack, which
   the switches unbalance until it crashes. */
static inline void tsan_resumer_out(struct fl_fiber *f)
{
#ifdef FL_TSAN
    f->tsan_resumer = __tsan_get_current_fiber();
    __tsan_switch_to_fiber(f->tsan_fiber, 0);
#else
    (void)f;
#endif
}

static inline void tsan_fiber_out(struct fl_fiber *f)
{
#ifdef FL_TSAN
    __tsan_switch_to_fiber(f->tsan_resumer, 0);
#else
    (void)f;
#endif
}

/* LeakSanitizer scans thread stacks and globals, not our mappings: while a
   fiber lives, its stack (and its struct, which holds arg) may hold the
   only pointer to a block. Pooled stacks are not scanned: what dead frames
   left there would hide real leaks. */
static inline void lsan_root(struct fl_fiber *f, bool live)
{
#ifdef FL_ASAN
    size_t len = (size_t)(f->map + f->map_len - f->stack);
    if (live)
        __lsan_register_root_region(f->stack, len);
    else
        __lsan_unregister_root_region(f->stack, len);
#else
    (void)f, (void)live;
#endif
}

/* ---- running ---- */

/* Both switches end up here on a fiber's first run. Never returns: a
   finished fiber switches back to its resumer for good. */
static void fiber_main(struct fl_fiber *f)
{
    asan_fiber_in(f);
    f->fn(f, f->arg);
    f->finished = true;
    asan_fiber_out(f, true);
    tsan_fiber_out(f);
#ifdef FL_FIBER_ASM
    if (!f->use_ucontext) {
        void *dead;
        fl_fiber_switch_asm(&dead, f->resumer_sp);
    }
#endif
    swapcontext(&f->uc, &f->resumer_uc);
    abort(); /* nothing resumes a finished fiber */
}

/* makecontext passes ints only: the pointer comes in two halves. */
static void uc_entry(unsigned lo, unsigned hi)
{
    uintptr_t p = (uintptr_t)lo;
#if UINTPTR_MAX > 0xffffffffu
    p |= (uintptr_t)hi << 32;
#else
    (void)hi;
#endif
    fiber_main((struct fl_fiber *)p);
}

bool fl_fiber_resume(struct fl_fiber *f)
{
    if (f->finished) {
        fl_error("fiber %p resumed after it finished", (void *)f);
        abort();
    }
    f->started = true;
    void *fake = NULL;
    asan_resumer_out(f, &fake);
    tsan_resumer_out(f);
#ifdef FL_FIBER_ASM
    if (!f->use_ucontext)
        fl_fiber_switch_asm(&f->resumer_sp, f->sp);
    else
#endif
        swapcontext(&f->resumer_uc, &f->uc);
    asan_resumer_back(fake);
    return f->finished;
}

void fl_fiber_yield(struct fl_fiber *self)
{
    asan_fiber_out(self, false);
    tsan_fiber_out(self);
#ifdef FL_FIBER_ASM
    if (!self->use_ucontext)
        fl_fiber_switch_asm(&self->sp, self->resumer_sp);
    else
#endif
        swapcontext(&self->uc, &self->resumer_uc);
    asan_fiber_in(self);
}

/* ---- stacks and the pool ---- */

enum { POOL_MAX = 64 }; /* stacks kept for reuse; more are unmapped */

static pthread_mutex_t pool_lock = PTHREAD_MUTEX_INITIALIZER;
static struct fl_fiber *pool;
static unsigned pool_len;

/* Each thread keeps the last stack it freed (a handler's fiber is usually
   made and finished by one thread, one after the other): no lock on that
   path. A thread that ends gives its spare to the pool. */
static __thread struct fl_fiber *spare;
static __thread bool spare_keyed; /* the key is set: the exit hook will run */
static pthread_key_t spare_key;
static pthread_once_t spare_once = PTHREAD_ONCE_INIT;

static void pool_put(struct fl_fiber *f);

static void spare_at_exit(void *unused)
{
    (void)unused;
    struct fl_fiber *f = spare;
    spare = NULL;
    if (f)
        pool_put(f);
}

static void spare_key_make(void)
{
    if (pthread_key_create(&spare_key, spare_at_exit) != 0)
        spare_key = (pthread_key_t)-1; /* no key: no spares (kept out below) */
}

static size_t page_size(void)
{
    static _Atomic size_t cached; /* sysconf is a call into libc per fiber */
    size_t v = atomic_load_explicit(&cached, memory_order_relaxed);
    if (!v) {
        long p = sysconf(_SC_PAGESIZE);
        v = p > 0 ? (size_t)p : 4096;
        atomic_store_explicit(&cached, v, memory_order_relaxed);
    }
    return v;
}

/* The mapping for a stack of the configured size: guard page, stack, and
   the pages the struct needs on top. */
static size_t map_len_now(void)
{
    size_t page = page_size();
    size_t stack =
        fl_cfg.fiber_stack > 0 ? (size_t)fl_cfg.fiber_stack : (size_t)256 << 10;
    return page + ((stack + sizeof(struct fl_fiber) + page - 1) & ~(page - 1));
}

static void unmap(struct fl_fiber *f)
{
#ifdef FL_ASAN
    /* Frames left poisoned on the stack (a finished fiber's first one never
       returns) must not outlive it: the addresses will be mapped again. */
    ASAN_UNPOISON_MEMORY_REGION(f->stack, f->stack_len);
#endif
    munmap(f->map, f->map_len);
}

static struct fl_fiber *map_fiber(size_t len)
{
    int flags = MAP_PRIVATE | MAP_ANONYMOUS;
#ifdef MAP_NORESERVE
    flags |= MAP_NORESERVE; /* a stack rarely touches all its pages */
#endif
#ifdef MAP_STACK
    flags |= MAP_STACK;
#endif
    char *map = mmap(NULL, len, PROT_READ | PROT_WRITE, flags, -1, 0);
    if (map == MAP_FAILED)
        return NULL;
    size_t page = page_size();
    /* An overflow faults on the guard page instead of writing over whatever
       lies below. */
    if (mprotect(map, page, PROT_NONE) != 0) {
        munmap(map, len);
        return NULL;
    }
    uintptr_t at = ((uintptr_t)map + len - sizeof(struct fl_fiber)) & ~(uintptr_t)63;
    struct fl_fiber *f = (struct fl_fiber *)at;
    f->map = map;
    f->map_len = len;
    f->stack = map + page;
    f->stack_len = (size_t)((char *)f - f->stack) & ~(size_t)15;
    return f;
}

/* The ucontext fiber's first context. Out of line: getcontext returns
   twice, which makes a compiler wary of every variable around it. */
__attribute__((noinline)) static bool uc_init(struct fl_fiber *f)
{
    if (getcontext(&f->uc) != 0)
        return false;
    f->uc.uc_stack.ss_sp = f->stack;
    f->uc.uc_stack.ss_size = f->stack_len;
    f->uc.uc_link = NULL; /* fiber_main never returns */
    uintptr_t p = (uintptr_t)f;
    /* (p >> 16 >> 16: a plain >> 32 is undefined where pointers are 32-bit) */
    makecontext(&f->uc, (void (*)(void))uc_entry, 2, (unsigned)(p & 0xffffffffu),
                (unsigned)(p >> 16 >> 16));
    /* resumer_uc stays zeroed where swapcontext does not write it
       (uc_stack): ASan's swapcontext interceptor reads it as the stack to
       clear, and must find none. */
    return true;
}

struct fl_fiber *fl_fiber_new(fl_fiber_fn fn, void *arg)
{
    size_t len = map_len_now();
    struct fl_fiber *f = NULL;
    struct fl_fiber *stale = NULL; /* pooled at another FLIT_FIBER_STACK_KB */
    if (spare) {
        f = spare;
        spare = NULL;
        if (f->map_len != len) {
            stale = f;
            stale->next = NULL;
            f = NULL;
        }
    }
    if (!f) {
        pthread_mutex_lock(&pool_lock);
        while (pool && !f) {
            struct fl_fiber *p = pool;
            pool = p->next;
            pool_len--;
            if (p->map_len == len) {
                f = p;
            } else {
                p->next = stale;
                stale = p;
            }
        }
        pthread_mutex_unlock(&pool_lock);
    }
    while (stale) {
        struct fl_fiber *next = stale->next;
        unmap(stale);
        stale = next;
    }
    if (!f && !(f = map_fiber(len)))
        return NULL;

    /* Everything but the mapping's geometry starts afresh; the two
       ucontexts (2 KiB) only for the switch that uses them. */
    char *map = f->map, *stack = f->stack;
    size_t map_len = f->map_len, stack_len = f->stack_len;
    bool uc = use_ucontext_now();
    memset(f, 0, uc ? sizeof *f : offsetof(struct fl_fiber, uc));
    f->map = map;
    f->map_len = map_len;
    f->stack = stack;
    f->stack_len = stack_len;
    f->fn = fn;
    f->arg = arg;
    f->use_ucontext = uc;
    lsan_root(f, true);
#ifdef FL_TSAN
    f->tsan_fiber = __tsan_create_fiber(0);
#endif

#ifdef FL_FIBER_ASM
    if (!f->use_ucontext) {
        f->sp = asm_initial_frame(stack + stack_len, f, fiber_main);
        return f;
    }
#endif
    if (!uc_init(f)) {
        fl_fiber_free(f);
        return NULL;
    }
    return f;
}

void fl_fiber_free(struct fl_fiber *f)
{
    if (!f)
        return;
    if (f->started && !f->finished) {
        fl_error("fiber %p freed while stopped in the middle of its function", (void *)f);
        abort();
    }
    lsan_root(f, false);
#ifdef FL_TSAN
    /* Not running: it finished, or never started. */
    __tsan_destroy_fiber(f->tsan_fiber);
#endif
#ifdef FL_ASAN
    /* The next fiber on this stack starts with clean shadow. */
    ASAN_UNPOISON_MEMORY_REGION(f->stack, f->stack_len);
#endif
    if (!spare && !spare_keyed) {
        pthread_once(&spare_once, spare_key_make);
        spare_keyed = spare_key != (pthread_key_t)-1 &&
                      pthread_setspecific(spare_key, &spare_keyed) == 0;
    }
    if (!spare && spare_keyed) {
        spare = f;
        return;
    }
    pool_put(f);
}

static void pool_put(struct fl_fiber *f)
{
    pthread_mutex_lock(&pool_lock);
    if (pool_len < POOL_MAX) {
        f->next = pool;
        pool = f;
        pool_len++;
        f = NULL;
    }
    pthread_mutex_unlock(&pool_lock);
    if (f)
        unmap(f);
}

void fl_fiber_pool_drain(void)
{
    if (spare) { /* this thread's; other threads give theirs back as they end */
        struct fl_fiber *f = spare;
        spare = NULL;
        unmap(f);
    }
    pthread_mutex_lock(&pool_lock);
    struct fl_fiber *list = pool;
    pool = NULL;
    pool_len = 0;
    pthread_mutex_unlock(&pool_lock);
    while (list) {
        struct fl_fiber *next = list->next;
        unmap(list);
        list = next;
    }
}

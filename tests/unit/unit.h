/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Helpers the unit tests share on top of tests/common/test.h: a clean
 * environment, polite spinning for a machine with few cores, and deadlines
 * that turn a hang into a failure (never a timing assumption: a deadline
 * only ever fails a test that would otherwise hang).
 */
#ifndef FLIT_UNIT_H
#define FLIT_UNIT_H

#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "test.h"

/* Removes every FLIT_* variable, so a test sees the defaults whatever the
   environment it was started from (a flitrun rank, a developer's shell). */
static inline void unit_clean_env(void)
{
    extern char **environ;
    char names[64][128];
    int n = 0;
    for (char **e = environ; *e && n < 64; e++) {
        if (strncmp(*e, "FLIT_", 5) != 0)
            continue;
        size_t len = strcspn(*e, "=");
        if (len >= sizeof names[0])
            continue;
        memcpy(names[n], *e, len);
        names[n++][len] = '\0';
    }
    for (int i = 0; i < n; i++)
        unsetenv(names[i]);
}

static inline double unit_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/*
 * Runs child() in a fork()ed process with its stderr into *out (capacity
 * cap, NUL-terminated) and returns its wait status: for tests whose outcome
 * is that the library stops the process. child() exits; it never returns.
 */
static inline int unit_run_child(void (*child)(void), char *out, size_t cap)
{
    int pfd[2];
    CHECK(pipe(pfd) == 0);
    fflush(NULL);
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        close(pfd[0]);
        dup2(pfd[1], STDERR_FILENO);
        close(pfd[1]);
        child();
        _exit(99);
    }
    close(pfd[1]);
    size_t n = 0;
    ssize_t r;
    while (n < cap - 1 && (r = read(pfd[0], out + n, cap - 1 - n)) != 0)
        if (r > 0)
            n += (size_t)r; /* r < 0: EINTR, read again */
    out[n] = '\0';
    close(pfd[0]);
    int status = 0;
    CHECK(waitpid(pid, &status, 0) == pid);
    return status;
}

/* One step of a wait on another thread: a pause, and every 64 steps a
   yield, since the machine may have fewer cores than spinning threads. */
static inline void unit_pause(uint64_t *spins)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield" ::: "memory");
#endif
    if ((++*spins & 63) == 0)
        sched_yield();
}

/* A failure that lets the test go on, so that one defect does not hide the
   checks after it; main returns unit_exit_status(). */
static int unit_soft_failures;

#define SOFT_FAIL(...)                                                                   \
    do {                                                                                 \
        fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__);                             \
        fprintf(stderr, __VA_ARGS__);                                                    \
        fputc('\n', stderr);                                                             \
        unit_soft_failures++;                                                            \
    } while (0)

static inline int unit_exit_status(void)
{
    return unit_soft_failures ? 1 : 0;
}

/* Seconds a wait on another thread may take before the test calls it a
   hang. Generous: it only bounds a test that is already broken. */
#define UNIT_HANG_S 60.0

#endif /* FLIT_UNIT_H */

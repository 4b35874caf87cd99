/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * flit_job_abort with no launcher to tell (a job of one, before flit_init,
 * after flit_finalize): the process exits with the status's low byte (1
 * when that is 0), having flushed stdout, and runs no atexit handler. Each
 * case is a child; the parent reads its status and what it printed.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "unit.h"

enum when { BEFORE_INIT, JOINED, AFTER_FINALIZE };

static int status_arg;
static enum when when_arg;

static void at_exit_ran(void)
{
    printf("atexit ran\n");
    fflush(stdout);
}

static void child(void)
{
    dup2(STDERR_FILENO, STDOUT_FILENO); /* the pipe to the parent */
    atexit(at_exit_ran);
    if (when_arg != BEFORE_INIT && flit_init(NULL) != FLIT_OK)
        _exit(101);
    if (when_arg == AFTER_FINALIZE && flit_finalize() != FLIT_OK)
        _exit(102);
    printf("unflushed line"); /* stdout is a pipe: fully buffered */
    flit_job_abort(status_arg, when_arg == JOINED ? "the test's reason" : NULL);
}

int main(void)
{
    unit_clean_env();
    static const struct {
        int status, want;
    } cases[] = {{3, 3}, {255, 255}, {0, 1}, {256, 1}, {300, 44}, {-1, 255}};
    for (int w = BEFORE_INIT; w <= AFTER_FINALIZE; w++) {
        for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
            static char out[4096];
            status_arg = cases[i].status;
            when_arg = (enum when)w;
            int st = unit_run_child(child, out, sizeof out);
            if (!WIFEXITED(st) || WEXITSTATUS(st) != cases[i].want)
                FAIL("flit_job_abort(%d) (case %d): %s %d, not exit status %d; "
                     "output:\n%s",
                     cases[i].status, w, WIFEXITED(st) ? "exit status" : "signal",
                     WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st), cases[i].want, out);
            if (!strstr(out, "unflushed line"))
                FAIL("flit_job_abort (case %d) did not flush stdout:\n%s", w, out);
            if (strstr(out, "atexit ran"))
                FAIL("flit_job_abort (case %d) ran an atexit handler", w);
        }
    }
    return 0;
}

/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fl_proc_start (src/platform/os.c), what the shared-memory transport
 * watches peers with where it has no pidfds (FLIT_SHM_WATCH): a live
 * process has a start time, and the same one each time; a child that has
 * exited is gone while still a zombie (not reaped) and after; a pid with no
 * process is gone. Its start time differs from its parent's only by when it
 * began, never backwards.
 */
#include <errno.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "platform/os.h"
#include "unit.h"

int main(void)
{
    uint64_t me = 0, again = 0;
    CHECK(fl_proc_start(getpid(), &me) == 0 && me > 0);
    CHECK(fl_proc_start(getpid(), &again) == 0 && again == me);

    int go[2];
    CHECK(pipe(go) == 0);
    pid_t child = fork();
    CHECK(child >= 0);
    if (child == 0) { /* waits for its parent's word, then exits */
        char c;
        close(go[1]);
        _exit(read(go[0], &c, 1) == 1 ? 0 : 1);
    }
    close(go[0]);
    uint64_t start = 0;
    CHECK(fl_proc_start(child, &start) == 0 && start >= me);
    CHECK(write(go[1], "x", 1) == 1);
    close(go[1]);
    /* A zombie until reaped: gone already. Wait for it without reaping. */
    siginfo_t info;
    CHECK(waitid(P_PID, (id_t)child, &info, WEXITED | WNOWAIT) == 0);
    CHECK(fl_proc_start(child, &start) == -ESRCH);
    int status;
    CHECK(waitpid(child, &status, 0) == child && WIFEXITED(status) &&
          WEXITSTATUS(status) == 0);
    CHECK(fl_proc_start(child, &start) == -ESRCH);
    /* No process has pid INT32_MAX here (pid_max is at most 2^22). */
    CHECK(fl_proc_start((pid_t)0x7fffffff, &start) == -ESRCH);
    puts("proc_test: OK");
    return 0;
}

/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A rank for flitrun's tests across hosts (launch_checks.sh): joins the
 * job, meets every rank at a barrier, then rank 0 prints "ready" and every
 * rank waits for messages that never come, until it is stopped: by
 * flitrun's signals, by the death signal flitrun set, or by the library
 * once its connection to flitrun breaks. With LAUNCH_RANK_STDERR set, its
 * stderr goes to that file (appended): with several ranks flitrun relays
 * their output, so what a rank says after flitrun was killed reaches no
 * one else.
 *
 *     flitrun -n 3 --hosts ... launch_rank
 */
#include <fcntl.h>
#include <flit/flit.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static void check(flit_status st, const char *what)
{
    if (st != FLIT_OK) {
        fprintf(stderr, "launch_rank: %s: %s\n", what, flit_strerror(st));
        exit(1);
    }
}

/* Where the library's last words go once flitrun is gone. */
static void stderr_to_file(void)
{
    const char *path = getenv("LAUNCH_RANK_STDERR");
    if (!path)
        return;
    int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
    if (fd < 0 || dup2(fd, STDERR_FILENO) < 0) {
        perror("launch_rank: LAUNCH_RANK_STDERR");
        exit(1);
    }
    close(fd);
}

int main(void)
{
    flit_ep_t *ep;
    stderr_to_file();
    check(flit_init(NULL), "flit_init");
    check(flit_ep_create(NULL, &ep), "flit_ep_create");
    check(flit_barrier(ep), "flit_barrier");
    if (flit_job_rank().idx == 0) {
        printf("ready\n");
        fflush(stdout);
    }
    for (;;) {
        flit_status st = flit_wait(ep, -1);
        if (st != FLIT_OK && st != FLIT_ERR_TIMEOUT)
            check(st, "flit_wait");
    }
}

/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * flitrun's stdin, on to rank 0 through a pipe that flitrun fills (the
 * ranks are in the background of flitrun's terminal, where reading it
 * would stop them). Read ahead at most STDIN_CAP bytes: with the buffer
 * full, what feeds flitrun is held back until rank 0 reads.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "flitrun.h"
#include "platform/os.h"

/* Whether rank 0 gets flitrun's stdin. Not with --stdin none, nor when
   there is nothing to read, nor from a terminal flitrun is in the
   background of: reading it would stop flitrun (SIGTTIN). */
static bool stdin_wanted(const struct job *job, struct stat *st)
{
    struct stat null_st;
    int flags = fcntl(STDIN_FILENO, F_GETFL);
    if (job->opt.stdin_none || flags < 0 || (flags & O_ACCMODE) == O_WRONLY ||
        fstat(STDIN_FILENO, st) != 0 || fstat(job->devnull_fd, &null_st) != 0 ||
        (S_ISCHR(st->st_mode) && st->st_rdev == null_st.st_rdev))
        return false;
    /* -1 (ENOTTY) too for a terminal that is not flitrun's: no SIGTTIN there */
    pid_t fg = isatty(STDIN_FILENO) ? tcgetpgrp(STDIN_FILENO) : -1;
    if (fg >= 0 && fg != getpgrp()) {
        note(job, "flitrun runs in the background of its terminal: rank 0 reads "
                  "/dev/null, not the terminal");
        return false;
    }
    return true;
}

/* What to read stdin with, without blocking the loop. O_NONBLOCK on the
   inherited file description would reach whoever shares it (the shell; the
   ranks, when the terminal is their stdout too), so stdin is opened anew.
   Regular files do not block; sockets have MSG_DONTWAIT. Where stdin cannot
   be opened anew, it is read as it is when poll says so: that blocks only
   if something outside the job reads it too and takes the bytes first. */
static int stdin_reader(struct stdin_fwd *in, const struct stat *st)
{
    in->in_sock = S_ISSOCK(st->st_mode);
    if (in->in_sock || S_ISREG(st->st_mode) || S_ISBLK(st->st_mode))
        return STDIN_FILENO;
    int fd = open("/proc/self/fd/0", O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    return fd >= 0 ? fd : STDIN_FILENO;
}

/* The pipe rank 0 reads as its stdin; flitrun fills it from its own. */
int stdin_setup(struct job *job)
{
    struct stdin_fwd *in = &job->in;
    struct stat st;
    int ends[2];
    if (!stdin_wanted(job, &st))
        return 0;
    in->buf = malloc(STDIN_CAP);
    if (!in->buf || pipe2(ends, O_CLOEXEC) != 0) {
        say("cannot make the pipe for rank 0's stdin: %s", strerror(errno));
        return -1;
    }
    in->rank_end = ends[0];
    in->pipe_fd = ends[1];
    fl_set_nonblock(in->pipe_fd);
    in->in_fd = stdin_reader(in, &st);
    note(job, "rank 0 reads flitrun's stdin; the other ranks /dev/null");
    return 0;
}

/* Lets go of flitrun's stdin: what feeds it then sees its reader gone, as
   when a program reading a pipe exits. */
static void stdin_release(struct job *job)
{
    struct stdin_fwd *in = &job->in;
    if (in->in_fd < 0)
        return;
    if (in->in_fd != STDIN_FILENO)
        close(in->in_fd);
    dup2(job->devnull_fd, STDIN_FILENO);
    in->in_fd = -1;
}

/* No more forwarding: rank 0 sees EOF; what it was not given is dropped. */
void stdin_stop(struct job *job)
{
    struct stdin_fwd *in = &job->in;
    stdin_release(job);
    if (in->pipe_fd >= 0)
        close(in->pipe_fd);
    if (in->rank_end >= 0)
        close(in->rank_end);
    in->pipe_fd = in->rank_end = -1;
    free(in->buf);
    in->buf = NULL;
    in->off = in->len = 0;
}

/* Writes what the pipe to rank 0 takes now; closes it after the last byte. */
void stdin_flush(struct job *job)
{
    struct stdin_fwd *in = &job->in;
    while (in->pipe_fd >= 0 && in->len > 0) {
        ssize_t n = write(in->pipe_fd, in->buf + in->off, in->len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && errno == EAGAIN)
            return; /* the rest when POLLOUT says so */
        if (n < 0) {
            /* EPIPE, SIGPIPE being ignored: rank 0 closed its stdin */
            note(job, "rank 0 no longer reads its stdin (%s); flitrun lets go of its own",
                 strerror(errno));
            stdin_stop(job);
            return;
        }
        in->off += (size_t)n;
        in->len -= (size_t)n;
    }
    in->off = 0;
    if (in->eof)
        stdin_stop(job);
}

/* At most what the buffer has room for: with the buffer full, stdin is not
   polled until rank 0 reads, which holds back whatever feeds it. */
void stdin_readable(struct job *job)
{
    struct stdin_fwd *in = &job->in;
    if (in->in_fd < 0 || in->len == STDIN_CAP)
        return;
    if (in->off + in->len == STDIN_CAP) {
        memmove(in->buf, in->buf + in->off, in->len);
        in->off = 0;
    }
    char *end = in->buf + in->off + in->len;
    size_t room = STDIN_CAP - in->off - in->len;
    ssize_t n = in->in_sock ? recv(in->in_fd, end, room, MSG_DONTWAIT)
                            : read(in->in_fd, end, room);
    if (n < 0 && (errno == EINTR || errno == EAGAIN))
        return;
    if (n < 0)
        say("cannot read stdin: %s; rank 0 sees it end there", strerror(errno));
    else if (n == 0)
        note(job, "stdin is at its end; so will rank 0's be");
    if (n <= 0) {
        in->eof = true;
        stdin_release(job);
    } else {
        in->len += (size_t)n;
    }
    stdin_flush(job);
}

/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A test case in a child process of its own (flit_init runs once per
 * process): the child's stderr is captured, its exit code returned.
 */
#ifndef FLIT_TEST_CHILD_H
#define FLIT_TEST_CHILD_H

#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

struct child {
    pid_t pid;
    int err; /* read end of the child's stderr */
    char text[8192];
    size_t len;
};

/* Runs fn(arg) in a child whose exit code is fn's return. 0 or -1. */
static inline int child_start(struct child *c, int (*fn)(void *), void *arg)
{
    int p[2];
    if (pipe(p) != 0)
        return -1;
    c->len = 0;
    c->text[0] = '\0';
    c->pid = fork();
    if (c->pid < 0)
        return -1;
    if (c->pid == 0) {
        close(p[0]);
        dup2(p[1], STDERR_FILENO);
        close(p[1]);
        _exit(fn(arg));
    }
    close(p[1]);
    c->err = p[0];
    return 0;
}

/* Collects stderr until the child closes it, then its exit code (128 + the
   signal that killed it). */
static inline int child_wait(struct child *c)
{
    ssize_t k;
    while ((k = read(c->err, c->text + c->len, sizeof c->text - 1 - c->len)) > 0)
        c->len += (size_t)k;
    c->text[c->len] = '\0';
    close(c->err);
    int ws;
    while (waitpid(c->pid, &ws, 0) < 0)
        ;
    return WIFEXITED(ws) ? WEXITSTATUS(ws) : 128 + WTERMSIG(ws);
}

#endif

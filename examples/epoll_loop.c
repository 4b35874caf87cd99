/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * flit inside an event loop. A program that already sleeps in epoll_wait
 * (for sockets, timers, pipes) adds flit's file descriptor to its epoll set
 * and follows the arm protocol of <flit/flit.h>:
 *
 *     for (;;) {
 *         flit_poll(ep);                          run what has arrived
 *         ... the program's own work ...
 *         if (flit_ep_arm(ep) == FLIT_ERR_AGAIN)  work already waiting:
 *             continue;                           poll again, do not sleep
 *         epoll_wait(...);                        sleep; flit's fd turns
 *     }                                           readable when work arrives
 *
 * The fd is level-triggered: it stays readable from the moment the armed
 * endpoint has work until flit_poll runs, so nothing is lost between the
 * arm and the sleep, and a sender makes a system call only while we are
 * armed. Here every rank sends N requests to its right neighbour (at most
 * WINDOW outstanding), answers the requests of its left neighbour, and a
 * timerfd in the same epoll set prints progress once a second.
 *
 *     flitrun -n 4 ./epoll_loop [N]
 */
#include <errno.h>
#include <flit/flit.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/timerfd.h>
#include <unistd.h>

enum { H_REQUEST = 1, H_REPLY = 2 };
#define WINDOW 64

static unsigned long served;  /* requests we answered */
static unsigned long replies; /* answers to our requests */

static void on_request(flit_token_t *token, void *buf, size_t nbytes,
                       const uint32_t *args, unsigned nargs, void *user)
{
    (void)buf;
    (void)nbytes;
    (void)nargs;
    (void)user;
    uint32_t answer[1] = {args[0] + 1};
    flit_status st = flit_am_reply_short(token, flit_handler(H_REPLY), answer, 1);
    if (st != FLIT_OK) {
        fprintf(stderr, "reply: %s\n", flit_strerror(st));
        exit(1);
    }
    served++;
}

static void on_reply(flit_token_t *token, void *buf, size_t nbytes, const uint32_t *args,
                     unsigned nargs, void *user)
{
    (void)token;
    (void)buf;
    (void)nbytes;
    (void)nargs;
    (void)user;
    if (args[0] != replies + 1) { /* replies come back in order */
        fprintf(stderr, "reply %u out of order (expected %lu)\n", args[0], replies + 1);
        exit(1);
    }
    replies++;
}

static void check(flit_status st, const char *what)
{
    if (st != FLIT_OK) {
        fprintf(stderr, "%s: %s\n", what, flit_strerror(st));
        exit(1);
    }
}

static void die(const char *what)
{
    perror(what);
    exit(1);
}

/* A timerfd that fires every second, in the epoll set. */
static int add_timer(int epfd)
{
    int tfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
    if (tfd < 0)
        die("timerfd_create");
    struct itimerspec its = {.it_interval = {1, 0}, .it_value = {1, 0}};
    if (timerfd_settime(tfd, 0, &its, NULL) != 0)
        die("timerfd_settime");
    struct epoll_event ev = {.events = EPOLLIN, .data.fd = tfd};
    if (epoll_ctl(epfd, EPOLL_CTL_ADD, tfd, &ev) != 0)
        die("epoll_ctl");
    return tfd;
}

int main(int argc, char **argv)
{
    unsigned long n = argc > 1 ? strtoul(argv[1], NULL, 10) : 10000;
    flit_ep_t *ep;
    check(flit_init(NULL), "flit_init");
    check(flit_ep_create(NULL, &ep), "flit_ep_create");
    check(flit_am_register(ep, flit_handler(H_REQUEST), on_request, NULL), "register");
    check(flit_am_register(ep, flit_handler(H_REPLY), on_reply, NULL), "register");
    check(flit_barrier(ep), "flit_barrier");

    uint32_t me = flit_job_rank().idx, size = flit_job_size();
    flit_rank_t right = flit_rank((me + 1) % size);

    /* flit's descriptor goes into our epoll set like any other. */
    int flit_fd;
    check(flit_ep_fd(ep, &flit_fd), "flit_ep_fd");
    int epfd = epoll_create1(EPOLL_CLOEXEC);
    if (epfd < 0)
        die("epoll_create1");
    struct epoll_event ev = {.events = EPOLLIN, .data.fd = flit_fd};
    if (epoll_ctl(epfd, EPOLL_CTL_ADD, flit_fd, &ev) != 0)
        die("epoll_ctl");
    int timer_fd = add_timer(epfd);

    unsigned long sent = 0, sleeps = 0, ticks = 0;
    /* Done when our requests are answered and our neighbour's served: the
       left neighbour sends us n too. */
    while (replies < n || served < n) {
        check(flit_poll(ep), "flit_poll");
        while (sent < n && sent - replies < WINDOW) {
            uint32_t args[1] = {(uint32_t)sent};
            check(flit_am_short(ep, right, flit_handler(H_REQUEST), args, 1, 0),
                  "flit_am_short");
            sent++;
        }
        if (replies == n && served == n)
            break;
        flit_status st = flit_ep_arm(ep);
        if (st == FLIT_ERR_AGAIN)
            continue; /* something arrived meanwhile */
        check(st, "flit_ep_arm");
        struct epoll_event got[4];
        int k = epoll_wait(epfd, got, 4, -1);
        if (k < 0 && errno != EINTR)
            die("epoll_wait");
        sleeps++;
        for (int i = 0; i < k; i++) {
            if (got[i].data.fd != timer_fd)
                continue; /* flit's fd: the next flit_poll runs it */
            uint64_t expirations;
            if (read(timer_fd, &expirations, sizeof expirations) > 0)
                ticks += expirations;
            printf("rank %u: %lu of %lu requests answered, %lu served\n", me, replies, n,
                   served);
            fflush(stdout);
        }
    }

    close(timer_fd);
    close(epfd);
    check(flit_finalize(), "flit_finalize");
    printf("epoll_loop: rank %u done: %lu round trips, slept %lu times in "
           "epoll_wait, %lu timer ticks\n",
           me, n, sleeps, ticks);
    return 0;
}

/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The default returned-message handler: with none installed, a message that
 * comes back makes the sender print the reason, the peer, the handler and
 * the operation, then abort. The program forks before flit_init; the child
 * joins a job of one, sends a request short to a handler nobody registered
 * and polls; the parent checks the child died of SIGABRT and reads what it
 * wrote to stderr through a pipe.
 */
#include <signal.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "unit.h"

#define UNREGISTERED 57

static void child(void)
{
    struct rlimit no_core = {0, 0};
    setrlimit(RLIMIT_CORE, &no_core);
    if (flit_init(NULL) != FLIT_OK)
        _exit(11);
    flit_ep_t *ep;
    if (flit_ep_create(NULL, &ep) != FLIT_OK)
        _exit(12);
    const uint32_t args[3] = {10, 20, 30};
    if (flit_am_short(ep, flit_rank(0), flit_handler(UNREGISTERED), args, 3, 0) !=
        FLIT_OK)
        _exit(13);
    for (int i = 0; i < 100000; i++)
        if (flit_poll(ep) != FLIT_OK)
            _exit(14);
    _exit(15); /* the message never came back */
}

int main(void)
{
    unit_clean_env();
    static char out[65536];
    int status = unit_run_child(child, out, sizeof out);
    if (!WIFSIGNALED(status) || WTERMSIG(status) != SIGABRT)
        FAIL("child did not die of SIGABRT: %s %d; its stderr:\n%s",
             WIFEXITED(status) ? "exit status" : "signal",
             WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status), out);
    /* What was printed names the reason, the peer, the handler, the kind. */
    static const char *const want[] = {
        "FLIT_ERR_NO_HANDLER",
        "rank 0",
        "handler 57",
        "request short",
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++)
        if (!strstr(out, want[i]))
            FAIL("the abort message does not say \"%s\"; it was:\n%s", want[i], out);
    if (!strstr(out, flit_strerror(FLIT_ERR_NO_HANDLER)))
        FAIL("the abort message does not explain the reason; it was:\n%s", out);
    return 0;
}

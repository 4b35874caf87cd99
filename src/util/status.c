/* SPDX-License-Identifier: BSD-3-Clause */
/* flit_strerror: a sentence for every status. */
#include "flit/flit.h"

static const struct {
    const char *name;
    const char *text;
} table[FLIT_STATUS_COUNT] = {
#define S(e, t) [e] = {#e, t}
    S(FLIT_OK, "success"),
    S(FLIT_ERR_INVALID_ARG, "invalid argument (NULL pointer, bad flag or size)"),
    S(FLIT_ERR_NOT_INITIALIZED, "flit_init has not been called"),
    S(FLIT_ERR_ALREADY_INITIALIZED, "flit_init was already called"),
    S(FLIT_ERR_FINALIZED, "flit_finalize was called; flit can no longer be used"),
    S(FLIT_ERR_FORKED, "this process is a fork() child and cannot use its parent's flit"),
    S(FLIT_ERR_THREAD, "single-threaded endpoint entered by two threads at once"),
    S(FLIT_ERR_NO_MEMORY, "out of memory"),
    S(FLIT_ERR_SYSTEM, "an operating-system call failed (see the log)"),
    S(FLIT_ERR_BOOT, "the launcher's bootstrap failed or went away"),
    S(FLIT_ERR_RANK, "rank out of range"),
    S(FLIT_ERR_NARGS, "too many arguments for an active message"),
    S(FLIT_ERR_TOO_LARGE, "payload larger than the maximum for its kind"),
    S(FLIT_ERR_BOUNDS, "offset or length outside the destination segment"),
    S(FLIT_ERR_NO_SEGMENT, "the destination endpoint has no segment"),
    S(FLIT_ERR_AGAIN, "no room at the destination now; try again"),
    S(FLIT_ERR_TIMEOUT, "nothing happened within the timeout"),
    S(FLIT_ERR_IN_HANDLER, "call not allowed inside a handler"),
    S(FLIT_ERR_REPLY_IN_REPLY, "reply and returned-message handlers may not send"),
    S(FLIT_ERR_ALREADY_REPLIED, "a request handler may reply only once"),
    S(FLIT_ERR_BAD_TOKEN, "token does not belong to a running request handler"),
    S(FLIT_ERR_PEER_DOWN, "the peer died or stopped answering"),
    S(FLIT_ERR_NO_HANDLER, "no handler registered at that index"),
    S(FLIT_ERR_BAD_HANDLER, "handler index outside the handler table"),
    S(FLIT_ERR_BAD_TAG, "message tag does not match the endpoint's tag"),
    S(FLIT_ERR_BAD_PACKET, "malformed packet refused"),
    S(FLIT_ERR_UNREACHABLE, "no transport reaches that peer"),
    S(FLIT_ERR_NOT_SUPPORTED, "not supported by this build or transport"),
    S(FLIT_ERR_DENIED, "the exporter did not allow this rank, or this access"),
    S(FLIT_ERR_REVOKED, "the region was unexported, or no region has that id"),
    S(FLIT_ERR_CLOSED,
      "the endpoint was destroyed (or flit finalized) while the call waited"),
    S(FLIT_ERR_EXHAUSTED,
      "none left: every handler index that could be reserved is taken"),
    S(FLIT_ERR_NO_LAUNCHER, "started as one of several tasks, but no launcher flit "
                            "supports can be reached (see the log)"),
    S(FLIT_ERR_CONFIG, "bad FLIT_* setting in the environment (see the log)"),
    S(FLIT_ERR_NOT_FOUND, "no such name (a counter this endpoint does not have)"),
#undef S
};

const char *flit_strerror(flit_status status)
{
    if ((unsigned)status >= FLIT_STATUS_COUNT || !table[status].text)
        return "unknown flit status";
    return table[status].text;
}

const char *flit_status_name(flit_status status)
{
    if ((unsigned)status >= FLIT_STATUS_COUNT || !table[status].name)
        return "FLIT_?";
    return table[status].name;
}

/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Refusals and failed replies (internal.h): what a peer sent that the
 * layer refuses, and replies that could not be sent, are counted in the
 * object's statistics; the first of each kind is logged, with its peer and
 * sizes, and further ones are only counted, so that a flood of bad
 * messages cannot flood the log.
 */
#include "internal.h"

/* Counts one more of a kind under the lock; true the first time, when the
   caller logs it (further ones are only counted). */
static bool count_first(struct flit_rpc *r, bool *logged, _Atomic uint64_t *count)
{
    rpc_lock(r);
    bool first = !*logged;
    *logged = true;
    rpc_count(count, 1);
    rpc_unlock(r);
    return first;
}

void fl_rpc_refused(struct flit_rpc *r, const char *what, uint32_t from)
{
    if (count_first(r, &r->logged_refusal, &r->ctr->refused))
        flit_log(FLIT_LOG_WARN,
                 "rpc: %s from rank %u refused (further ones are only counted)", what,
                 from);
}

void fl_rpc_reply_failed(struct flit_rpc *r, uint32_t caller, uint64_t id, size_t total,
                         flit_status st)
{
    if (count_first(r, &r->logged_failure, &r->ctr->failed_replies))
        flit_log(FLIT_LOG_WARN,
                 "rpc: the reply of %zu bytes to rank %u's call %llu could not be sent "
                 "(%s): the call ends with that status",
                 total, caller, (unsigned long long)id, flit_status_name(st));
}

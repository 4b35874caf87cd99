/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Wraps docs/rpc.md's blocking-procedure fragment for docs_snippets: an
 * account guarded by a flit mutex, and a function that has an RPC object,
 * the bank's rank, an amount and the account. check() is the README's complete program's.
 */
#include <flit/rpc.h>

enum { WITHDRAW = 3 };
struct account {
    flit_mutex_t *lock;
    flit_cond_t *funded;
    uint64_t balance;
};
void check(flit_status st, const char *what);
void readme_rpc(flit_rpc_t *rpc, flit_rank_t bank, uint64_t amount, struct account *acct);

/* README: file scope */

void readme_rpc(flit_rpc_t *rpc, flit_rank_t bank, uint64_t amount, struct account *acct)
{
    /* README: body */
}

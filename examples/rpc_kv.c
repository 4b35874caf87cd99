/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * docs/rpc.md's key-value service over RPC (<flit/rpc.h>): rank 0 keeps the
 * table, every rank stores a value under its own key and reads back its
 * neighbour's. The readme_rpc_kv test runs it under flitrun.
 */
#include <flit/rpc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { PUT, GET };
#define KEYS 64
static char *table[KEYS];
static size_t table_len[KEYS];

static void check(flit_status st, const char *what)
{
    if (st != FLIT_OK) {
        fprintf(stderr, "%s: %s\n", what, flit_strerror(st));
        exit(1);
    }
}

/* PUT: a 4-byte key, then the value, received straight into its place. */
static void put(flit_rpc_req_t *req, size_t len, void *user)
{
    (void)user;
    uint32_t key;
    if (len < sizeof key || flit_rpc_recv(req, &key, sizeof key) != FLIT_OK ||
        key >= KEYS)
        return; /* returning without a reply sends an empty one */
    char *v = malloc(len - sizeof key);
    if (!v || flit_rpc_recv(req, v, len - sizeof key) != FLIT_OK) {
        free(v);
        return;
    }
    free(table[key]);
    table[key] = v;
    table_len[key] = len - sizeof key;
}

/* GET: a 4-byte key; the reply is the value (empty when there is none). */
static void get(flit_rpc_req_t *req, size_t len, void *user)
{
    (void)user;
    uint32_t key;
    if (len != sizeof key || flit_rpc_recv(req, &key, sizeof key) != FLIT_OK ||
        key >= KEYS)
        return;
    struct iovec value = {table[key], table_len[key]};
    check(flit_rpc_reply(req, &value, 1), "flit_rpc_reply");
}

int main(void)
{
    flit_ep_t *ep;
    flit_rpc_t *rpc;
    check(flit_init(NULL), "flit_init");
    flit_ep_params_t p = {.field_mask = FLIT_EP_PARAM_LAYERS, .layers = "rpc"};
    check(flit_ep_create(&p, &ep), "flit_ep_create"); /* collective: its RPC object */
    check(flit_rpc_open(ep, &rpc), "flit_rpc_open");
    check(flit_rpc_register(rpc, PUT, put, NULL), "flit_rpc_register");
    check(flit_rpc_register(rpc, GET, get, NULL), "flit_rpc_register");
    check(flit_barrier(ep), "flit_barrier"); /* every rank's procedures are in */

    uint32_t me = flit_job_rank().idx, n = flit_job_size();
    char mine[32];
    snprintf(mine, sizeof mine, "value of rank %u", me);
    struct iovec req[2] = {{&me, sizeof me}, {mine, strlen(mine)}}; /* gathered */
    check(flit_rpc_call(rpc, flit_rank(0), PUT, req, 2, NULL, 0, NULL, NULL), "put");
    check(flit_barrier(ep), "flit_barrier"); /* every value is in */

    uint32_t key = (me + 1) % n;
    struct iovec q = {&key, sizeof key};
    flit_rpc_opts_t alloc = {.field_mask = FLIT_RPC_OPT_FLAGS | FLIT_RPC_OPT_TIMEOUT,
                             .flags = FLIT_RPC_REPLY_ALLOC, /* any length */
                             .timeout_us = 5000000};
    flit_rpc_result_t res;
    check(flit_rpc_call(rpc, flit_rank(0), GET, &q, 1, NULL, 0, &alloc, &res), "get");
    printf("rank %u: key %u holds \"%.*s\"\n", me, key, (int)res.length,
           (char *)res.data);
    char want[32];
    snprintf(want, sizeof want, "value of rank %u", key);
    int ok = res.length == strlen(want) && memcmp(res.data, want, res.length) == 0;
    free(res.data);

    check(flit_ep_destroy(ep), "flit_ep_destroy"); /* collective: the object too */
    check(flit_finalize(), "flit_finalize");
    return ok ? 0 : 1;
}

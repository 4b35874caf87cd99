/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * <flit/handle.h>: a freed handle is refused for ever, also once its slot
 * names a new object; a handle of one table is refused by another; values
 * that were never handles (NULL, addresses) are refused; bad arguments;
 * many live at once (the table grows past a chunk); and get beside new and
 * free on other threads; and flit_handle_renew, by which a recycled
 * object keeps its slot under a new value while the old one goes stale.
 */
#include <flit/handle.h>
#include <pthread.h>
#include <stdbool.h>

#include "unit.h"

static flit_handles_t *table_a, *table_b;

static void reuse(void)
{
    int x, y;
    void *hx, *hy;
    CHECK_OK(flit_handle_new(&table_a, &x, &hx));
    CHECK(flit_handle_get(&table_a, hx) == &x);
    CHECK(flit_handle_free(&table_a, hx) == &x);
    CHECK(flit_handle_get(&table_a, hx) == NULL);
    CHECK(flit_handle_free(&table_a, hx) == NULL); /* twice */
    /* Freed and made again until the slot comes back: the old value
       stays refused, the new one works. */
    for (int i = 0; i < 3; i++) {
        CHECK_OK(flit_handle_new(&table_a, &y, &hy));
        CHECK(hy != hx);
        CHECK(flit_handle_get(&table_a, hx) == NULL);
        CHECK(flit_handle_free(&table_a, hx) == NULL);
        CHECK(flit_handle_get(&table_a, hy) == &y); /* untouched */
        CHECK(flit_handle_free(&table_a, hy) == &y);
    }
}

static void foreign_values(void)
{
    int x;
    void *h;
    CHECK_OK(flit_handle_new(&table_a, &x, &h));
    CHECK(flit_handle_get(&table_b, h) == NULL); /* another table */
    CHECK(flit_handle_free(&table_b, h) == NULL);
    CHECK(flit_handle_get(&table_a, h) == &x);
    CHECK(flit_handle_get(&table_a, NULL) == NULL);
    CHECK(flit_handle_get(&table_a, &x) == NULL); /* an address */
    CHECK(flit_handle_get(&table_a, (void *)(~(uintptr_t)0)) == NULL);
    CHECK(flit_handle_get(NULL, h) == NULL);
    flit_handles_t *never = NULL;
    CHECK(flit_handle_get(&never, h) == NULL && never == NULL);
    CHECK(flit_handle_free(&never, h) == NULL);
    void *keep = &x;
    CHECK_ST(flit_handle_new(NULL, &x, &keep), FLIT_ERR_INVALID_ARG);
    CHECK_ST(flit_handle_new(&table_a, NULL, &keep), FLIT_ERR_INVALID_ARG);
    CHECK_ST(flit_handle_new(&table_a, &x, NULL), FLIT_ERR_INVALID_ARG);
    CHECK(keep == &x);
    CHECK(flit_handle_free(&table_a, h) == &x);
}

/* A renewed value names the object, the old one nothing: not for get, free
   or renew. A freed or foreign value renews to nothing. (A slot whose
   generations are spent is freed instead: 2^32 renewals, not tried.) */
static void renew(void)
{
    int x;
    void *old;
    CHECK_OK(flit_handle_new(&table_a, &x, &old));
    void *h = flit_handle_renew(&table_a, old);
    CHECK(h != NULL && h != old);
    CHECK(flit_handle_get(&table_a, old) == NULL);
    CHECK(flit_handle_free(&table_a, old) == NULL);
    CHECK(flit_handle_renew(&table_a, old) == NULL);
    CHECK(flit_handle_get(&table_a, h) == &x);
    CHECK(flit_handle_renew(&table_b, h) == NULL);
    CHECK(flit_handle_renew(NULL, h) == NULL);
    CHECK(flit_handle_renew(&table_a, NULL) == NULL);
    CHECK(flit_handle_get(&table_a, h) == &x); /* the refusals touched nothing */
    CHECK(flit_handle_free(&table_a, h) == &x);
    CHECK(flit_handle_renew(&table_a, h) == NULL);
}

enum { MANY = 5000 };

static void many(void)
{
    static int objs[MANY];
    static void *hs[MANY];
    for (int i = 0; i < MANY; i++)
        CHECK_OK(flit_handle_new(&table_b, &objs[i], &hs[i]));
    for (int i = 0; i < MANY; i++)
        CHECK(flit_handle_get(&table_b, hs[i]) == &objs[i]);
    for (int i = 0; i < MANY; i += 2)
        CHECK(flit_handle_free(&table_b, hs[i]) == &objs[i]);
    for (int i = 0; i < MANY; i++)
        CHECK(flit_handle_get(&table_b, hs[i]) == (i % 2 ? &objs[i] : NULL));
    for (int i = 1; i < MANY; i += 2)
        CHECK(flit_handle_free(&table_b, hs[i]) == &objs[i]);
}

/* Threads: each makes, checks and frees its own handles while reading the
   others' stale ones; a stale value never answers an object. */
enum { THREADS = 4, ROUNDS = 20000 };
static void *stale[THREADS];

static void *churn(void *arg)
{
    int me = (int)(intptr_t)arg, obj;
    for (int i = 0; i < ROUNDS; i++) {
        void *h;
        CHECK_OK(flit_handle_new(&table_a, &obj, &h));
        CHECK(flit_handle_get(&table_a, h) == &obj);
        if (i % 2) { /* kept for reuse: the value before goes stale too */
            void *was = h;
            CHECK((h = flit_handle_renew(&table_a, was)) != NULL);
            CHECK(flit_handle_get(&table_a, was) == NULL);
            CHECK(flit_handle_get(&table_a, h) == &obj);
            __atomic_store_n(&stale[me], was, __ATOMIC_RELAXED);
        }
        for (int t = 0; t < THREADS; t++) {
            void *s = __atomic_load_n(&stale[t], __ATOMIC_RELAXED);
            if (s)
                CHECK(flit_handle_get(&table_a, s) == NULL);
        }
        CHECK(flit_handle_free(&table_a, h) == &obj);
        __atomic_store_n(&stale[me], h, __ATOMIC_RELAXED);
    }
    return NULL;
}

static void threads(void)
{
    pthread_t th[THREADS];
    for (int i = 0; i < THREADS; i++)
        CHECK(pthread_create(&th[i], NULL, churn, (void *)(intptr_t)i) == 0);
    for (int i = 0; i < THREADS; i++)
        CHECK(pthread_join(th[i], NULL) == 0);
}

int main(void)
{
    reuse();
    foreign_values();
    renew();
    many();
    threads();
    return 0;
}

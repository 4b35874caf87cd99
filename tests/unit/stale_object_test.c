/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Stale object handles (<flit/object.h>) in a job of one rank, each used
 * again after it was destroyed and a new one of its type took its memory
 * (made right after, so that malloc hands the same block back): a set of
 * objects destroyed twice, an object destroyed twice and invoked after its
 * destroy. Each answers FLIT_ERR_INVALID_ARG and leaves the new one as it
 * was (its state intact); under ASan nothing reads freed memory. argv[1],
 * when given, names the one case to run.
 */
#include <flit/object.h>

#include "unit.h"

enum { OP_ADD, OP_GET };

static size_t op_add(void *state, const void *arg, size_t len, void *res, void *user)
{
    (void)len, (void)res, (void)user;
    uint64_t v;
    memcpy(&v, arg, sizeof v);
    *(uint64_t *)state += v;
    return 0;
}

static size_t op_get(void *state, const void *arg, size_t len, void *res, void *user)
{
    (void)arg, (void)len, (void)user;
    memcpy(res, state, sizeof(uint64_t));
    return sizeof(uint64_t);
}

static const flit_object_op_t ops[] = {
    [OP_ADD] = {.kind = FLIT_OBJECT_WRITE, .arg_max = 8, .res_max = 0, .fn = op_add},
    [OP_GET] = {.kind = FLIT_OBJECT_READ, .arg_max = 0, .res_max = 8, .fn = op_get},
};
static const flit_object_type_t counter = {
    .state_size = sizeof(uint64_t), .ops = ops, .nops = 2};

static flit_ep_t *ep;

static flit_object_t *make(flit_objects_t *objs, uint32_t id)
{
    flit_object_t *o;
    CHECK_OK(flit_object_create(objs, id, &counter, NULL, 0, FLIT_OBJECT_REPLICATED,
                                flit_rank(0), NULL, 0, &o));
    return o;
}

static void add(flit_object_t *o, uint64_t v)
{
    CHECK_OK(flit_object_invoke(o, OP_ADD, &v, sizeof v, NULL, 0, NULL));
}

static uint64_t get(flit_object_t *o)
{
    uint64_t v = 0;
    size_t n = 0;
    CHECK_OK(flit_object_invoke(o, OP_GET, NULL, 0, &v, sizeof v, &n));
    CHECK(n == sizeof v);
    return v;
}

static void stale_set(void)
{
    flit_objects_t *old, *fresh;
    CHECK_OK(flit_objects_create(ep, &old));
    CHECK_OK(flit_objects_destroy(old));
    CHECK_OK(flit_objects_create(ep, &fresh)); /* most likely old's block */
    CHECK_ST(flit_objects_destroy(old), FLIT_ERR_INVALID_ARG);
    flit_object_t *o = make(fresh, 4);
    flit_object_t *found = NULL;
    CHECK_ST(flit_object_lookup(old, 4, &found), FLIT_ERR_INVALID_ARG);
    CHECK(found == NULL);
    CHECK_OK(flit_object_lookup(fresh, 4, &found));
    CHECK(found == o);
    add(o, 5);
    CHECK(get(o) == 5);
    CHECK_OK(flit_object_destroy(o));
    CHECK_OK(flit_objects_destroy(fresh));
}

static void stale_object(void)
{
    flit_objects_t *objs;
    CHECK_OK(flit_objects_create(ep, &objs));
    flit_object_t *old = make(objs, 1);
    add(old, 2);
    CHECK_OK(flit_object_destroy(old));
    flit_object_t *fresh = make(objs, 2); /* most likely old's block */
    add(fresh, 7);
    CHECK_ST(flit_object_destroy(old), FLIT_ERR_INVALID_ARG);
    uint64_t v = 100;
    CHECK_ST(flit_object_invoke(old, OP_ADD, &v, sizeof v, NULL, 0, NULL),
             FLIT_ERR_INVALID_ARG);
    CHECK(flit_object_id(old) == UINT32_MAX);
    flit_object_stats_t st = {.struct_size = sizeof st};
    CHECK_ST(flit_object_stats(old, &st), FLIT_ERR_INVALID_ARG);
    CHECK(flit_object_id(fresh) == 2 && get(fresh) == 7); /* untouched */
    CHECK_OK(flit_object_destroy(fresh));
    CHECK_OK(flit_objects_destroy(objs));
}

int main(int argc, char **argv)
{
    static const struct {
        const char *name;
        void (*run)(void);
    } cases[] = {{"set", stale_set}, {"object", stale_object}};
    unit_clean_env();
    CHECK_OK(flit_init(NULL));
    CHECK_OK(flit_ep_create(NULL, &ep));
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
        if (argc < 2 || strcmp(argv[1], cases[i].name) == 0)
            cases[i].run();
    CHECK_OK(flit_ep_destroy(ep));
    CHECK_OK(flit_finalize());
    return 0;
}

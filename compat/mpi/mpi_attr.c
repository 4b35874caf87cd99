/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Attributes (MPI 3.1, 6.7): values a program (or a library inside it)
 * caches on a communicator or a window under a key of its own, with the
 * functions MPI calls when the object is duplicated (copy) and freed or
 * the value replaced (delete); and the predefined keys whose values MPI
 * gives (MPI_TAG_UB, MPI_UNIVERSE_SIZE, MPI_WIN_BASE ...).
 *
 * A key is an index in one table, with the kind of object it is for; a
 * key the program frees lives on while a value still uses it. An object's
 * values are a list in the order they were set. MPI_Finalize deletes
 * MPI_COMM_SELF's first (MPI 3.1, 8.7.1: libraries hang their clean-up
 * there).
 */
#include <stdlib.h>

#include "mpi_internal.h"
#include "mpi_win.h"

enum { K_COMM = 1, K_WIN = 2 };

typedef struct key {
    int kind; /* K_COMM or K_WIN; 0: a free slot */
    MPI_Comm_copy_attr_function *ccopy;
    MPI_Comm_delete_attr_function *cdel;
    MPI_Win_copy_attr_function *wcopy;
    MPI_Win_delete_attr_function *wdel;
    void *extra;
    int freed; /* by the program; the slot is reused once uses is 0 */
    int uses;  /* values set under it */
} key;

struct mp_attr {
    int keyval;
    void *value;
    struct mp_attr *next;
};

#define FIRST_KEY 64 /* below: the predefined keys (mpi.h) */

static key *keys;
static int nkeys;

/* ---- the predefined copy and delete functions ---- */

int flit_mpi_comm_null_copy_fn(MPI_Comm c, int k, void *x, void *in, void *out, int *flag)
{
    (void)c, (void)k, (void)x, (void)in, (void)out;
    *flag = 0;
    return MPI_SUCCESS;
}

int flit_mpi_comm_dup_fn(MPI_Comm c, int k, void *x, void *in, void *out, int *flag)
{
    (void)c, (void)k, (void)x;
    *(void **)out = in;
    *flag = 1;
    return MPI_SUCCESS;
}

int flit_mpi_comm_null_delete_fn(MPI_Comm c, int k, void *v, void *x)
{
    (void)c, (void)k, (void)v, (void)x;
    return MPI_SUCCESS;
}

int flit_mpi_win_null_copy_fn(MPI_Win w, int k, void *x, void *in, void *out, int *flag)
{
    (void)w, (void)k, (void)x, (void)in, (void)out;
    *flag = 0;
    return MPI_SUCCESS;
}

int flit_mpi_win_dup_fn(MPI_Win w, int k, void *x, void *in, void *out, int *flag)
{
    (void)w, (void)k, (void)x;
    *(void **)out = in;
    *flag = 1;
    return MPI_SUCCESS;
}

int flit_mpi_win_null_delete_fn(MPI_Win w, int k, void *v, void *x)
{
    (void)w, (void)k, (void)v, (void)x;
    return MPI_SUCCESS;
}

/* ---- keys ---- */

static key *key_of(int keyval, int kind)
{
    int i = keyval - FIRST_KEY;
    if (i < 0 || i >= nkeys || keys[i].kind != kind || keys[i].freed)
        return NULL;
    return &keys[i];
}

static int key_new(const key *k, int *keyval)
{
    int i = 0;
    while (i < nkeys && (keys[i].kind || keys[i].uses))
        i++;
    if (i == nkeys) {
        key *grown = realloc(keys, ((size_t)nkeys + 16) * sizeof *keys);
        if (!grown)
            return MPI_ERR_NO_MEM;
        for (int j = nkeys; j < nkeys + 16; j++)
            grown[j] = (key){0};
        keys = grown;
        nkeys += 16;
    }
    keys[i] = *k;
    *keyval = FIRST_KEY + i;
    return MPI_SUCCESS;
}

/* A value under slot i let go: the slot is free again once the program
   freed the key and no value uses it. */
static void key_unuse(int i)
{
    if (--keys[i].uses == 0 && keys[i].freed)
        keys[i] = (key){0};
}

static int key_free(int *keyval, int kind)
{
    key *k = keyval ? key_of(*keyval, kind) : NULL;
    if (!k)
        return MPI_ERR_KEYVAL;
    k->freed = 1;
    if (k->uses == 0)
        *k = (key){0};
    *keyval = MPI_KEYVAL_INVALID;
    return MPI_SUCCESS;
}

/* ---- values on an object ---- */

/* The delete function of a's key, on obj (a communicator or window). */
static int call_delete(void *obj, int kind, const struct mp_attr *a)
{
    const key *k = &keys[a->keyval - FIRST_KEY];
    if (kind == K_COMM)
        return k->cdel ? k->cdel((MPI_Comm)obj, a->keyval, a->value, k->extra)
                       : MPI_SUCCESS;
    return k->wdel ? k->wdel((MPI_Win)obj, a->keyval, a->value, k->extra) : MPI_SUCCESS;
}

static struct mp_attr **find(struct mp_attr **list, int keyval)
{
    while (*list && (*list)->keyval != keyval)
        list = &(*list)->next;
    return list;
}

static int attr_set(struct mp_attr **list, void *obj, int kind, int keyval, void *value)
{
    key *k = key_of(keyval, kind);
    if (!k)
        return MPI_ERR_KEYVAL;
    struct mp_attr **at = find(list, keyval);
    if (*at) { /* replaced: the old value is deleted first */
        int rc = call_delete(obj, kind, *at);
        if (rc)
            return rc;
        (*at)->value = value;
        return MPI_SUCCESS;
    }
    struct mp_attr *a = malloc(sizeof *a);
    if (!a)
        return MPI_ERR_NO_MEM;
    *a = (struct mp_attr){keyval, value, NULL};
    *at = a;
    k->uses++;
    return MPI_SUCCESS;
}

static int attr_delete(struct mp_attr **list, void *obj, int kind, int keyval)
{
    if (!key_of(keyval, kind))
        return MPI_ERR_KEYVAL;
    struct mp_attr **at = find(list, keyval);
    if (!*at)
        return MPI_ERR_KEYVAL; /* nothing under that key here */
    int rc = call_delete(obj, kind, *at);
    if (rc)
        return rc;
    struct mp_attr *a = *at;
    *at = a->next;
    key_unuse(a->keyval - FIRST_KEY);
    free(a);
    return MPI_SUCCESS;
}

/* Every value of the object deleted (it is being freed), latest first; the
   first delete function's error is returned, the others still run. */
static int attr_clear(struct mp_attr **list, void *obj, int kind)
{
    int rc = MPI_SUCCESS;
    while (*list) {
        struct mp_attr **last = list;
        while ((*last)->next)
            last = &(*last)->next;
        struct mp_attr *a = *last;
        int r = call_delete(obj, kind, a);
        if (!rc)
            rc = r;
        *last = NULL;
        key_unuse(a->keyval - FIRST_KEY);
        free(a);
    }
    return rc;
}

static int attr_get(struct mp_attr *list, int keyval, void *value, int *flag)
{
    struct mp_attr **at = find(&list, keyval);
    *flag = *at != NULL;
    if (*at)
        *(void **)value = (*at)->value;
    return MPI_SUCCESS;
}

int mp_attr_comm_clear(MPI_Comm comm)
{
    return attr_clear(&comm->attrs, comm, K_COMM);
}

int mp_attr_win_clear(MPI_Win win)
{
    return attr_clear(&win->attrs, win, K_WIN);
}

/* What each copy function of old's keys lets new have. */
int mp_attr_comm_dup(MPI_Comm old, MPI_Comm new)
{
    for (struct mp_attr *a = old->attrs; a; a = a->next) {
        const key *k = &keys[a->keyval - FIRST_KEY];
        void *out = NULL;
        int flag = 0;
        int rc = k->ccopy ? k->ccopy(old, a->keyval, k->extra, a->value, &out, &flag)
                          : MPI_SUCCESS;
        if (rc == MPI_SUCCESS && flag)
            rc = attr_set(&new->attrs, new, K_COMM, a->keyval, out);
        if (rc)
            return rc;
    }
    return MPI_SUCCESS;
}

/* ---- communicators ---- */

int MPI_Comm_create_keyval(MPI_Comm_copy_attr_function *comm_copy_attr_fn,
                           MPI_Comm_delete_attr_function *comm_delete_attr_fn,
                           int *comm_keyval, void *extra_state)
{
    MP_LOCKED(PMPI_Comm_create_keyval,
              (comm_copy_attr_fn, comm_delete_attr_fn, comm_keyval, extra_state));
    MP_CHECK_INIT("MPI_Comm_create_keyval");
    if (!comm_keyval)
        return mp_err(MPI_COMM_NULL, MPI_ERR_ARG, "MPI_Comm_create_keyval");
    key k = {.kind = K_COMM,
             .ccopy = comm_copy_attr_fn,
             .cdel = comm_delete_attr_fn,
             .extra = extra_state};
    return mp_err(MPI_COMM_NULL, key_new(&k, comm_keyval), "MPI_Comm_create_keyval");
}

int MPI_Comm_free_keyval(int *comm_keyval)
{
    MP_LOCKED(PMPI_Comm_free_keyval, (comm_keyval));
    MP_CHECK_INIT("MPI_Comm_free_keyval");
    return mp_err(MPI_COMM_NULL, key_free(comm_keyval, K_COMM), "MPI_Comm_free_keyval");
}

int MPI_Comm_set_attr(MPI_Comm comm, int comm_keyval, void *attribute_val)
{
    MP_LOCKED(PMPI_Comm_set_attr, (comm, comm_keyval, attribute_val));
    MP_CHECK_INIT("MPI_Comm_set_attr");
    if (!mp_comm_ok(comm))
        return mp_err(MPI_COMM_NULL, MPI_ERR_COMM, "MPI_Comm_set_attr");
    return mp_err(comm, attr_set(&comm->attrs, comm, K_COMM, comm_keyval, attribute_val),
                  "MPI_Comm_set_attr");
}

int MPI_Comm_delete_attr(MPI_Comm comm, int comm_keyval)
{
    MP_LOCKED(PMPI_Comm_delete_attr, (comm, comm_keyval));
    MP_CHECK_INIT("MPI_Comm_delete_attr");
    if (!mp_comm_ok(comm))
        return mp_err(MPI_COMM_NULL, MPI_ERR_COMM, "MPI_Comm_delete_attr");
    return mp_err(comm, attr_delete(&comm->attrs, comm, K_COMM, comm_keyval),
                  "MPI_Comm_delete_attr");
}

/* The predefined keys' values: fixed for the job, so static. */
static int *predefined_comm(int keyval)
{
    static int tag_ub = MPI_TAG_UB_VALUE, wtime_global = 0, host = MPI_PROC_NULL,
               io = MPI_ANY_SOURCE, appnum = 0, lastcode = MPI_ERR_LASTCODE, universe;
    universe = (int)flit_job_size();
    switch (keyval) {
    case MPI_TAG_UB:
        return &tag_ub;
    case MPI_WTIME_IS_GLOBAL:
        return &wtime_global; /* each rank's clock is its own */
    case MPI_HOST:
        return &host; /* no process is the host */
    case MPI_IO:
        return &io; /* every process may do I/O */
    case MPI_UNIVERSE_SIZE:
        return &universe; /* no process is started later */
    case MPI_APPNUM:
        return &appnum;
    case MPI_LASTUSEDCODE:
        return &lastcode;
    default:
        return NULL;
    }
}

int MPI_Comm_get_attr(MPI_Comm comm, int comm_keyval, void *attribute_val, int *flag)
{
    MP_LOCKED(PMPI_Comm_get_attr, (comm, comm_keyval, attribute_val, flag));
    MP_CHECK_INIT("MPI_Comm_get_attr");
    if (!mp_comm_ok(comm))
        return mp_err(MPI_COMM_NULL, MPI_ERR_COMM, "MPI_Comm_get_attr");
    if (!attribute_val || !flag)
        return mp_err(comm, MPI_ERR_ARG, "MPI_Comm_get_attr");
    int *fixed = predefined_comm(comm_keyval);
    if (fixed) {
        *(int **)attribute_val = fixed;
        *flag = 1;
        return MPI_SUCCESS;
    }
    if (!key_of(comm_keyval, K_COMM))
        return mp_err(comm, MPI_ERR_KEYVAL, "MPI_Comm_get_attr");
    return attr_get(comm->attrs, comm_keyval, attribute_val, flag);
}

/* ---- windows ---- */

int MPI_Win_create_keyval(MPI_Win_copy_attr_function *win_copy_attr_fn,
                          MPI_Win_delete_attr_function *win_delete_attr_fn,
                          int *win_keyval, void *extra_state)
{
    MP_LOCKED(PMPI_Win_create_keyval,
              (win_copy_attr_fn, win_delete_attr_fn, win_keyval, extra_state));
    MP_CHECK_INIT("MPI_Win_create_keyval");
    if (!win_keyval)
        return mp_err(MPI_COMM_NULL, MPI_ERR_ARG, "MPI_Win_create_keyval");
    key k = {.kind = K_WIN,
             .wcopy = win_copy_attr_fn,
             .wdel = win_delete_attr_fn,
             .extra = extra_state};
    return mp_err(MPI_COMM_NULL, key_new(&k, win_keyval), "MPI_Win_create_keyval");
}

int MPI_Win_free_keyval(int *win_keyval)
{
    MP_LOCKED(PMPI_Win_free_keyval, (win_keyval));
    MP_CHECK_INIT("MPI_Win_free_keyval");
    return mp_err(MPI_COMM_NULL, key_free(win_keyval, K_WIN), "MPI_Win_free_keyval");
}

int MPI_Win_set_attr(MPI_Win win, int win_keyval, void *attribute_val)
{
    MP_LOCKED(PMPI_Win_set_attr, (win, win_keyval, attribute_val));
    MP_CHECK_INIT("MPI_Win_set_attr");
    if (!mp_win_ok(win))
        return mp_err(MPI_COMM_NULL, MPI_ERR_WIN, "MPI_Win_set_attr");
    return mp_win_err(win, attr_set(&win->attrs, win, K_WIN, win_keyval, attribute_val),
                      "MPI_Win_set_attr");
}

int MPI_Win_delete_attr(MPI_Win win, int win_keyval)
{
    MP_LOCKED(PMPI_Win_delete_attr, (win, win_keyval));
    MP_CHECK_INIT("MPI_Win_delete_attr");
    if (!mp_win_ok(win))
        return mp_err(MPI_COMM_NULL, MPI_ERR_WIN, "MPI_Win_delete_attr");
    return mp_win_err(win, attr_delete(&win->attrs, win, K_WIN, win_keyval),
                      "MPI_Win_delete_attr");
}

/* MPI_WIN_BASE's value is the base address itself; the others point to a
   value kept in the window. */
int MPI_Win_get_attr(MPI_Win win, int win_keyval, void *attribute_val, int *flag)
{
    MP_LOCKED(PMPI_Win_get_attr, (win, win_keyval, attribute_val, flag));
    MP_CHECK_INIT("MPI_Win_get_attr");
    if (!mp_win_ok(win))
        return mp_err(MPI_COMM_NULL, MPI_ERR_WIN, "MPI_Win_get_attr");
    if (!attribute_val || !flag)
        return mp_win_err(win, MPI_ERR_ARG, "MPI_Win_get_attr");
    *flag = 1;
    switch (win_keyval) {
    case MPI_WIN_BASE:
        *(void **)attribute_val = win->dynamic ? MPI_BOTTOM : win->base;
        return MPI_SUCCESS;
    case MPI_WIN_SIZE:
        win->attr_size = win->dynamic ? 0 : (MPI_Aint)win->size;
        *(MPI_Aint **)attribute_val = &win->attr_size;
        return MPI_SUCCESS;
    case MPI_WIN_DISP_UNIT:
        *(int **)attribute_val = &win->disp_unit;
        return MPI_SUCCESS;
    case MPI_WIN_CREATE_FLAVOR:
        win->attr_flavor = win->dynamic     ? MPI_WIN_FLAVOR_DYNAMIC
                           : win->shm       ? MPI_WIN_FLAVOR_SHARED
                           : win->allocated ? MPI_WIN_FLAVOR_ALLOCATE
                                            : MPI_WIN_FLAVOR_CREATE;
        *(int **)attribute_val = &win->attr_flavor;
        return MPI_SUCCESS;
    case MPI_WIN_MODEL: {
        /* one copy of the memory: puts land in it, loads read it */
        static int unified = MPI_WIN_UNIFIED;
        *(int **)attribute_val = &unified;
        return MPI_SUCCESS;
    }
    }
    if (!key_of(win_keyval, K_WIN))
        return mp_win_err(win, MPI_ERR_KEYVAL, "MPI_Win_get_attr");
    return attr_get(win->attrs, win_keyval, attribute_val, flag);
}

void mp_attr_fini(void)
{
    free(keys);
    keys = NULL;
    nkeys = 0;
}

MP_PROFILED(MPI_Comm_create_keyval);
MP_PROFILED(MPI_Comm_free_keyval);
MP_PROFILED(MPI_Comm_set_attr);
MP_PROFILED(MPI_Comm_get_attr);
MP_PROFILED(MPI_Comm_delete_attr);
MP_PROFILED(MPI_Win_create_keyval);
MP_PROFILED(MPI_Win_free_keyval);
MP_PROFILED(MPI_Win_set_attr);
MP_PROFILED(MPI_Win_get_attr);
MP_PROFILED(MPI_Win_delete_attr);

/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Attributes: the program's keys on communicators and windows, their copy
 * and delete functions (on duplicate, replace, delete, free, and
 * MPI_COMM_SELF's at MPI_Finalize), the predefined keys' values, and bad
 * keys answering MPI_ERR_KEYVAL.
 */
#include <string.h>

#include "mpi_check.h"

static int rank, size;
static int copies, deletes, last_deleted;
static int self_cleaned; /* set by MPI_COMM_SELF's delete function in MPI_Finalize */

/* Copies a value into the duplicate as value + 1000 (so a test can tell
   original from copy); extra_state counts the calls. */
static int copy_plus(MPI_Comm old, int key, void *extra, void *in, void *out, int *flag)
{
    (void)old, (void)key;
    ++*(int *)extra;
    copies++;
    *(void **)out = (void *)((char *)in + 1000);
    *flag = 1;
    return MPI_SUCCESS;
}

static int count_delete(MPI_Comm c, int key, void *value, void *extra)
{
    (void)c, (void)key, (void)extra;
    deletes++;
    last_deleted = (int)(long)value;
    return MPI_SUCCESS;
}

static int refusing = 1;
static int refuse_delete(MPI_Comm c, int key, void *value, void *extra)
{
    (void)c, (void)key, (void)value, (void)extra;
    return refusing ? MPI_ERR_OTHER : MPI_SUCCESS;
}

/* Runs inside MPI_Finalize: MPI may still be called. */
static int self_delete(MPI_Comm c, int key, void *value, void *extra)
{
    (void)key, (void)extra;
    int n = 0;
    CHECK(c == MPI_COMM_SELF && (long)value == 7);
    OK(MPI_Comm_size(MPI_COMM_WORLD, &n));
    self_cleaned = n == size;
    return MPI_SUCCESS;
}

static int win_deletes;
static int win_delete(MPI_Win w, int key, void *value, void *extra)
{
    (void)w, (void)key, (void)value, (void)extra;
    win_deletes++;
    return MPI_SUCCESS;
}

static void predefined(void)
{
    int *v, flag;
    OK(MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &v, &flag));
    CHECK(flag && *v == 0x7fffffff);
    OK(MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_UNIVERSE_SIZE, &v, &flag));
    CHECK(flag && *v == size);
    OK(MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_APPNUM, &v, &flag));
    CHECK(flag && *v == 0);
    OK(MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_HOST, &v, &flag));
    CHECK(flag && *v == MPI_PROC_NULL);
    OK(MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_IO, &v, &flag));
    CHECK(flag && *v == MPI_ANY_SOURCE);
    OK(MPI_Comm_get_attr(MPI_COMM_SELF, MPI_LASTUSEDCODE, &v, &flag));
    CHECK(flag && *v == MPI_ERR_LASTCODE);
    CHECK(MPI_Comm_get_attr(MPI_COMM_WORLD, 4711, &v, &flag) == MPI_ERR_KEYVAL);
}

static void comm_keys(void)
{
    int calls = 0, key, plain;
    OK(MPI_Comm_create_keyval(copy_plus, count_delete, &key, &calls));
    OK(MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, MPI_COMM_NULL_DELETE_FN, &plain,
                              NULL));
    CHECK(key != plain && key != MPI_KEYVAL_INVALID);
    MPI_Comm c;
    OK(MPI_Comm_dup(MPI_COMM_WORLD, &c));
    void *got;
    int flag;
    OK(MPI_Comm_get_attr(c, key, &got, &flag));
    CHECK(!flag); /* nothing set yet */
    OK(MPI_Comm_set_attr(c, key, (void *)5L));
    OK(MPI_Comm_set_attr(c, plain, (void *)6L));
    OK(MPI_Comm_get_attr(c, key, &got, &flag));
    CHECK(flag && got == (void *)5L);
    OK(MPI_Comm_set_attr(c, key, (void *)8L)); /* replaced: 5 deleted */
    CHECK(deletes == 1 && last_deleted == 5);

    /* a duplicate: key's copy function gives 1008; plain's copies nothing */
    MPI_Comm d;
    OK(MPI_Comm_dup(c, &d));
    CHECK(copies == 1 && calls == 1);
    OK(MPI_Comm_get_attr(d, key, &got, &flag));
    CHECK(flag && got == (void *)1008L);
    OK(MPI_Comm_get_attr(d, plain, &got, &flag));
    CHECK(!flag);
    OK(MPI_Comm_get_attr(c, key, &got, &flag)); /* the original keeps its own */
    CHECK(flag && got == (void *)8L);

    /* delete, then free: each value's delete function runs once */
    OK(MPI_Comm_delete_attr(c, key));
    CHECK(deletes == 2 && last_deleted == 8);
    CHECK(MPI_Comm_delete_attr(c, key) == MPI_ERR_KEYVAL); /* nothing there now */
    OK(MPI_Comm_free(&c));
    CHECK(deletes == 2);            /* plain's delete function is the null one */
    OK(MPI_Comm_free_keyval(&key)); /* d still has a value under it */
    CHECK(key == MPI_KEYVAL_INVALID);
    OK(MPI_Comm_free(&d));
    CHECK(deletes == 3 && last_deleted == 1008);
    OK(MPI_Comm_free_keyval(&plain));

    /* a delete function that refuses stops MPI_Comm_free */
    int stubborn;
    OK(MPI_Comm_create_keyval(MPI_COMM_DUP_FN, refuse_delete, &stubborn, NULL));
    OK(MPI_Comm_dup(MPI_COMM_WORLD, &c));
    OK(MPI_Comm_set_attr(c, stubborn, (void *)1L));
    OK(MPI_Comm_dup(c, &d)); /* MPI_COMM_DUP_FN: the same value */
    OK(MPI_Comm_get_attr(d, stubborn, &got, &flag));
    CHECK(flag && got == (void *)1L);
    CHECK(MPI_Comm_free(&c) == MPI_ERR_OTHER);
    CHECK(c != MPI_COMM_NULL);
    CHECK(MPI_Comm_delete_attr(d, stubborn) == MPI_ERR_OTHER);
    OK(MPI_Comm_free_keyval(&stubborn));
    refusing = 0; /* now both go */
    OK(MPI_Comm_free(&c));
    OK(MPI_Comm_free(&d));

    /* bad keys */
    int freed = -1;
    CHECK(MPI_Comm_set_attr(MPI_COMM_WORLD, 4711, NULL) == MPI_ERR_KEYVAL);
    CHECK(MPI_Comm_free_keyval(&freed) == MPI_ERR_KEYVAL);
    int wkey;
    OK(MPI_Win_create_keyval(MPI_WIN_NULL_COPY_FN, MPI_WIN_NULL_DELETE_FN, &wkey, NULL));
    CHECK(MPI_Comm_set_attr(MPI_COMM_WORLD, wkey, NULL) ==
          MPI_ERR_KEYVAL); /* a window's */
    OK(MPI_Win_free_keyval(&wkey));
}

static void windows(void)
{
    int cells[4] = {0};
    MPI_Win w;
    OK(MPI_Win_create(cells, sizeof cells, sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD,
                      &w));
    void *base;
    MPI_Aint *wsize;
    int *unit, *flavor, *model, flag;
    OK(MPI_Win_get_attr(w, MPI_WIN_BASE, &base, &flag));
    CHECK(flag && base == cells);
    OK(MPI_Win_get_attr(w, MPI_WIN_SIZE, &wsize, &flag));
    CHECK(flag && *wsize == (MPI_Aint)sizeof cells);
    OK(MPI_Win_get_attr(w, MPI_WIN_DISP_UNIT, &unit, &flag));
    CHECK(flag && *unit == (int)sizeof(int));
    OK(MPI_Win_get_attr(w, MPI_WIN_CREATE_FLAVOR, &flavor, &flag));
    CHECK(flag && *flavor == MPI_WIN_FLAVOR_CREATE);
    OK(MPI_Win_get_attr(w, MPI_WIN_MODEL, &model, &flag));
    CHECK(flag && *model == MPI_WIN_UNIFIED);
    int key;
    OK(MPI_Win_create_keyval(MPI_WIN_DUP_FN, win_delete, &key, NULL));
    OK(MPI_Win_set_attr(w, key, (void *)3L));
    void *got;
    OK(MPI_Win_get_attr(w, key, &got, &flag));
    CHECK(flag && got == (void *)3L);
    OK(MPI_Win_free(&w));
    CHECK(win_deletes == 1);
    OK(MPI_Win_free_keyval(&key));

    void *mem;
    OK(MPI_Win_allocate(64, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &mem, &w));
    OK(MPI_Win_get_attr(w, MPI_WIN_CREATE_FLAVOR, &flavor, &flag));
    CHECK(*flavor == MPI_WIN_FLAVOR_ALLOCATE);
    OK(MPI_Win_get_attr(w, MPI_WIN_BASE, &base, &flag));
    CHECK(base == mem);
    OK(MPI_Win_free(&w));
    OK(MPI_Win_create_dynamic(MPI_INFO_NULL, MPI_COMM_WORLD, &w));
    OK(MPI_Win_get_attr(w, MPI_WIN_CREATE_FLAVOR, &flavor, &flag));
    CHECK(*flavor == MPI_WIN_FLAVOR_DYNAMIC);
    OK(MPI_Win_get_attr(w, MPI_WIN_SIZE, &wsize, &flag));
    CHECK(*wsize == 0);
    OK(MPI_Win_free(&w));
}

int main(int argc, char **argv)
{
    OK(MPI_Init(&argc, &argv));
    OK(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
    OK(MPI_Comm_size(MPI_COMM_WORLD, &size));
    OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    predefined();
    comm_keys();
    windows();
    int key;
    OK(MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, self_delete, &key, NULL));
    OK(MPI_Comm_set_attr(MPI_COMM_SELF, key, (void *)7L));
    OK(MPI_Finalize());
    CHECK(self_cleaned); /* MPI_Finalize ran MPI_COMM_SELF's delete function */
    if (rank == 0)
        printf("mpi_attr: %d ranks OK\n", size);
    return 0;
}

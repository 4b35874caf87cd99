/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Info objects (MPI 3.1, 9): an ordered list of (key, value) strings a
 * program hands to calls that take hints, and memory from MPI_Alloc_mem.
 * flit-mpi reads no hint yet: every call that takes an info accepts any
 * (MPI lets an implementation ignore hints), so programs that pass them
 * run unchanged.
 */
#include <stdlib.h>
#include <string.h>

#include "mpi_internal.h"

typedef struct entry {
    char *key, *value;
} entry;

struct flit_mpi_info {
    int n, cap;
    entry *e;
};

static int fail(int code, const char *fn)
{
    return mp_err(MPI_COMM_NULL, code, fn);
}

/* A key MPI accepts: 1 .. MPI_MAX_INFO_KEY - 1 characters. */
static int key_ok(const char *key)
{
    return key && key[0] && strnlen(key, MPI_MAX_INFO_KEY) < MPI_MAX_INFO_KEY;
}

static int find(MPI_Info info, const char *key)
{
    for (int i = 0; i < info->n; i++)
        if (strcmp(info->e[i].key, key) == 0)
            return i;
    return -1;
}

int MPI_Info_create(MPI_Info *info)
{
    MP_LOCKED(PMPI_Info_create, (info));
    if (!info)
        return fail(MPI_ERR_ARG, "MPI_Info_create");
    if (!(*info = calloc(1, sizeof **info)))
        return fail(MPI_ERR_NO_MEM, "MPI_Info_create");
    return MPI_SUCCESS;
}

int MPI_Info_set(MPI_Info info, const char *key, const char *value)
{
    MP_LOCKED(PMPI_Info_set, (info, key, value));
    static const char fn[] = "MPI_Info_set";
    if (info == MPI_INFO_NULL)
        return fail(MPI_ERR_INFO, fn);
    if (!key_ok(key))
        return fail(MPI_ERR_INFO_KEY, fn);
    if (!value || !value[0] || strnlen(value, MPI_MAX_INFO_VAL) >= MPI_MAX_INFO_VAL)
        return fail(MPI_ERR_INFO_VALUE, fn);
    char *v = strdup(value);
    if (!v)
        return fail(MPI_ERR_NO_MEM, fn);
    int i = find(info, key);
    if (i >= 0) {
        free(info->e[i].value);
        info->e[i].value = v;
        return MPI_SUCCESS;
    }
    if (info->n == info->cap) {
        int cap = info->cap ? 2 * info->cap : 8;
        entry *e = realloc(info->e, (size_t)cap * sizeof *e);
        if (!e) {
            free(v);
            return fail(MPI_ERR_NO_MEM, fn);
        }
        info->e = e, info->cap = cap;
    }
    char *k = strdup(key);
    if (!k) {
        free(v);
        return fail(MPI_ERR_NO_MEM, fn);
    }
    info->e[info->n++] = (entry){k, v};
    return MPI_SUCCESS;
}

int MPI_Info_delete(MPI_Info info, const char *key)
{
    MP_LOCKED(PMPI_Info_delete, (info, key));
    if (info == MPI_INFO_NULL)
        return fail(MPI_ERR_INFO, "MPI_Info_delete");
    if (!key_ok(key))
        return fail(MPI_ERR_INFO_KEY, "MPI_Info_delete");
    int i = find(info, key);
    if (i < 0)
        return fail(MPI_ERR_INFO_NOKEY, "MPI_Info_delete");
    free(info->e[i].key);
    free(info->e[i].value);
    memmove(&info->e[i], &info->e[i + 1], (size_t)(info->n - i - 1) * sizeof *info->e);
    info->n--;
    return MPI_SUCCESS;
}

/* Up to valuelen characters of the value, and a terminating 0. */
int MPI_Info_get(MPI_Info info, const char *key, int valuelen, char *value, int *flag)
{
    MP_LOCKED(PMPI_Info_get, (info, key, valuelen, value, flag));
    if (info == MPI_INFO_NULL)
        return fail(MPI_ERR_INFO, "MPI_Info_get");
    if (!key_ok(key))
        return fail(MPI_ERR_INFO_KEY, "MPI_Info_get");
    if (!flag || !value || valuelen < 0)
        return fail(MPI_ERR_ARG, "MPI_Info_get");
    int i = find(info, key);
    *flag = i >= 0;
    if (i >= 0) {
        size_t n = strnlen(info->e[i].value, (size_t)valuelen);
        memcpy(value, info->e[i].value, n);
        value[n] = 0;
    }
    return MPI_SUCCESS;
}

int MPI_Info_get_valuelen(MPI_Info info, const char *key, int *valuelen, int *flag)
{
    MP_LOCKED(PMPI_Info_get_valuelen, (info, key, valuelen, flag));
    if (info == MPI_INFO_NULL)
        return fail(MPI_ERR_INFO, "MPI_Info_get_valuelen");
    if (!key_ok(key))
        return fail(MPI_ERR_INFO_KEY, "MPI_Info_get_valuelen");
    if (!valuelen || !flag)
        return fail(MPI_ERR_ARG, "MPI_Info_get_valuelen");
    int i = find(info, key);
    *flag = i >= 0;
    if (i >= 0)
        *valuelen = (int)strlen(info->e[i].value);
    return MPI_SUCCESS;
}

int MPI_Info_get_nkeys(MPI_Info info, int *nkeys)
{
    MP_LOCKED(PMPI_Info_get_nkeys, (info, nkeys));
    if (info == MPI_INFO_NULL)
        return fail(MPI_ERR_INFO, "MPI_Info_get_nkeys");
    if (!nkeys)
        return fail(MPI_ERR_ARG, "MPI_Info_get_nkeys");
    *nkeys = info->n;
    return MPI_SUCCESS;
}

int MPI_Info_get_nthkey(MPI_Info info, int n, char *key)
{
    MP_LOCKED(PMPI_Info_get_nthkey, (info, n, key));
    if (info == MPI_INFO_NULL)
        return fail(MPI_ERR_INFO, "MPI_Info_get_nthkey");
    if (!key || n < 0 || n >= info->n)
        return fail(MPI_ERR_ARG, "MPI_Info_get_nthkey");
    strcpy(key, info->e[n].key); /* shorter than MPI_MAX_INFO_KEY (key_ok) */
    return MPI_SUCCESS;
}

int MPI_Info_dup(MPI_Info info, MPI_Info *newinfo)
{
    MP_LOCKED(PMPI_Info_dup, (info, newinfo));
    if (info == MPI_INFO_NULL)
        return fail(MPI_ERR_INFO, "MPI_Info_dup");
    if (!newinfo)
        return fail(MPI_ERR_ARG, "MPI_Info_dup");
    int rc = PMPI_Info_create(newinfo);
    for (int i = 0; !rc && i < info->n; i++)
        rc = PMPI_Info_set(*newinfo, info->e[i].key, info->e[i].value);
    if (rc && *newinfo)
        PMPI_Info_free(newinfo);
    return rc;
}

int MPI_Info_free(MPI_Info *info)
{
    MP_LOCKED(PMPI_Info_free, (info));
    if (!info || *info == MPI_INFO_NULL)
        return fail(MPI_ERR_INFO, "MPI_Info_free");
    for (int i = 0; i < (*info)->n; i++) {
        free((*info)->e[i].key);
        free((*info)->e[i].value);
    }
    free((*info)->e);
    free(*info);
    *info = MPI_INFO_NULL;
    return MPI_SUCCESS;
}

/* Memory for messages and windows: ordinary memory (flit needs no
   registration), aligned for any type. */
int MPI_Alloc_mem(MPI_Aint size, MPI_Info info, void *baseptr)
{
    MP_LOCKED(PMPI_Alloc_mem, (size, info, baseptr));
    (void)info;
    if (size < 0 || !baseptr)
        return fail(MPI_ERR_ARG, "MPI_Alloc_mem");
    void *p = NULL;
    if (posix_memalign(&p, 64, size ? (size_t)size : 1) != 0)
        return fail(MPI_ERR_NO_MEM, "MPI_Alloc_mem");
    memcpy(baseptr, &p, sizeof p);
    return MPI_SUCCESS;
}

int MPI_Free_mem(void *base)
{
    MP_LOCKED(PMPI_Free_mem, (base));
    free(base);
    return MPI_SUCCESS;
}

MP_PROFILED(MPI_Info_create);
MP_PROFILED(MPI_Info_set);
MP_PROFILED(MPI_Info_delete);
MP_PROFILED(MPI_Info_get);
MP_PROFILED(MPI_Info_get_valuelen);
MP_PROFILED(MPI_Info_get_nkeys);
MP_PROFILED(MPI_Info_get_nthkey);
MP_PROFILED(MPI_Info_dup);
MP_PROFILED(MPI_Info_free);
MP_PROFILED(MPI_Alloc_mem);
MP_PROFILED(MPI_Free_mem);

/* SPDX-License-Identifier: BSD-3-Clause */
/* Loading libfabric at first use (api.h). */
#include "transport/ofi/api.h"

#include <dlfcn.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>

#include "util/log.h"

struct fl_ofi_api fl_ofi;

static flit_status loaded = FLIT_ERR_NOT_SUPPORTED;

/* The signals whose handlers a library's constructor may take. */
static const int fatal[] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT};
#define NFATAL (sizeof fatal / sizeof fatal[0])

/* Resolves what flit calls; false when one is missing. */
static bool resolve(void *h)
{
    fl_ofi.getinfo =
        (int (*)(uint32_t, const char *, const char *, uint64_t, const struct fi_info *,
                 struct fi_info **))dlsym(h, "fi_getinfo");
    fl_ofi.freeinfo = (void (*)(struct fi_info *))dlsym(h, "fi_freeinfo");
    fl_ofi.dupinfo =
        (struct fi_info * (*)(const struct fi_info *)) dlsym(h, "fi_dupinfo");
    fl_ofi.fabric = (int (*)(struct fi_fabric_attr *, struct fid_fabric **, void *))dlsym(
        h, "fi_fabric");
    fl_ofi.strerror = (const char *(*)(int))dlsym(h, "fi_strerror");
    return fl_ofi.getinfo && fl_ofi.freeinfo && fl_ofi.dupinfo && fl_ofi.fabric &&
           fl_ofi.strerror;
}

static void load_once(void)
{
    struct sigaction keep[NFATAL];
    for (unsigned i = 0; i < NFATAL; i++)
        sigaction(fatal[i], NULL, &keep[i]);
    void *h = dlopen("libfabric.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!h)
        fl_warn("ofi: cannot load libfabric (Debian: libfabric1): %s", dlerror());
    else if (!resolve(h))
        fl_warn("ofi: libfabric.so.1 lacks a function flit calls: %s", dlerror());
    else {
        /* The first fi_getinfo loads the providers (and what they link):
           under the same watch. */
        struct fi_info *all = NULL;
        if (fl_ofi.getinfo(FI_VERSION(1, 9), NULL, NULL, 0, NULL, &all) == 0)
            fl_ofi.freeinfo(all);
        loaded = FLIT_OK;
    }
    for (unsigned i = 0; i < NFATAL; i++)
        sigaction(fatal[i], &keep[i], NULL);
}

flit_status fl_ofi_load(void)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, load_once);
    return loaded;
}

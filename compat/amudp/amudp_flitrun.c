/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Which flitrun the master starts its workers with (`prog NPROCS [L|S|C]
 * args`, or AMUDP_SPMDStartup with no launcher around it), in this order:
 *
 *  1. $AMUDP_FLITRUN, when set and not empty. An explicit choice wins: it
 *     is the only way to pick another flitrun (a wrapper, a debugging
 *     build, one at another path on the hosts of an ssh spawn) once the
 *     library finds its own, and a choice that does not work is said as
 *     such (the master names it when it cannot run it) rather than passed
 *     over for another flitrun.
 *  2. The flitrun installed beside this library: the library finds the
 *     directory it was loaded from (dladdr) and looks at bin/flitrun of
 *     the same tree (FLIT_AMUDP_LIB_TO_FLITRUN, from the configured
 *     directories: ../bin/flitrun for lib/), the way the installed tools
 *     find their library through an $ORIGIN-relative RUNPATH. So a tree
 *     installed with another prefix than the configured one, or moved,
 *     still starts its workers. In the build tree, the library built there
 *     finds the flitrun built there.
 *  3. flitrun on $PATH.
 */
#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "amudp_internal.h"

#ifndef FLIT_AMUDP_LIB_TO_FLITRUN
#define FLIT_AMUDP_LIB_TO_FLITRUN "../bin/flitrun"
#endif

static const char anchor; /* an address inside this library, for dladdr */

/* The directory this library was loaded from, as the loader named it
   (resolved 0) or with every link resolved (1); 0 when unknown. */
static int library_dir(char *dir, size_t cap, int resolved)
{
    Dl_info info;
    char real[PATH_MAX];
    if (!dladdr(&anchor, &info) || !info.dli_fname || !info.dli_fname[0])
        return 0;
    const char *file = info.dli_fname;
    if (resolved) {
        if (!realpath(file, real))
            return 0;
        file = real;
    }
    const char *slash = strrchr(file, '/');
    size_t len = slash ? (size_t)(slash - file) : 0;
    if (!slash || len + 1 > cap)
        return 0;
    memcpy(dir, file, len);
    dir[len] = 0;
    return 1;
}

/* dir/rel (rel when absolute) into out, when it is an executable file. */
static int executable_at(char *out, size_t cap, const char *dir, const char *rel)
{
    int n = rel[0] == '/' ? snprintf(out, cap, "%s", rel)
                          : snprintf(out, cap, "%s/%s", dir, rel);
    return n > 0 && (size_t)n < cap && access(out, X_OK) == 0;
}

/* The flitrun beside this library, installed or in the build tree. */
static int flitrun_beside(char *out, size_t cap)
{
    char dir[PATH_MAX];
    for (int resolved = 0; resolved < 2; resolved++) {
        if (!library_dir(dir, sizeof dir, resolved))
            continue;
        if (executable_at(out, cap, dir, FLIT_AMUDP_LIB_TO_FLITRUN))
            return 1;
#if defined(FLIT_AMUDP_BUILD_LIBDIR) && defined(FLIT_AMUDP_BUILD_FLITRUN)
        if (strcmp(dir, FLIT_AMUDP_BUILD_LIBDIR) == 0 &&
            executable_at(out, cap, dir, FLIT_AMUDP_BUILD_FLITRUN))
            return 1;
#endif
    }
    return 0;
}

const char *amx_flitrun_path(void)
{
    static char path[PATH_MAX];
    const char *env = getenv("AMUDP_FLITRUN");
    if (env && *env)
        return env;
    if (flitrun_beside(path, sizeof path))
        return path;
    return "flitrun"; /* execvp looks along $PATH */
}

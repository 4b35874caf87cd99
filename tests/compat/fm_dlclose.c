/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A program that loads the FM library with dlopen, starts FM, unloads the
 * library and exits 0 without FM_finalize: the exit handler FM registered
 * (it ends FM and flit at exit) must still be there to run, not a jump into
 * unmapped memory. Also for VMMC (VMMC_Init) and AMUDP (AM_Init).
 *
 *   fm_dlclose LIBRARY INIT_FUNCTION
 */
#include <dlfcn.h>
#include <stdio.h>

/* Not test.h's checks: they call flit, which this program does not link. */
#define CHECK(cond)                                                                      \
    do {                                                                                 \
        if (!(cond)) {                                                                   \
            fprintf(stderr, "%s:%d: %s failed\n", __FILE__, __LINE__, #cond);            \
            return 1;                                                                    \
        }                                                                                \
    } while (0)

int main(int argc, char **argv)
{
    CHECK(argc == 3);
    void *lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    CHECK(lib != NULL);
    int (*init)(void) = (int (*)(void))dlsym(lib, argv[2]);
    CHECK(init != NULL);
    CHECK(init() == 0); /* FM_SUCCESS, VMMC_SUCCESS, AM_OK */
    CHECK(dlclose(lib) == 0);
    printf("%s: %s, unloaded, exiting 0\n", argv[1], argv[2]);
    return 0;
}

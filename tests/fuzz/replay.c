/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * main() for a fuzz target built without libFuzzer: runs the target once
 * on every input named on the command line, a file or every file of a
 * directory (in name order). "-o DIR" names a directory that may be
 * missing (a target's regress/ directory before anything was saved there).
 * Exit 0 when every input ran; a broken property aborts.
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fuzz.h"

static int run_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "replay: %s: %s\n", path, strerror(errno));
        return -1;
    }
    size_t cap = 1 << 16, len = 0;
    uint8_t *buf = malloc(cap);
    size_t n;
    while (buf && (n = fread(buf + len, 1, cap - len, f)) > 0) {
        len += n;
        if (len == cap)
            buf = realloc(buf, cap *= 2);
    }
    fclose(f);
    if (!buf) {
        fprintf(stderr, "replay: out of memory reading %s\n", path);
        return -1;
    }
    /* An exact copy: reads past the input's end show under AddressSanitizer. */
    uint8_t *exact = malloc(len ? len : 1);
    if (!exact) {
        free(buf);
        return -1;
    }
    memcpy(exact, buf, len);
    free(buf);
    LLVMFuzzerTestOneInput(exact, len);
    free(exact);
    return 0;
}

static int by_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Runs every regular file in dir; returns how many, or -1. */
static long run_dir(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d)
        return -1;
    char **names = NULL;
    size_t n = 0, cap = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.')
            continue;
        if (n == cap) {
            cap = cap ? 2 * cap : 64;
            char **more = realloc(names, cap * sizeof *names);
            if (!more)
                break;
            names = more;
        }
        size_t len = strlen(dir) + strlen(e->d_name) + 2;
        names[n] = malloc(len);
        if (!names[n])
            break;
        snprintf(names[n], len, "%s/%s", dir, e->d_name);
        n++;
    }
    closedir(d);
    if (n > 1)
        qsort(names, n, sizeof *names, by_name);
    long ran = 0;
    for (size_t i = 0; i < n; i++) {
        struct stat st;
        if (stat(names[i], &st) == 0 && S_ISREG(st.st_mode)) {
            fprintf(stderr, "replay: %s\n", names[i]);
            if (run_file(names[i]) == 0)
                ran++;
            else
                ran = -1000000;
        }
        free(names[i]);
    }
    free(names);
    return ran;
}

int main(int argc, char **argv)
{
    long total = 0;
    for (int i = 1; i < argc; i++) {
        int optional = strcmp(argv[i], "-o") == 0 && i + 1 < argc;
        const char *path = optional ? argv[++i] : argv[i];
        struct stat st;
        if (stat(path, &st) != 0) {
            if (optional)
                continue;
            fprintf(stderr, "replay: %s: %s\n", path, strerror(errno));
            return 1;
        }
        long n = S_ISDIR(st.st_mode) ? run_dir(path) : run_file(path) == 0 ? 1 : -1;
        if (n < 0) {
            fprintf(stderr, "replay: cannot read every input of %s\n", path);
            return 1;
        }
        total += n;
    }
    if (total == 0) {
        fprintf(stderr, "replay: no input found\n");
        return 1;
    }
    printf("replay: %ld inputs ran\n", total);
    return 0;
}

/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * flitrun's host lists from elsewhere (tools/flitrun/alloc.c): Slurm's
 * bracket node lists, its per-node counts, and hostfiles. Table-driven:
 * every accepted input with the exact result, every refused one with -1
 * and a message.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "alloc.h"

static int failed;

#define EXPECT(cond, ...)                                                                \
    do {                                                                                 \
        if (!(cond)) {                                                                   \
            printf("FAILED %s:%d: ", __FILE__, __LINE__);                                \
            printf(__VA_ARGS__);                                                         \
            printf("\n");                                                                \
            failed = 1;                                                                  \
        }                                                                                \
    } while (0)

/* want: the names joined by ' ', or NULL when the list must be refused. */
static void nodelist(const char *list, uint32_t max, const char *want)
{
    char out[4096], why[256] = "", joined[4096] = "";
    uint32_t n = 0;
    int rc = fr_nodelist_expand(list, out, sizeof out, max, &n, why, sizeof why);
    if (!want) {
        EXPECT(rc == -1 && why[0], "'%s' accepted (%u names)", list, n);
        return;
    }
    size_t at = 0;
    const char *p = out;
    for (uint32_t i = 0; rc == 0 && i < n; i++, p += strlen(p) + 1)
        at += (size_t)snprintf(joined + at, sizeof joined - at, "%s%s", i ? " " : "", p);
    EXPECT(rc == 0 && strcmp(joined, want) == 0, "'%s' -> rc %d '%s' (%s), expected '%s'",
           list, rc, joined, why, want);
}

static void counts(const char *spec, uint32_t n, const uint32_t *want)
{
    uint32_t got[16] = {0};
    char why[256] = "";
    int rc = fr_node_counts(spec, got, n, why, sizeof why);
    if (!want) {
        EXPECT(rc == -1 && why[0], "counts '%s' for %u nodes accepted", spec, n);
        return;
    }
    EXPECT(rc == 0 && memcmp(got, want, n * sizeof *want) == 0, "counts '%s': rc %d (%s)",
           spec, rc, why);
}

static void hostfile(const char *text, const char *want)
{
    char path[] = "/tmp/flit_hostfile_XXXXXX", why[512] = "", *spec = NULL;
    int fd = mkstemp(path);
    EXPECT(fd >= 0 && write(fd, text, strlen(text)) == (ssize_t)strlen(text), "tmp");
    close(fd);
    int rc = fr_hostfile_read(path, &spec, why, sizeof why);
    unlink(path);
    if (!want)
        EXPECT(rc == -1 && !spec && strstr(why, path), "hostfile '%s' accepted: %s", text,
               spec);
    else
        EXPECT(rc == 0 && spec && strcmp(spec, want) == 0,
               "hostfile '%s' -> rc %d '%s' (%s), expected '%s'", text, rc,
               spec ? spec : "", why, want);
    free(spec);
}

int main(void)
{
    nodelist("vm", 64, "vm");
    nodelist("n[1-3]", 64, "n1 n2 n3");
    nodelist("n[1-3,07-08],login", 64, "n1 n2 n3 n07 n08 login");
    nodelist("n[098-101]", 64, "n098 n099 n100 n101");
    nodelist("r[1-2]n[1-2]", 64, "r1n1 r1n2 r2n1 r2n2");
    nodelist("a[1-2]-ib,b", 64, "a1-ib a2-ib b");
    nodelist("n[5]", 64, "n5");
    nodelist("[1-2]", 64, "1 2");
    nodelist("n[1-3]", 2, NULL);
    nodelist("", 64, NULL);
    nodelist("a,", 64, NULL);
    nodelist(",a", 64, NULL);
    nodelist("n[1-", 64, NULL);
    nodelist("n[3-1]", 64, NULL);
    nodelist("n[a-b]", 64, NULL);
    nodelist("n[1,]", 64, NULL);
    nodelist("n[]", 64, NULL);
    nodelist("n]1[", 64, NULL);
    nodelist("n[[1]]", 64, NULL);
    nodelist("n[1-2-3]", 64, NULL);

    counts("2(x3),1", 4, (const uint32_t[]){2, 2, 2, 1});
    counts("8", 1, (const uint32_t[]){8});
    counts("1,2,3", 3, (const uint32_t[]){1, 2, 3});
    counts("2(x3)", 2, NULL);
    counts("2(x3)", 4, NULL);
    counts("0", 1, NULL);
    counts("2(3)", 3, NULL);
    counts("2,", 1, NULL);
    counts("x", 1, NULL);
    counts("4097", 1, NULL);

    hostfile("a\nb\n", "a,b");
    hostfile("# the cluster\na slots=2\n\n  b slots=4  # big\nc\n", "a:2,b:4,c:1");
    hostfile("a slots=2", "a:2");
    hostfile("", NULL);
    hostfile("# nothing\n", NULL);
    hostfile("a slots=0\n", NULL);
    hostfile("a slots=x\n", NULL);
    hostfile("a slots=2 slots=3\n", NULL);
    hostfile("a cpus=2\n", NULL);
    char why[256];
    char *spec = NULL;
    EXPECT(fr_hostfile_read("/nonexistent/hosts", &spec, why, sizeof why) == -1 &&
               strstr(why, "cannot read the hostfile /nonexistent/hosts"),
           "a missing hostfile");
    printf("%s\n", failed ? "FAILED" : "ok: node lists, counts, hostfiles");
    return failed;
}

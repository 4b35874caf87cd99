/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * flitrun's jobs that span hosts: the host list (--hosts), where each rank
 * goes (--placement), the command that starts a rank on another host (ssh,
 * or a --launch template), and the address of flitrun's host that the
 * ranks are told to connect to.
 *
 * Everything here is pure bookkeeping or a lookup: no process is started,
 * no socket kept. Messages for the user come back in a caller's buffer.
 */
#ifndef FR_HOSTS_H
#define FR_HOSTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct fr_host {
    char *name;      /* as given: "node7", "user@node7", a namespace */
    uint32_t count;  /* from "name:count"; 0 when none was given */
    uint32_t nranks; /* placed here by fr_hosts_place */
    bool local;      /* flitrun's own host: no launcher needed */
};

struct fr_hosts {
    struct fr_host *host;
    uint32_t n;
    bool counted;   /* every host has a count */
    uint64_t slots; /* the sum of the counts, when counted */
};

enum fr_placement {
    FR_PLACE_BLOCK,       /* ranks 0..k-1 on the first host, ... */
    FR_PLACE_ROUND_ROBIN, /* rank r on host r mod n (counts permitting) */
};

/*
 * "a,b,c" or "a:2,b:2" (a count for every host or for none) -> *out.
 * Names: letters, digits and . _ - @, not starting with '-' (ssh would read
 * an option). 0, or -1 with why filled.
 */
int fr_hosts_parse(const char *spec, struct fr_hosts *out, char *why, size_t why_len);
void fr_hosts_free(struct fr_hosts *h);

/*
 * Places nranks ranks: host_of[r] is rank r's index in h, and each host's
 * nranks is set. With counts, a host takes at most its count; more ranks
 * than counts is an error (0, or -1 with why).
 */
int fr_hosts_place(struct fr_hosts *h, uint32_t nranks, enum fr_placement how,
                   uint32_t *host_of, char *why, size_t why_len);

/* localhost, 127.0.0.1, or this machine's host name (whole or short). */
bool fr_host_is_local(const char *name);

/* How a rank is started on another host. */
struct fr_launch {
    char **words; /* the template, split at blanks */
    size_t n;
    bool shell; /* ssh: the command is one word for a shell */
};

/*
 * tmpl NULL: ssh -o BatchMode=yes {host}. Otherwise split at blanks (no
 * quoting); it must name {host}. 0, or -1 with why filled.
 */
int fr_launch_parse(const char *tmpl, struct fr_launch *out, char *why, size_t why_len);
void fr_launch_free(struct fr_launch *l);

/* What runs on the other host. */
struct fr_launch_cmd {
    char *const *env;  /* the assignments, NULL-terminated */
    char *const *prog; /* the program and its arguments, NULL-terminated */
    const char *cwd;   /* where it runs (through a shell); NULL: anywhere */
    bool key_on_stdin; /* FLIT_JOB_KEY is the first line of stdin */
};

/*
 * The argv that starts prog on host: the template's words with {host}
 * replaced, then `env VAR=value... prog args`. Through a shell (ssh) those
 * words become one, each quoted for a POSIX shell, behind `cd CWD &&`.
 * With key_on_stdin, a shell first reads FLIT_JOB_KEY from stdin's first
 * line and exports it (the remote shell, or `sh -c` after the template's
 * words), so that the key is on no command line. One allocation,
 * NULL-terminated; free() it. NULL when out of memory.
 */
char **fr_launch_argv(const struct fr_launch *l, const char *host,
                      const struct fr_launch_cmd *cmd);

/*
 * An IPv4 address of this host (host order) that host can reach: the
 * source address of the route towards it. When host does not resolve (a
 * network namespace, a container name), the first interface that is up and
 * not loopback. 0 when there is neither; how says which way it was found.
 */
uint32_t fr_boot_ip(const char *host, char *how, size_t how_len);

#endif /* FR_HOSTS_H */

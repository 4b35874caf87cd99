/* SPDX-License-Identifier: BSD-3-Clause */
/* flitrun's host list, placement, launch commands and boot address; see hosts.h. */
#include "hosts.h"

#include "boot/proto.h"

#include <arpa/inet.h>
#include <errno.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define MAX_COUNT 4096u /* as flitrun's rank limit */
#define MAX_HOSTS 4096u
#define HOST_MARK "{host}"

static const char *const default_launch[] = {"ssh", "-o", "BatchMode=yes", HOST_MARK};

/* ---- the host list ---- */

static bool name_ok(const char *s, size_t len)
{
    static const char ok[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                             "0123456789._-@";
    /* s is a slice of a C string: strspn stops at its end at the latest */
    return len > 0 && s[0] != '-' && strspn(s, ok) >= len;
}

/* "123" -> 1..MAX_COUNT; digits only. */
static bool count_ok(const char *s, size_t len, uint32_t *out)
{
    uint32_t v = 0;
    if (len == 0 || len > 4)
        return false;
    for (size_t i = 0; i < len; i++) {
        if (s[i] < '0' || s[i] > '9')
            return false;
        v = v * 10 + (uint32_t)(s[i] - '0');
    }
    if (v < 1 || v > MAX_COUNT)
        return false;
    *out = v;
    return true;
}

/* One "name[:count]" of len bytes into h. */
static int parse_item(const char *item, size_t len, struct fr_host *h, char *why,
                      size_t why_len)
{
    const char *colon = memchr(item, ':', len);
    size_t nlen = colon ? (size_t)(colon - item) : len;
    if (!name_ok(item, nlen)) {
        snprintf(why, why_len,
                 "bad host name '%.*s' (letters, digits, . _ - @; "
                 "not starting with '-')",
                 (int)nlen, item);
        return -1;
    }
    if (colon && !count_ok(colon + 1, len - nlen - 1, &h->count)) {
        snprintf(why, why_len, "bad count in '%.*s' (a number of ranks from 1 to %u)",
                 (int)len, item, MAX_COUNT);
        return -1;
    }
    h->name = strndup(item, nlen);
    if (!h->name) {
        snprintf(why, why_len, "out of memory");
        return -1;
    }
    h->local = fr_host_is_local(h->name);
    return 0;
}

static uint32_t count_items(const char *spec)
{
    uint32_t n = 1;
    for (const char *p = spec; *p; p++)
        n += *p == ',';
    return n;
}

/* Counts for all or for none: "a:4,b" could mean b:1, b:4 or b:whatever. */
static int check_counts(struct fr_hosts *h, const char *spec, char *why, size_t why_len)
{
    uint32_t with = 0;
    for (uint32_t i = 0; i < h->n; i++) {
        with += h->host[i].count > 0;
        h->slots += h->host[i].count;
    }
    if (with > 0 && with < h->n) {
        snprintf(why, why_len, "give a count to every host in '%s' or to none", spec);
        return -1;
    }
    h->counted = with > 0;
    return 0;
}

int fr_hosts_parse(const char *spec, struct fr_hosts *out, char *why, size_t why_len)
{
    struct fr_hosts h = {0};
    if (!*spec) {
        snprintf(why, why_len, "the host list is empty");
        return -1;
    }
    uint32_t n = count_items(spec);
    if (n > MAX_HOSTS) {
        snprintf(why, why_len, "more than %u hosts", MAX_HOSTS);
        return -1;
    }
    h.host = calloc(n, sizeof *h.host);
    if (!h.host) {
        snprintf(why, why_len, "out of memory");
        return -1;
    }
    const char *p = spec;
    for (; h.n < n; h.n++) {
        size_t len = strcspn(p, ",");
        if (len == 0) {
            snprintf(why, why_len, "an empty host name in '%s'", spec);
            goto err_free;
        }
        if (parse_item(p, len, &h.host[h.n], why, why_len) != 0)
            goto err_free;
        p += len + (p[len] == ',');
    }
    if (check_counts(&h, spec, why, why_len) != 0)
        goto err_free;
    *out = h;
    return 0;

err_free:
    fr_hosts_free(&h);
    return -1;
}

void fr_hosts_free(struct fr_hosts *h)
{
    for (uint32_t i = 0; h->host && i < h->n; i++)
        free(h->host[i].name);
    free(h->host);
    memset(h, 0, sizeof *h);
}

/* ---- placement ---- */

/* Ranks per host in block order: the counts, or an even share (the first
   nranks mod n hosts take one more). */
static void block_shares(struct fr_hosts *h, uint32_t nranks)
{
    uint32_t left = nranks;
    for (uint32_t i = 0; i < h->n; i++) {
        uint32_t share =
            h->counted ? h->host[i].count : nranks / h->n + (i < nranks % h->n);
        h->host[i].nranks = share < left ? share : left;
        left -= h->host[i].nranks;
    }
}

static void place_block(struct fr_hosts *h, uint32_t nranks, uint32_t *host_of)
{
    block_shares(h, nranks);
    uint32_t r = 0;
    for (uint32_t i = 0; i < h->n; i++)
        for (uint32_t k = 0; k < h->host[i].nranks; k++)
            host_of[r++] = i;
}

/* Host after host, skipping the full ones; there is room (checked). */
static void place_round_robin(struct fr_hosts *h, uint32_t nranks, uint32_t *host_of)
{
    uint32_t i = 0;
    for (uint32_t r = 0; r < nranks; r++) {
        while (h->counted && h->host[i].nranks == h->host[i].count)
            i = (i + 1) % h->n;
        host_of[r] = i;
        h->host[i].nranks++;
        i = (i + 1) % h->n;
    }
}

int fr_hosts_place(struct fr_hosts *h, uint32_t nranks, enum fr_placement how,
                   uint32_t *host_of, char *why, size_t why_len)
{
    if (h->counted && nranks > h->slots) {
        snprintf(why, why_len, "%u ranks, but the host counts add up to %llu", nranks,
                 (unsigned long long)h->slots);
        return -1;
    }
    for (uint32_t i = 0; i < h->n; i++)
        h->host[i].nranks = 0;
    if (how == FR_PLACE_ROUND_ROBIN)
        place_round_robin(h, nranks, host_of);
    else
        place_block(h, nranks, host_of);
    return 0;
}

/* a equals b, or is b's first label ("node7" and "node7.cluster"). */
static bool same_host(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    if (la == lb)
        return strcmp(a, b) == 0;
    if (la > lb)
        return same_host(b, a);
    return strncmp(a, b, la) == 0 && b[la] == '.';
}

bool fr_host_is_local(const char *name)
{
    char self[256];
    if (strcmp(name, "localhost") == 0 || strcmp(name, "127.0.0.1") == 0)
        return true;
    if (gethostname(self, sizeof self) != 0)
        return false;
    self[sizeof self - 1] = '\0';
    return self[0] && same_host(name, self);
}

/* ---- launch commands ---- */

int fr_launch_parse(const char *tmpl, struct fr_launch *out, char *why, size_t why_len)
{
    struct fr_launch l = {0};
    size_t cap =
        tmpl ? strlen(tmpl) / 2 + 1 : sizeof default_launch / sizeof *default_launch;
    l.words = calloc(cap, sizeof *l.words);
    if (!l.words)
        goto err_memory;
    bool marked = false;
    if (!tmpl) {
        for (; l.n < cap; l.n++)
            if (!(l.words[l.n] = strdup(default_launch[l.n])))
                goto err_memory;
        marked = true;
    }
    for (const char *p = tmpl; p && *p;) {
        p += strspn(p, " \t\n");
        size_t len = strcspn(p, " \t\n");
        if (len == 0)
            break;
        if (!(l.words[l.n] = strndup(p, len)))
            goto err_memory;
        marked |= strstr(l.words[l.n++], HOST_MARK) != NULL;
        p += len;
    }
    if (!marked) {
        snprintf(why, why_len, "the --launch template '%s' has no %s", tmpl ? tmpl : "",
                 HOST_MARK);
        fr_launch_free(&l);
        return -1;
    }
    const char *base = strrchr(l.words[0], '/');
    l.shell = strcmp(base ? base + 1 : l.words[0], "ssh") == 0;
    *out = l;
    return 0;

err_memory:
    snprintf(why, why_len, "out of memory");
    fr_launch_free(&l);
    return -1;
}

void fr_launch_free(struct fr_launch *l)
{
    for (size_t i = 0; l->words && i < l->n; i++)
        free(l->words[i]);
    free(l->words);
    memset(l, 0, sizeof *l);
}

/* A growing string; err once any append failed. */
struct text {
    char *s;
    size_t len, cap;
    bool err;
};

static void text_add(struct text *t, const char *s, size_t len)
{
    if (t->err)
        return;
    if (t->len + len + 1 > t->cap) {
        size_t cap = (t->len + len + 1) * 2;
        char *p = realloc(t->s, cap);
        if (!p) {
            t->err = true;
            return;
        }
        t->s = p;
        t->cap = cap;
    }
    memcpy(t->s + t->len, s, len);
    t->len += len;
    t->s[t->len] = '\0';
}

static void text_str(struct text *t, const char *s)
{
    text_add(t, s, strlen(s));
}

/* 'word', with each ' as '\'': one word to any POSIX shell, whatever it holds. */
static void text_quoted(struct text *t, const char *s)
{
    text_add(t, "'", 1);
    for (const char *q; (q = strchr(s, '\'')); s = q + 1) {
        text_add(t, s, (size_t)(q - s));
        text_add(t, "'\\''", 4);
    }
    text_str(t, s);
    text_add(t, "'", 1);
}

/* The template word with every {host} replaced. */
static void text_template(struct text *t, const char *w, const char *host)
{
    for (const char *m; (m = strstr(w, HOST_MARK)); w = m + strlen(HOST_MARK)) {
        text_add(t, w, (size_t)(m - w));
        text_str(t, host);
    }
    text_str(t, w);
}

/* The shell's words that read FLIT_JOB_KEY from the first line of stdin: a
   secret on a command line is for anyone on either host to read in
   /proc/PID/cmdline; stdin is the launcher's own pipe. read takes one byte
   at a time from a pipe, so what follows the line stays the program's. */
#define READ_KEY "read -r " FL_ENV_JOB_KEY " && export " FL_ENV_JOB_KEY " && "

/* Without a remote shell: sh -c '<READ_KEY>exec "$@"' sh, then the command. */
static size_t key_reader_words(struct text *t)
{
    static const char *const words[] = {"sh", "-c", READ_KEY "exec \"$@\"", "sh"};
    for (size_t i = 0; i < sizeof words / sizeof *words; i++)
        text_add(t, words[i], strlen(words[i]) + 1);
    return sizeof words / sizeof *words;
}

/* Words go into t separated by NULs; returns how many. */
static size_t build_words(struct text *t, const struct fr_launch *l, const char *host,
                          const struct fr_launch_cmd *cmd)
{
    size_t n = 0;
    char *const *env = cmd->env, *const *prog = cmd->prog;
    for (size_t i = 0; i < l->n; i++, n++) {
        text_template(t, l->words[i], host);
        text_add(t, "", 1);
    }
    if (l->shell && cmd->cwd) {
        text_str(t, "cd ");
        text_quoted(t, cmd->cwd);
        text_str(t, " && ");
    }
    if (cmd->key_on_stdin && l->shell)
        text_str(t, READ_KEY);
    else if (cmd->key_on_stdin)
        n += key_reader_words(t);
    text_str(t, l->shell ? "exec env" : "env");
    for (int pass = 0; pass < 2; pass++) {
        for (char *const *w = pass ? prog : env; *w; w++) {
            if (!l->shell) {
                text_add(t, "", 1);
                text_str(t, *w);
                n++;
            } else {
                text_str(t, " ");
                text_quoted(t, *w);
            }
        }
    }
    text_add(t, "", 1);
    return n + 1;
}

char **fr_launch_argv(const struct fr_launch *l, const char *host,
                      const struct fr_launch_cmd *cmd)
{
    struct text t = {0};
    size_t n = build_words(&t, l, host, cmd);
    char **argv = t.err ? NULL : malloc((n + 1) * sizeof *argv + t.len);
    if (!argv) {
        free(t.s);
        return NULL;
    }
    char *strings = (char *)(argv + n + 1);
    memcpy(strings, t.s, t.len);
    free(t.s);
    for (size_t i = 0; i < n; i++) {
        argv[i] = strings;
        strings += strlen(strings) + 1;
    }
    argv[n] = NULL;
    return argv;
}

/* ---- the boot address ---- */

/* The source address of the route to host; 0 if it does not resolve. */
static uint32_t route_source(const char *host)
{
    struct addrinfo hints = {.ai_family = AF_INET, .ai_socktype = SOCK_DGRAM}, *res;
    if (getaddrinfo(host, "9", &hints, &res) != 0)
        return 0;
    uint32_t ip = 0;
    int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in self;
    socklen_t len = sizeof self;
    /* a datagram socket's connect only picks the route: nothing is sent */
    if (fd >= 0 && connect(fd, res->ai_addr, res->ai_addrlen) == 0 &&
        getsockname(fd, (struct sockaddr *)&self, &len) == 0)
        ip = ntohl(self.sin_addr.s_addr);
    if (fd >= 0)
        close(fd);
    freeaddrinfo(res);
    return ip;
}

/* The first interface that is up, not loopback, with an IPv4 address. */
static uint32_t first_interface(char *name, size_t name_len)
{
    struct ifaddrs *all;
    uint32_t ip = 0;
    if (getifaddrs(&all) != 0)
        return 0;
    for (struct ifaddrs *a = all; a && !ip; a = a->ifa_next) {
        if (!a->ifa_addr || a->ifa_addr->sa_family != AF_INET ||
            !(a->ifa_flags & IFF_UP) || (a->ifa_flags & IFF_LOOPBACK))
            continue;
        ip = ntohl(((struct sockaddr_in *)(void *)a->ifa_addr)->sin_addr.s_addr);
        snprintf(name, name_len, "%s", a->ifa_name);
    }
    freeifaddrs(all);
    return ip;
}

uint32_t fr_boot_ip(const char *host, char *how, size_t how_len)
{
    const char *at = strrchr(host, '@');
    const char *name = at ? at + 1 : host;
    uint32_t ip = route_source(name);
    if (ip) {
        snprintf(how, how_len, "on the route to %s", name);
        return ip;
    }
    char ifname[IF_NAMESIZE + 1] = "";
    ip = first_interface(ifname, sizeof ifname);
    if (ip)
        snprintf(how, how_len, "'%s' does not resolve: the first interface up, %s", name,
                 ifname);
    else
        snprintf(how, how_len,
                 "'%s' does not resolve, and no interface but loopback "
                 "is up",
                 name);
    return ip;
}

/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Under a launcher that offers PMI-2 over a file descriptor (Slurm's
 * srun --mpi=pmi2, MPICH's Hydra, Cray's PMI): rank and size come from the
 * launcher, and each allgather is puts into the job's key-value space, a
 * fence, and a get of every rank's keys.
 *
 * flit speaks the wire protocol itself (pmi2_wire.h) instead of linking a
 * libpmi2: it is a dozen text commands, the launcher defines it (Slurm's
 * plugin speaks it, whichever libpmi2 the program could link), and a
 * build with no extra dependency then starts under every PMI-2 launcher.
 *
 * Blobs are binary and values are text of at most FL_PMI2_VALLEN bytes:
 * rank r's blob of round R goes as hex in key "flit.R.r", after its length,
 * and when it is longer than one value holds, on in "flit.R.r.1", ... (PMI-2
 * keys are one space for the whole job, so the rank is part of the name).
 * A get is a round trip to the launcher: a small blob costs one.
 *
 * When the launcher's process mapping puts every rank on this node, a round
 * uses the node's attributes instead of the job's key-value space
 * (info-putnodeattr, info-getnodeattr): no fence, since a get may wait for
 * its key. Under Slurm a fence costs a trip through srun and, after it, ~10
 * ms before slurmstepd reads the next command (its PMI-2 agent polls its
 * tree socket that long once it has served one connection): a job on one
 * node then starts with no fence at all. As with PMIx, the job id is
 * the launcher's (job-getid) with Slurm's step and srun's address where
 * srun is the launcher, else with rank 0's random bits that flit_init
 * exchanges (fl_boot_name_job): shared-memory files are named by the job
 * id, and two launchers on one host may number jobs alike.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "boot/blobs.h"
#include "boot/pmi2_wire.h"
#include "boot/proto.h"
#include "platform/os.h"
#include "util/config.h"
#include "util/log.h"

#define MAX_BLOB (64u << 20)
#define CHUNK    (FL_PMI2_VALLEN / 2) /* blob bytes per value */
#define HEAD     (CHUNK - 16)         /* in the first: after "<len>:" */
#define ALL      UINT32_MAX           /* rank 0's gathered blob (node_round) */

static struct {
    pthread_mutex_t lock; /* one command at a time: fd, round, msg */
    int fd;
    uint32_t rank, size;
    uint32_t round; /* allgather rounds started */
    char jobid[256];
    struct fl_pmi2_msg msg; /* the last response */
    bool one_node;          /* every rank is on this node: rounds use its attributes */
    unsigned node_puts;     /* node attributes put */
    bool open;
    bool desync; /* an answer was not a whole frame: no more commands */
} p2 = {.lock = PTHREAD_MUTEX_INITIALIZER, .fd = -1};

static bool pmi2_detect(void)
{
    return !getenv(FL_ENV_BOOT) && getenv("PMI_FD");
}

/* Writes (or reads) all of p on the blocking fd. 0, or -errno (-EPIPE: the
   launcher closed it). */
static int io_all(bool writing, char *p, size_t len)
{
    while (len > 0) {
        ssize_t n = writing ? write(p2.fd, p, len) : read(p2.fd, p, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return n < 0 ? -errno : -EPIPE;
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

static int pmi2_write_all(const char *p, size_t len)
{
    return io_all(true, (char *)p, len);
}

static int read_all(char *p, size_t len)
{
    return io_all(false, p, len);
}

static flit_status lost(const char *cmd, int err)
{
    fl_error("PMI-2: %s: the launcher's connection (PMI_FD=%d) failed: %s", cmd, p2.fd,
             err == -EPIPE ? "closed by the launcher" : strerror(-err));
    return FLIT_ERR_BOOT;
}

/* Sends the command in kv (n pairs); its response is read by recv_resp.
   Several may be sent before their responses are read: the launcher
   answers each connection's commands in order. */
static flit_status send_cmd(const char *const *kv, unsigned n)
{
    static char frame[FL_PMI2_HDR + FL_PMI2_MAX_BODY + 1];
    const char *cmd = kv[1];
    if (p2.desync) {
        fl_error("PMI-2: %s: the launcher's connection is out of step after a bad answer",
                 cmd);
        return FLIT_ERR_BOOT;
    }
    long len = fl_pmi2_encode(frame, sizeof frame, kv, n);
    if (len < 0) {
        fl_error("PMI-2: %s: the command does not fit the protocol", cmd);
        return FLIT_ERR_BOOT;
    }
    int err = pmi2_write_all(frame, (size_t)len);
    if (err) {
        p2.desync = true;
        return lost(cmd, err);
    }
    return FLIT_OK;
}

/* Reads the next response, to cmd, into p2.msg; it must be "<cmd>-response"
   with rc=0. If optional, a response with another rc is
   FLIT_ERR_NOT_SUPPORTED, and not an error to log. An answer that is not a
   whole frame leaves the connection out of step (p2.desync). */
static flit_status recv_resp(const char *cmd, bool optional)
{
    static char frame[FL_PMI2_MAX_BODY + 1];
    int err = read_all(frame, FL_PMI2_HDR);
    long body = err ? 0 : fl_pmi2_frame_len(frame);
    if (!err && body < 0) {
        fl_error("PMI-2: %s: the launcher's answer has no valid length (\"%.6s\")", cmd,
                 frame);
        p2.desync = true;
        return FLIT_ERR_BOOT;
    }
    if (!err)
        err = read_all(frame, (size_t)body);
    if (err) {
        p2.desync = true;
        return lost(cmd, err);
    }
    char want[64];
    snprintf(want, sizeof want, "%s-response", cmd);
    if (fl_pmi2_decode(frame, (size_t)body, &p2.msg) != 0) {
        fl_error("PMI-2: %s: the launcher's answer is malformed: \"%.*s\"", cmd,
                 (int)(body < 200 ? body : 200), frame);
        return FLIT_ERR_BOOT;
    }
    if (optional && strcmp(p2.msg.pair[0].val, want) == 0 && !fl_pmi2_ok(&p2.msg, want))
        return FLIT_ERR_NOT_SUPPORTED;
    if (!fl_pmi2_ok(&p2.msg, want)) {
        const char *rc = fl_pmi2_get(&p2.msg, "rc"),
                   *why = fl_pmi2_get(&p2.msg, "errmsg");
        fl_error("PMI-2: %s: the launcher answered %s with rc=%s%s%s", cmd,
                 p2.msg.pair[0].val, rc ? rc : "(none)", why ? ": " : "", why ? why : "");
        return FLIT_ERR_BOOT;
    }
    return FLIT_OK;
}

static flit_status command_rc(const char *const *kv, unsigned n, bool optional)
{
    flit_status st = send_cmd(kv, n);
    return st == FLIT_OK ? recv_resp(kv[1], optional) : st;
}

static flit_status command(const char *const *kv, unsigned n)
{
    return command_rc(kv, n, false);
}

/* The value of key in the last response as a number below limit. */
static flit_status get_u32(const char *cmd, const char *key, uint32_t limit,
                           uint32_t *out)
{
    const char *s = fl_pmi2_get(&p2.msg, key);
    char *end;
    errno = 0;
    unsigned long v = s && *s >= '0' && *s <= '9' ? strtoul(s, &end, 10) : ULONG_MAX;
    if (!s || errno || *end || v >= limit) {
        fl_error("PMI-2: %s: %s=%s in the launcher's answer, expected a number below %u",
                 cmd, key, s ? s : "(missing)", limit);
        return FLIT_ERR_BOOT;
    }
    *out = (uint32_t)v;
    return FLIT_OK;
}

/* The PMI-1 style line that switches the connection to PMI-2. */
static flit_status handshake(void)
{
    static const char hello[] = "cmd=init pmi_version=2 pmi_subversion=0\n";
    int err = pmi2_write_all(hello, sizeof hello - 1);
    char line[256];
    size_t len = 0;
    while (!err && (len == 0 || line[len - 1] != '\n')) {
        if (len == sizeof line)
            err = -EMSGSIZE;
        else
            err = read_all(line + len++, 1);
    }
    if (err)
        return lost("init", err);
    const char *ver;
    if (fl_pmi2_line_decode(line, len - 1, &p2.msg) != 0 ||
        !fl_pmi2_ok(&p2.msg, "response_to_init") ||
        !(ver = fl_pmi2_get(&p2.msg, "pmi_version")) || strcmp(ver, "2") != 0) {
        fl_error("PMI-2: the launcher at PMI_FD=%d does not speak PMI-2; it answered "
                 "\"%.*s\"",
                 p2.fd, (int)len - 1, line);
        return FLIT_ERR_BOOT;
    }
    return FLIT_OK;
}

static flit_status fullinit(uint32_t env_rank)
{
    char rank[16];
    snprintf(rank, sizeof rank, "%" PRIu32, env_rank);
    /* Slurm wants every key MPICH sends, the job id PMI_JOBID names among
       them; Hydra has none. flit's commands are serialized by p2.lock. */
    const char *job = getenv("PMI_JOBID");
    const char *kv[] = {
        "cmd",         "fullinit", "pmirank",        rank, "threaded", "FALSE",
        "pmi_version", "2",        "pmi_subversion", "0",  "pmijobid", job ? job : ""};
    flit_status st = command(kv, job ? 6 : 5);
    if (st == FLIT_OK)
        st = get_u32("fullinit", "size", UINT32_MAX, &p2.size);
    if (st == FLIT_OK)
        st = get_u32("fullinit", "rank", p2.size, &p2.rank);
    if (st == FLIT_OK && p2.rank != env_rank) {
        fl_error("PMI-2: the launcher says rank %u, PMI_RANK says %u", p2.rank, env_rank);
        st = FLIT_ERR_BOOT;
    }
    if (st == FLIT_OK && p2.size == 0) {
        fl_error("PMI-2: the launcher says the job has no ranks");
        st = FLIT_ERR_BOOT;
    }
    return st;
}

/* Puts key in the round's space: the node's attributes or the job's
   key-value space. A launcher that refuses the first node attribute has
   none: every rank is refused alike, and all use the job's space. */
static flit_status put(const char *key, const char *val)
{
    if (p2.one_node) {
        const char *kv[] = {"cmd", "info-putnodeattr", "key", key, "value", val};
        flit_status st = command_rc(kv, 3, p2.node_puts == 0);
        if (st != FLIT_ERR_NOT_SUPPORTED) {
            p2.node_puts += st == FLIT_OK;
            return st;
        }
        fl_debug("PMI-2: the launcher refuses node attributes: exchanges go through "
                 "the job's key-value space and a fence");
        p2.one_node = false;
    }
    const char *kv[] = {"cmd", "kvs-put", "key", key, "value", val};
    return command(kv, 3);
}

/* Whether an answer comes within FLIT_PEER_TIMEOUT. A fence over several
   nodes is the one wait where PMI-2 cannot say that a rank is gone (Slurm
   answers it once every task has entered it; a task that exited never
   does): it ends here instead of hanging until the step's time limit. */
static flit_status await_answer(const char *cmd)
{
    struct pollfd pfd = {.fd = p2.fd, .events = POLLIN};
    int64_t ms = fl_cfg.peer_timeout_ms; /* 0: the settings unread, no bound */
    int n;
    do
        n = poll(&pfd, 1, ms <= 0 ? -1 : ms > INT_MAX ? INT_MAX : (int)ms);
    while (n < 0 && errno == EINTR);
    if (n != 0)
        return FLIT_OK; /* an answer, or an error that the read will name */
    p2.desync = true;   /* the answer may still come: no more commands */
    fl_error("PMI-2: %s of exchange %u: no answer in %lld s (FLIT_PEER_TIMEOUT): a rank "
             "on another node left the job (exited, or never reached this exchange), "
             "and PMI-2 does not say which; run srun with --kill-on-bad-exit to end "
             "the step when a task fails",
             cmd, p2.round, (long long)(ms / 1000));
    return FLIT_ERR_PEER_DOWN;
}

static flit_status fence(void)
{
    const char *kv[] = {"cmd", "kvs-fence"};
    flit_status st = send_cmd(kv, 1);
    if (st == FLIT_OK)
        st = await_answer(kv[1]);
    return st == FLIT_OK ? recv_resp(kv[1], false) : st;
}

/* Asks for rank src's key; wait: until it is there (node attributes only;
   the job's key-value space is complete after the fence). */
static flit_status send_get(uint32_t src, const char *key, bool wait)
{
    if (p2.one_node) {
        const char *kv[] = {"cmd",  "info-getnodeattr",     "key", key,
                            "wait", wait ? "TRUE" : "FALSE"};
        return send_cmd(kv, 3);
    }
    char srcid[16];
    snprintf(srcid, sizeof srcid, "%" PRIu32, src);
    const char *kv[] = {"cmd", "kvs-get", "jobid", p2.jobid, "srcid", srcid, "key", key};
    return send_cmd(kv, 4);
}

/* The answer to send_get(src, key): the value, in p2.msg until the next
   answer. FLIT_ERR_AGAIN: not there yet (node attributes, asked without
   waiting); a missing key of the job's space is an error, logged if
   report. */
static flit_status recv_get(uint32_t src, const char *key, const char **val, bool report)
{
    flit_status st = recv_resp(p2.one_node ? "info-getnodeattr" : "kvs-get", false);
    if (st != FLIT_OK)
        return st;
    const char *found = fl_pmi2_get(&p2.msg, "found");
    *val = fl_pmi2_get(&p2.msg, "value");
    if (!found || strcmp(found, "TRUE") != 0 || !*val) {
        if (p2.one_node && found && strcmp(found, "FALSE") == 0)
            return FLIT_ERR_AGAIN;
        if (report)
            fl_error("PMI-2: key %s of rank %u is not in the job's key-value space", key,
                     src);
        return FLIT_ERR_BOOT;
    }
    return FLIT_OK;
}

/* ---- waits that end when the awaited rank is gone ---- */

/* Each rank's pid and start time ("PID:START"), a node attribute put when
   PMI-2 opens: every rank of a one-node job can then tell whether the rank
   whose part it waits for still lives. PMI-2 itself never says that a rank
   exited, and a waiting get for the part of a rank that is gone would
   block this connection for good. */
#define PID_KEY "flit.pid.%" PRIu32

static flit_status put_pid(void)
{
    char key[32], val[48];
    uint64_t start = 0;
    if (fl_proc_start(getpid(), &start) != 0)
        return FLIT_OK; /* no /proc: the waits fall back on the time bound */
    snprintf(key, sizeof key, PID_KEY, p2.rank);
    snprintf(val, sizeof val, "%d:%" PRIu64, (int)getpid(), start);
    return put(key, val);
}

/* FLIT_OK while rank r may still put its part: its pid lives with its start
   time; or it has put no pid yet (it has not reached flit_init) and the
   wait is younger than FLIT_PEER_TIMEOUT. Else FLIT_ERR_PEER_DOWN, *pid
   the one gone (0: none put in time). Overwrites p2.msg. */
static flit_status rank_alive(uint32_t r, uint64_t since, int *pid)
{
    char pkey[32];
    const char *val;
    snprintf(pkey, sizeof pkey, PID_KEY, r);
    flit_status st = send_get(r, pkey, false);
    if (st == FLIT_OK)
        st = recv_get(r, pkey, &val, false);
    if (st != FLIT_OK && st != FLIT_ERR_AGAIN)
        return st;
    uint64_t start = 0, now_start;
    *pid = 0;
    if (st == FLIT_OK && sscanf(val, "%d:%" SCNu64, pid, &start) == 2 && *pid > 0 &&
        (fl_proc_start(*pid, &now_start) != 0 || now_start != start))
        return FLIT_ERR_PEER_DOWN;
    *pid = 0;
    int64_t waited_ms = (int64_t)((fl_now_ns() - since) / 1000000u);
    if (st == FLIT_ERR_AGAIN && fl_cfg.peer_timeout_ms > 0 &&
        waited_ms > fl_cfg.peer_timeout_ms)
        return FLIT_ERR_PEER_DOWN;
    return FLIT_OK;
}

static void report_gone(uint32_t r, const char *key, int pid)
{
    if (pid)
        fl_error(
            "PMI-2: exchange %u: rank %u left the job (pid %d exited) before putting "
            "%s: the exchange cannot complete",
            p2.round, r, pid, key);
    else
        fl_error("PMI-2: exchange %u: rank %u left the job: it has not started flit in "
                 "%lld s (FLIT_PEER_TIMEOUT)",
                 p2.round, r, (long long)(fl_cfg.peer_timeout_ms / 1000));
}

/* Rank src's value of key now: FLIT_ERR_AGAIN if not there yet. */
static flit_status get_now(uint32_t src, const char *key, const char **val)
{
    flit_status st = send_get(src, key, false);
    return st == FLIT_OK ? recv_get(src, key, val, true) : st;
}

/* Rank src's value of key, waiting for it; it is in p2.msg until the next
   command. The job's key-value space is complete after the fence; a node
   attribute is asked for again and again without waiting (from every
   0.1 ms to every 20 ms) while the rank that owes it lives. Once it is
   gone, the key is asked for a few times more: it may have put it, then
   left, and a put may take a moment to show (a server may answer "not
   yet" to one get and the value to the next). */
#define GONE_ASKS 3
static flit_status get(uint32_t src, const char *key, const char **val)
{
    uint64_t since = fl_now_ns();
    uint32_t owner = src == ALL ? 0 : src;
    for (unsigned pause_us = 100;; pause_us = pause_us < 10000 ? pause_us * 2 : 20000) {
        int pid;
        flit_status st = get_now(src, key, val);
        if (st != FLIT_ERR_AGAIN)
            return st;
        st = rank_alive(owner, since, &pid);
        if (st == FLIT_ERR_PEER_DOWN) {
            st = FLIT_ERR_AGAIN;
            for (int ask = 0; ask < GONE_ASKS && st == FLIT_ERR_AGAIN; ask++)
                st = get_now(src, key, val);
            if (st == FLIT_ERR_AGAIN) {
                report_gone(owner, key, pid);
                st = FLIT_ERR_PEER_DOWN;
            }
            return st;
        }
        if (st != FLIT_OK)
            return st;
        usleep(pause_us);
    }
}

static const char hexdig[] = "0123456789abcdef";

static void to_hex(char *out, const uint8_t *p, size_t len)
{
    for (size_t i = 0; i < len; i++) {
        out[2 * i] = hexdig[p[i] >> 4];
        out[2 * i + 1] = hexdig[p[i] & 15];
    }
    out[2 * len] = '\0';
}

static int hexval(char c)
{
    const char *p = c ? strchr(hexdig, c) : NULL;
    return p ? (int)(p - hexdig) : -1;
}

/* Exactly 2 * len hex digits -> len bytes. 0 or -1. */
static int from_hex(uint8_t *out, const char *s, size_t len)
{
    if (strlen(s) != 2 * len)
        return -1;
    for (size_t i = 0; i < len; i++) {
        int hi = hexval(s[2 * i]), lo = hexval(s[2 * i + 1]);
        if (hi < 0 || lo < 0)
            return -1;
        out[i] = (uint8_t)(hi << 4 | lo);
    }
    return 0;
}

/* The launcher's name for the job, which kvs-get wants. */
static flit_status get_job_id(void)
{
    const char *kv[] = {"cmd", "job-getid"};
    flit_status st = command(kv, 1);
    const char *id = st == FLIT_OK ? fl_pmi2_get(&p2.msg, "jobid") : NULL;
    if (st == FLIT_OK && (!id || strlen(id) >= sizeof p2.jobid)) {
        fl_error("PMI-2: job-getid: no job id of at most %zu bytes in the answer",
                 sizeof p2.jobid - 1);
        st = FLIT_ERR_BOOT;
    }
    if (st == FLIT_OK)
        snprintf(p2.jobid, sizeof p2.jobid, "%s", id);
    return st;
}

/*
 * Which node each rank is on, as the launcher says (PMI_process_mapping):
 * flit_init then needs no exchange to learn it. *out stays NULL where the
 * launcher does not say, or says what flit cannot read (flit_init then
 * exchanges host identities); an error only when the launcher is lost.
 */
static flit_status process_mapping(uint32_t **out)
{
    const char *kv[] = {"cmd", "info-getjobattr", "key", "PMI_process_mapping"};
    flit_status st = command_rc(kv, 2, true);
    if (st == FLIT_ERR_NOT_SUPPORTED) {
        fl_debug("PMI-2: the launcher gives no PMI_process_mapping");
        return FLIT_OK;
    }
    const char *found = fl_pmi2_get(&p2.msg, "found"),
               *val = fl_pmi2_get(&p2.msg, "value");
    if (st != FLIT_OK || !found || strcmp(found, "TRUE") != 0 || !val)
        return st;
    uint32_t *node_of = malloc(p2.size * sizeof *node_of);
    if (!node_of)
        return FLIT_ERR_NO_MEMORY;
    if (fl_pmi2_parse_mapping(val, p2.size, node_of) != 0) {
        fl_debug("PMI-2: PMI_process_mapping \"%.80s\" is not one flit reads: the "
                 "ranks exchange their hosts' identities",
                 val);
        free(node_of);
        return FLIT_OK;
    }
    p2.one_node = true;
    for (uint32_t r = 1; r < p2.size; r++)
        p2.one_node = p2.one_node && node_of[r] == node_of[0];
    *out = node_of;
    return FLIT_OK;
}

/* PMI_FD and PMI_RANK as the launcher set them. */
static flit_status read_env(uint32_t *rank)
{
    const char *fd = getenv("PMI_FD"), *r = getenv("PMI_RANK");
    char *end;
    errno = 0;
    long v = fd && *fd ? strtol(fd, &end, 10) : -1;
    if (!fd || !*fd || errno || *end || v < 0 || v > INT32_MAX ||
        fcntl((int)v, F_GETFD) < 0) {
        fl_error("PMI-2: PMI_FD=\"%s\" is not an open file descriptor of this process "
                 "(was it started by the launcher itself, not by a program in between "
                 "that closed it?)",
                 fd ? fd : "");
        return FLIT_ERR_BOOT;
    }
    errno = 0;
    unsigned long rv = r && *r >= '0' && *r <= '9' ? strtoul(r, &end, 10) : ULONG_MAX;
    if (!r || errno || *end || rv >= UINT32_MAX) {
        fl_error("PMI-2: PMI_RANK=\"%s\" is not a rank", r ? r : "(unset)");
        return FLIT_ERR_BOOT;
    }
    p2.fd = (int)v;
    *rank = (uint32_t)rv;
    /* The program's children are not ranks: they do not inherit it. */
    fcntl(p2.fd, F_SETFD, FD_CLOEXEC);
    return FLIT_OK;
}

static flit_status pmi2_open(struct fl_boot_info *info)
{
    uint32_t env_rank;
    pthread_mutex_lock(&p2.lock);
    p2.round = 0;
    p2.desync = false;
    p2.one_node = false;
    p2.node_puts = 0;
    flit_status st = read_env(&env_rank);
    if (st == FLIT_OK)
        st = handshake();
    if (st == FLIT_OK)
        st = fullinit(env_rank);
    if (st == FLIT_OK)
        st = get_job_id();
    if (st == FLIT_OK) {
        fl_boot_name_job(info, p2.jobid, "");
        /* Useful only where the job id needs no exchange either. */
        if (p2.size > 1 && info->job_id_unique)
            st = process_mapping(&info->host_of);
        if (st == FLIT_OK && p2.one_node)
            st = put_pid();
    }
    p2.open = st == FLIT_OK;
    pthread_mutex_unlock(&p2.lock);
    if (st != FLIT_OK)
        return st;
    info->rank = p2.rank;
    info->size = p2.size;
    info->launcher = "pmi2";
    return FLIT_OK;
}

/* A blob goes in pieces: piece 0, in key "flit.R.r" after the blob's length
   and a ':', holds up to HEAD bytes, so a small blob costs one get; pieces
   1.. ("flit.R.r.1"...) hold CHUNK bytes each. Piece i's offset and size. */
static size_t piece(size_t len, size_t i, size_t *size)
{
    size_t at = i == 0 ? 0 : HEAD + (i - 1) * CHUNK, most = i == 0 ? HEAD : CHUNK;
    *size = len - at < most ? len - at : most;
    return at;
}

/* On one node, rank 0 gathers every rank's blob of a round and puts them
   all as one blob, from rank ALL: the others get that one. */

static void piece_key(char *key, size_t cap, uint32_t r, size_t i)
{
    char who[16];
    if (r == ALL)
        snprintf(who, sizeof who, "all");
    else
        snprintf(who, sizeof who, "%u", r);
    if (i == 0)
        snprintf(key, cap, "flit.%u.%s", p2.round, who);
    else
        snprintf(key, cap, "flit.%u.%s.%zu", p2.round, who, i);
}

/* For messages: "rank 3", or "rank 0's gathered blobs". */
static const char *whose(uint32_t r, char *buf, size_t cap)
{
    if (r == ALL)
        snprintf(buf, cap, "rank 0's gathered blobs");
    else
        snprintf(buf, cap, "rank %u", r);
    return buf;
}

/* Puts a blob as rank r's (ours, or ALL). */
static flit_status put_blob(uint32_t r, const uint8_t *mine, size_t len)
{
    char key[48], val[FL_PMI2_VALLEN + 1];
    flit_status st = FLIT_OK;
    for (size_t i = 0, at = 0, n; st == FLIT_OK && (i == 0 || at < len); i++) {
        at = piece(len, i, &n);
        int k = i == 0 ? snprintf(val, sizeof val, "%zu:", len) : 0;
        to_hex(val + k, mine + at, n);
        piece_key(key, sizeof key, r, i);
        st = put(key, val);
        at += n;
    }
    return st;
}

/* Piece 0: "<len>:<hex>" -> *len, and the hex part in *hex. */
static flit_status blob_head(uint32_t r, const char *val, size_t *len, const char **hex)
{
    char *end;
    errno = 0;
    unsigned long long n = *val >= '0' && *val <= '9' ? strtoull(val, &end, 10) : ~0ull;
    if (errno || n > MAX_BLOB || *end != ':') {
        char w[32];
        fl_error("PMI-2: %s gave a blob length of \"%.40s\"", whose(r, w, sizeof w), val);
        return FLIT_ERR_BOOT;
    }
    *len = (size_t)n;
    *hex = end + 1;
    return FLIT_OK;
}

/* Rank r's blob of this round from piece 0's value (key): *len, and *buf
   with its first bytes. */
static flit_status blob_first(uint32_t r, const char *key, const char *val, uint8_t **buf,
                              size_t *len)
{
    flit_status st = blob_head(r, val, len, &val);
    if (st == FLIT_OK && !(*buf = malloc(*len ? *len : 1)))
        st = FLIT_ERR_NO_MEMORY;
    size_t n;
    piece(*len, 0, &n);
    if (st == FLIT_OK && from_hex(*buf, val, n) != 0) {
        char w[32];
        fl_error("PMI-2: %s: key %s is not %zu bytes in hex", whose(r, w, sizeof w), key,
                 n);
        st = FLIT_ERR_BOOT;
    }
    if (st != FLIT_OK) {
        free(*buf);
        *buf = NULL;
    }
    return st;
}

/* The rest of rank r's blob (pieces 1..), a get each. */
static flit_status blob_rest(uint32_t r, uint8_t *buf, size_t len)
{
    char key[48];
    const char *val;
    for (size_t i = 1, at = HEAD, n; at < len; i++) {
        piece_key(key, sizeof key, r, i);
        flit_status st = get(r, key, &val);
        if (st != FLIT_OK)
            return st;
        at = piece(len, i, &n);
        if (from_hex(buf + at, val, n) != 0) {
            char w[32];
            fl_error("PMI-2: %s: key %s is not %zu bytes in hex", whose(r, w, sizeof w),
                     key, n);
            return FLIT_ERR_BOOT;
        }
        at += n;
    }
    return FLIT_OK;
}

/*
 * Every rank's blob. A get is a round trip to the launcher, so the first
 * piece of WINDOW ranks' blobs is asked for at once and the answers read
 * after (the launcher answers in order; a window's answers fit the
 * connection's buffers, so neither side blocks writing). Those asked for
 * are never waited for: a launcher answers a waiting get when the key
 * comes, out of order with the others. A node attribute not there yet is
 * asked for again, waiting, on its own. Every answer asked for is read,
 * even after a bad one, so the connection stays in step.
 */
#define WINDOW 16
static flit_status collect(struct fl_blobs **out)
{
    uint8_t **data = calloc(p2.size, sizeof *data);
    size_t *len = calloc(p2.size, sizeof *len);
    flit_status st = data && len ? FLIT_OK : FLIT_ERR_NO_MEMORY;
    size_t total = 0;
    char key[48];
    for (uint32_t base = 0; base < p2.size && st == FLIT_OK; base += WINDOW) {
        uint32_t end = p2.size - base < WINDOW ? p2.size : base + WINDOW, sent = base;
        for (; sent < end && st == FLIT_OK; sent++) {
            piece_key(key, sizeof key, sent, 0);
            st = send_get(sent, key, false);
        }
        sent -= st != FLIT_OK; /* the one that failed was not sent */
        for (uint32_t r = base; r < sent && !p2.desync; r++) {
            const char *val;
            piece_key(key, sizeof key, r, 0);
            flit_status got = recv_get(r, key, &val, st == FLIT_OK);
            if (got == FLIT_ERR_AGAIN) { /* asked again below, waiting */
                len[r] = SIZE_MAX;
                got = FLIT_OK;
            } else if (got == FLIT_OK && st == FLIT_OK) {
                got = blob_first(r, key, val, &data[r], &len[r]);
            }
            if (st == FLIT_OK)
                st = got;
        }
        for (uint32_t r = base; r < sent && st == FLIT_OK; r++) {
            const char *val;
            if (len[r] == SIZE_MAX) {
                len[r] = 0;
                piece_key(key, sizeof key, r, 0);
                st = get(r, key, &val);
                if (st == FLIT_OK)
                    st = blob_first(r, key, val, &data[r], &len[r]);
            }
            if (st == FLIT_OK)
                st = blob_rest(r, data[r], len[r]);
            total += len[r];
        }
    }
    struct fl_blobs *b = st == FLIT_OK ? fl_blobs_alloc(p2.size, total) : NULL;
    if (st == FLIT_OK && !b)
        st = FLIT_ERR_NO_MEMORY;
    for (uint32_t r = 0; data && r < p2.size; r++) {
        if (b)
            fl_blobs_add(b, r, data[r], len[r]);
        free(data[r]);
    }
    free(data);
    free(len);
    if (b)
        *out = b;
    return st;
}

/* Rank r's whole blob (or ALL's), waiting for it: a get per piece. */
static flit_status fetch_blob(uint32_t r, uint8_t **buf, size_t *len)
{
    char key[48];
    const char *val;
    piece_key(key, sizeof key, r, 0);
    flit_status st = get(r, key, &val);
    if (st == FLIT_OK)
        st = blob_first(r, key, val, buf, len);
    if (st == FLIT_OK && (st = blob_rest(r, *buf, *len)) != FLIT_OK) {
        free(*buf);
        *buf = NULL;
    }
    return st;
}

/*
 * The rest of a round on one node, once this rank's blob is put: rank 0
 * gets every rank's blob and puts them all as one, which every other rank
 * gets. slurmstepd serves every command of a node's ranks on one thread, so
 * what counts is how many there are: 2N gets a round and N per piece of the
 * gathered blob, instead of N². fl_blobs_pack writes each blob against the
 * one before, so the pieces are few: 64 shared-memory addresses of 188
 * bytes pack into 4 values instead of 25.
 */
static flit_status node_round(struct fl_blobs **out)
{
    if (p2.rank != 0) {
        uint8_t *all = NULL;
        size_t n = 0;
        flit_status st = fetch_blob(ALL, &all, &n);
        if (st == FLIT_OK &&
            (st = fl_blobs_unpack(all, n, p2.size, out)) == FLIT_ERR_BOOT)
            fl_error("PMI-2: rank 0's gathered blobs (%zu bytes) do not add up for %u "
                     "ranks",
                     n, p2.size);
        free(all);
        return st;
    }
    flit_status st = collect(out);
    if (st != FLIT_OK)
        return st;
    size_t n;
    uint8_t *all = fl_blobs_pack(*out, &n);
    st = all ? put_blob(ALL, all, n) : FLIT_ERR_NO_MEMORY;
    free(all);
    if (st != FLIT_OK) {
        fl_blobs_free(*out);
        *out = NULL;
    }
    return st;
}

static flit_status pmi2_allgather(const void *mine, size_t len, struct fl_blobs **out)
{
    if (len > MAX_BLOB)
        return FLIT_ERR_TOO_LARGE;
    pthread_mutex_lock(&p2.lock);
    flit_status st = p2.open ? FLIT_OK : FLIT_ERR_BOOT;
    p2.round++;
    fl_debug("PMI-2: exchange %u, %zu bytes", p2.round, len);
    if (st == FLIT_OK) /* the first may find node attributes refused */
        st = put_blob(p2.rank, mine, len);
    if (st == FLIT_OK && p2.one_node) {
        st = node_round(out);
    } else if (st == FLIT_OK) {
        st = fence();
        if (st == FLIT_OK)
            st = collect(out);
    }
    pthread_mutex_unlock(&p2.lock);
    return st;
}

static void pmi2_close(bool clean)
{
    pthread_mutex_lock(&p2.lock);
    if (p2.open && clean) {
        const char *kv[] = {"cmd", "finalize"};
        if (command(kv, 1) != FLIT_OK)
            fl_warn("PMI-2: finalize was not acknowledged");
    }
    p2.open = false;
    pthread_mutex_unlock(&p2.lock);
}

/* PMI-2's abort of the whole job: the launcher kills every task and
   answers nothing (the caller exits). */
static void pmi2_abort(int status, const char *why)
{
    (void)status; /* PMI-2 carries no status: the launcher has its own */
    pthread_mutex_lock(&p2.lock);
    if (p2.open) {
        const char *kv[] = {"cmd", "abort", "isworld", "TRUE", "msg", why};
        send_cmd(kv, 3);
    }
    pthread_mutex_unlock(&p2.lock);
}

const struct fl_boot_ops fl_boot_pmi2 = {
    .name = "pmi2",
    .detect = pmi2_detect,
    .open = pmi2_open,
    .allgather = pmi2_allgather,
    .close = pmi2_close,
    .abort = pmi2_abort,
};

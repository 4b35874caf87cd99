/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A stream over several rails (FLIT_UDP_RAILS) survives the loss of one
 * (tests/net/rails_test.sh takes it down and brings it back). Rank 0
 * sends --count numbered 1 KiB medium messages to rank 1, each with its
 * own byte pattern; rank 1 checks every one arrives once, in order, every
 * byte as sent, and answers the last.
 *
 * The handshakes with the script are files in --dir: rank 1 writes
 * "third" when it has a third of the stream (the script takes a link
 * down, then writes "down"); rank 0 sends the second third only after
 * "down", so the outage falls mid-stream, and rank 1 writes "two-thirds"
 * when it has that too (the script brings the link back, then writes
 * "up"). Rank 0 sends the last third once the path is used again
 * (udp.path_up), and fails unless rail 1 carried some of it.
 *
 * Rank 1 reports the pause, the longest gap between two messages in the
 * second third, and fails when it is longer than --max-pause-ms; and the
 * first third's rate, before the outage (bench/rails_bench.sh). With one
 * rail there is no path to see: only the stream is checked.
 *
 *     FLIT_UDP_RAILS=a,b flitrun -n 2 mp_rails --dir D [--count N]
 *         [--max-pause-ms MS] [--transport udp|xdp]
 *
 * --transport: whose counters to read (FLIT_TRANSPORT's, "udp" by default).
 */
#include <sys/stat.h>

#include "mp.h"

enum { H_MSG = 1, H_DONE };

#define MSG_BYTES 1024u

static struct {
    flit_ep_t *ep;
    const char *dir;
    const char *transport; /* the counters' prefix */
    uint64_t count, got, done;
    double last, pause; /* rank 1: arrival of the previous one; the longest gap */
    double start, rate; /* rank 1: the first arrival; the first third's MB/s */
    uint8_t buf[MSG_BYTES];
} g;

static void say(const char *what)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", g.dir, what);
    FILE *f = fopen(path, "w");
    CHECK(f != NULL);
    fclose(f);
}

static bool said(const char *what)
{
    char path[512];
    struct stat st;
    snprintf(path, sizeof path, "%s/%s", g.dir, what);
    return stat(path, &st) == 0;
}

static void on_msg(flit_token_t *token, void *buf, size_t nbytes, const uint32_t *args,
                   unsigned nargs, void *user)
{
    (void)user;
    CHECK(nargs == 1 && nbytes == MSG_BYTES);
    if (args[0] != (uint32_t)g.got)
        FAIL("message %u, expected %llu (lost, repeated or out of order)", args[0],
             (unsigned long long)g.got);
    size_t bad = mp_pattern_check(buf, nbytes, mp_mix(args[0], 1, 2, 3));
    if (bad != nbytes)
        FAIL("message %u: byte %zu differs", args[0], bad);
    double now = mp_now();
    if (g.got == 0)
        g.start = now;
    if (g.got + 1 == g.count / 3 && now > g.start)
        g.rate = (double)g.got * MSG_BYTES / (now - g.start) / 1e6;
    if (g.got > g.count / 3 && g.got <= 2 * g.count / 3 && now - g.last > g.pause)
        g.pause = now - g.last;
    g.last = now;
    g.got++;
    if (g.got == g.count)
        CHECK_OK(flit_am_reply_short(token, flit_handler(H_DONE), args, 1));
}

static void on_done(flit_token_t *token, void *buf, size_t nbytes, const uint32_t *args,
                    unsigned nargs, void *user)
{
    (void)token, (void)buf, (void)nbytes, (void)args, (void)nargs, (void)user;
    g.done++;
}

/* The transport's counter "what", e.g. path_up. */
static uint64_t counter(const char *what)
{
    char name[64];
    snprintf(name, sizeof name, "%s.%s", g.transport, what);
    flit_counter_t c;
    CHECK_OK(flit_ep_counter(g.ep, name, &c));
    return c.value;
}

static void send_range(uint64_t from, uint64_t to)
{
    for (uint64_t i = from; i < to; i++) {
        uint32_t a = (uint32_t)i;
        mp_pattern_fill(g.buf, MSG_BYTES, mp_mix(a, 1, 2, 3));
        CHECK_OK(flit_am_medium(g.ep, flit_rank(1), flit_handler(H_MSG), g.buf, MSG_BYTES,
                                &a, 1, 0));
    }
}

static void sender(void)
{
    uint64_t third = g.count / 3;
    send_range(0, third);
    MP_WAIT(g.ep, said("down"));
    send_range(third, 2 * third);
    MP_WAIT(g.ep, said("up"));
    /* One rail (FLIT_UDP_RAILS unset or of one, as bench/rails_bench.sh
       runs it beside two): the stream is the figure, no path to see. */
    bool paths = counter("path0_bytes") > 0;
    if (paths)
        MP_WAIT(g.ep, counter("path_up") >= 1);
    uint64_t before = counter("path1_bytes");
    send_range(2 * third, g.count);
    MP_WAIT(g.ep, g.done == 1);
    uint64_t after = counter("path1_bytes");
    printf("rails: path_down %llu path_up %llu; path0 %llu B, path1 %llu B "
           "(%llu B after it came back)\n",
           (unsigned long long)counter("path_down"),
           (unsigned long long)counter("path_up"),
           (unsigned long long)counter("path0_bytes"), (unsigned long long)after,
           (unsigned long long)(after - before));
    CHECK(!paths || counter("path_down") >= 1);
    CHECK(!paths || after > before);
}

static void receiver(uint64_t max_pause_ms)
{
    MP_WAIT(g.ep, g.got >= g.count / 3);
    say("third");
    MP_WAIT(g.ep, g.got >= 2 * (g.count / 3));
    say("two-thirds");
    MP_WAIT(g.ep, g.got == g.count);
    printf("rails: %llu messages in order, pause %.0f ms (bound %llu ms); first third "
           "%.1f MB/s\n",
           (unsigned long long)g.got, g.pause * 1e3, (unsigned long long)max_pause_ms,
           g.rate);
    if (g.pause * 1e3 > (double)max_pause_ms)
        FAIL("the stream paused %.0f ms, more than %llu ms", g.pause * 1e3,
             (unsigned long long)max_pause_ms);
}

int main(int argc, char **argv)
{
    g.count = mp_arg_u64(argc, argv, "--count", 6000);
    g.dir = mp_arg_str(argc, argv, "--dir", NULL);
    g.transport = mp_arg_str(argc, argv, "--transport", "udp");
    uint64_t max_pause_ms = mp_arg_u64(argc, argv, "--max-pause-ms", 600);
    CHECK_OK(flit_init(NULL));
    if (flit_job_size() != 2 || !g.dir) {
        fprintf(stderr, "rails needs 2 ranks and --dir\n");
        return 2;
    }
    uint32_t me = flit_job_rank().idx;
    CHECK_OK(flit_ep_create(NULL, &g.ep));
    CHECK_OK(flit_am_set_returned_handler(g.ep, mp_returned_fail, NULL));
    CHECK_OK(flit_am_register(g.ep, flit_handler(H_MSG), on_msg, NULL));
    CHECK_OK(flit_am_register(g.ep, flit_handler(H_DONE), on_done, NULL));
    g.last = mp_now();
    if (me == 0)
        sender();
    else
        receiver(max_pause_ms);
    CHECK_OK(flit_finalize());
    return 0;
}

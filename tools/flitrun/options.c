/* SPDX-License-Identifier: BSD-3-Clause */
/* flitrun's command line: the options, their checks, --help and --version. */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "flit/flit.h"
#include "flitrun.h"

#define MAX_TIMEOUT_S 1e9 /* keeps the deadline inside a u64 of ns */

static const char usage_line[] = "Usage: flitrun -n N [options] [--] program [args...]\n";

static const char help_text[] =
    "Start N ranks of program as one flit job, on this host or on the hosts\n"
    "named by --hosts, and wait for them.\n"
    "\n"
    "  -n, -np, --np N        number of ranks (1..4096); required unless every\n"
    "                         host in --hosts has a count (then their sum)\n"
    "  -H, --hosts LIST       run the ranks on these hosts: \"a,b,c\" (ranks\n"
    "                         shared out evenly) or \"a:2,b:4\" (at most that\n"
    "                         many on each); localhost and this host's name\n"
    "                         start here, the others through the launcher\n"
    "      --hostfile FILE    the hosts from FILE, one a line: \"name\" or\n"
    "                         \"name slots=N\" (as mpirun's; # comments)\n"
    "      --map-by slot|host fill each host's slots before the next (slot, the\n"
    "                         default: ranks 0..k-1 on the first host, k.. on\n"
    "                         the next), or one rank a host in turn (host)\n"
    "      --placement block|round-robin\n"
    "                         the same as --map-by slot|host\n"
    "      --launch TEMPLATE  start a rank on another host with this command\n"
    "                         instead of ssh: split at blanks, {host} replaced\n"
    "                         by the host's name, then `env FLIT_...=... program\n"
    "                         args` appended as separate words, no shell here;\n"
    "                         e.g. 'ip netns exec {host}'. A template that\n"
    "                         starts with ssh gets the command as ssh does\n"
    "      --no-proxy         one launcher call per rank; by default a host that\n"
    "                         gets several ranks gets one launcher call, which\n"
    "                         starts a proxy (flitrun --proxy, at this flitrun's\n"
    "                         path) that forks the host's ranks, relays their\n"
    "                         output and ends with them\n"
    "      --boot-addr IP     the IPv4 address of this host that the ranks\n"
    "                         connect to (default: the source address of the\n"
    "                         route to the first other host, or the first\n"
    "                         interface up if that name does not resolve);\n"
    "                         without --hosts, a job here over TCP\n"
    "      --timeout SECONDS  stop the job after SECONDS (fractions allowed);\n"
    "                         the ranks print their state to stderr first\n"
    "                         (which flit call each is in), and flitrun which\n"
    "                         ranks an exchange with the launcher waits for\n"
    "  -p, --prefix           prefix every line the ranks print with \"[rank] \"\n"
    "  -k, --keep-going       when a rank fails, let the others run on (they\n"
    "                         see it as a peer going down); report it at the end\n"
    "      --allow-exit-without-finalize\n"
    "                         a rank that exits 0 without calling flit_finalize\n"
    "                         while others run is not a failure, and nobody is\n"
    "                         told it left (the old way): ranks waiting for it\n"
    "                         in flit_init or flit_ep_create wait until\n"
    "                         --timeout\n"
    "      --stdin 0|none     who reads flitrun's stdin: rank 0 (the default)\n"
    "                         or no rank. The others read /dev/null; so does\n"
    "                         rank 0 when flitrun runs in the background of the\n"
    "                         terminal that is its stdin\n"
    "  -v, --verbose          tell what flitrun does, on stderr (FLIT_VERBOSE\n"
    "                         set to 1 or more does too)\n"
    "  -h, --help             print this help and exit\n"
    "      --version          print the version and exit\n"
    "\n"
    "Inside a Slurm allocation (salloc, sbatch) that spans other nodes than\n"
    "this one, and without --hosts or --hostfile, the ranks go to the\n"
    "allocation's nodes (SLURM_JOB_NODELIST, at most SLURM_JOB_CPUS_PER_NODE\n"
    "each) and start there through srun (--launch: \"" FR_SLURM_LAUNCH "\"),\n"
    "one step a rank (no proxies: a step of one task has one CPU).\n"
    "\n"
    "When a rank exits non-zero or is killed, the others are stopped (SIGTERM,\n"
    "then SIGKILL 2 s later) and flitrun exits with that rank's status, or\n"
    "128+signal. So does a rank that exits 0 without calling flit_finalize\n"
    "(or before flit_init, in a job whose other ranks called it) while other\n"
    "ranks still run, as under mpirun: flitrun names it and exits 1, at once\n"
    "when another rank waits for it in flit_init's or flit_ep_create's exchange\n"
    "with the launcher, else when a rank still runs 5 s later. Ranks waiting\n"
    "there for a rank that is gone get FLIT_ERR_PEER_DOWN, naming it. A rank\n"
    "that calls flit_job_abort (MPI_Abort) tells flitrun before it exits:\n"
    "the job stops (under --keep-going too) with that rank's status, whatever\n"
    "its peers do on seeing it gone. Other\n"
    "exit statuses: 0 every rank exited 0; 124 timed out; 127 program cannot\n"
    "be executed; 128+signal flitrun was interrupted; 2 bad usage or a bad\n"
    "FLIT_* setting (said once, before any rank starts); 1 any other\n"
    "error.\n"
    "\n"
    "With several ranks their output goes through flitrun a line at a time, so\n"
    "that lines of different ranks never mix (one longer than 64 KiB is cut);\n"
    "the ranks' stdout is then a pipe, not a terminal: flush it where it\n"
    "matters when.\n"
    "\n"
    "On other hosts: the default launcher is `ssh -o BatchMode=yes HOST`\n"
    "running `cd DIR && exec env FLIT_...=... program args` in the login\n"
    "shell there (DIR: flitrun's working directory; every word quoted); so\n"
    "program must be at the same path there, and only the FLIT_* variables\n"
    "travel. The ranks connect back to flitrun over TCP (FLIT_BOOT=tcp:IP:PORT,\n"
    "where flitrun listens on IP alone) and prove they are the job's with a\n"
    "secret drawn for it (FLIT_JOB_KEY: on no command line; it is the first\n"
    "line of the launcher's stdin, read there by a shell). Connections that do not\n"
    "prove it are closed and counted. What flitrun watches and stops is\n"
    "the launcher process: its exit status is the rank's (ssh says 255 for\n"
    "its own failure and for a rank killed by a signal), or, for a host's\n"
    "proxy, that of the host's first rank to fail. ssh ends without\n"
    "ending the remote rank; the rank ends itself when its connection to\n"
    "flitrun breaks. Shared-memory files that crashed ranks leave behind are\n"
    "removed on flitrun's host only.\n";

__attribute__((format(printf, 1, 2))) static void usage_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "flitrun: ");
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n%sTry 'flitrun --help' for more.\n", usage_line);
    va_end(ap);
}

static bool parse_nranks(const char *s, uint32_t *out)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < 1 || v > (long)MAX_RANKS)
        return false;
    *out = (uint32_t)v;
    return true;
}

static bool parse_timeout(const char *s, double *out)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || *end || !isfinite(v) || v <= 0 || v > MAX_TIMEOUT_S)
        return false;
    *out = v;
    return true;
}

/* getopt's error for the option just seen, in our words. */
static void option_error(int c, char **argv)
{
    const char *seen = argv[optind - 1];
    if (c == ':') {
        usage_error("option '%s' needs a value", seen);
    } else if (optopt && strncmp(seen, "--", 2) != 0) {
        char shortopt[3] = {'-', (char)optopt, '\0'};
        usage_error("unknown option '%s'", shortopt);
    } else {
        usage_error("unknown option '%s'", seen);
    }
}

/* 0: go on; 1: done (help, version); -1: bad usage, already reported. */
static int parse_one(int c, char **argv, struct options *opt)
{
    switch (c) {
    case 'n':
        /* mpirun's -np N, which getopt reads as -n with the value "p" */
        if (strcmp(argv[optind - 1], "-np") == 0 && argv[optind])
            optarg = argv[optind++];
        if (parse_nranks(optarg, &opt->nranks))
            return 0;
        usage_error("-n wants a number of ranks from 1 to 4096, not '%s'", optarg);
        return -1;
    case 'T':
        if (parse_timeout(optarg, &opt->timeout_s))
            return 0;
        usage_error("--timeout wants a positive number of seconds, not '%s'", optarg);
        return -1;
    case 'S':
        if (strcmp(optarg, "0") == 0 || strcmp(optarg, "none") == 0) {
            opt->stdin_none = optarg[0] == 'n';
            return 0;
        }
        usage_error("--stdin wants 0 or none, not '%s'", optarg);
        return -1;
    case 'H':
        opt->hosts_spec = optarg;
        return 0;
    case 'L':
        opt->launch_spec = optarg;
        return 0;
    case 'F':
        opt->hostfile = optarg;
        return 0;
    case 'P':
        opt->placement_spec = optarg;
        return 0;
    case 'B':
        opt->boot_spec = optarg;
        return 0;
    case 'M':
        if (strcmp(optarg, "slot") == 0 || strcmp(optarg, "host") == 0) {
            opt->map_by = optarg[0] == 's' ? "block" : "round-robin";
            return 0;
        }
        usage_error("--map-by wants slot or host, not '%s'", optarg);
        return -1;
    case 'X':
        opt->no_proxy = true;
        return 0;
    case 'Q':
        opt->proxy_spec = optarg;
        return 0;
    case 'p':
        opt->prefix = true;
        return 0;
    case 'k':
        opt->keep_going = true;
        return 0;
    case 'A':
        opt->allow_unfinalized = true;
        return 0;
    case 'v':
        opt->verbose = true;
        return 0;
    case 'h':
        printf("%s%s", usage_line, help_text);
        return 1;
    case 'V':
        printf("flitrun (flit) %d.%d.%d\n", FLIT_VERSION_MAJOR, FLIT_VERSION_MINOR,
               FLIT_VERSION_PATCH);
        return 1;
    default:
        option_error(c, argv);
        return -1;
    }
}

/* The host list when --hosts gave none: --hostfile, or the allocation. */
static int hosts_elsewhere(struct options *opt)
{
    char why[512];
    if (opt->hostfile && opt->hosts_spec) {
        usage_error("--hosts and --hostfile: one list of hosts, not two");
        return -1;
    }
    if (opt->hosts_spec)
        return 0;
    int rc = opt->hostfile
                 ? fr_hostfile_read(opt->hostfile, &opt->hosts_owned, why, sizeof why)
                 : fr_slurm_hosts(&opt->hosts_owned, why, sizeof why);
    if (rc != 0) {
        usage_error("%s", why);
        return -1;
    }
    opt->hosts_spec = opt->hosts_owned;
    if (opt->hosts_spec && !opt->hostfile && !opt->launch_spec) {
        opt->launch_spec = FR_SLURM_LAUNCH;
        /* a step of one task gets one CPU: a proxy's ranks would share it */
        opt->no_proxy = true;
    }
    if (opt->hosts_spec && !opt->hostfile && opt->verbose)
        say("the Slurm allocation's nodes: %s", opt->hosts_spec);
    return 0;
}

/* --hosts, --launch, --placement, --boot-addr: checked, parsed. 0 or -1. */
static int parse_hosts(struct options *opt)
{
    char why[512];
    struct in_addr a;
    if (hosts_elsewhere(opt) != 0)
        return -1;
    if (opt->boot_spec && inet_pton(AF_INET, opt->boot_spec, &a) != 1) {
        usage_error("--boot-addr wants an IPv4 address, not '%s'", opt->boot_spec);
        return -1;
    }
    opt->boot_ip = opt->boot_spec ? ntohl(a.s_addr) : 0;
    if (opt->map_by && opt->placement_spec) {
        usage_error("--map-by and --placement: one placement, not two");
        return -1;
    }
    if (opt->map_by)
        opt->placement_spec = opt->map_by;
    if (!opt->hosts_spec) {
        if (opt->launch_spec || opt->placement_spec) {
            usage_error("--%s goes with --hosts", opt->launch_spec ? "launch"
                                                  : opt->map_by    ? "map-by"
                                                                   : "placement");
            return -1;
        }
        return 0;
    }
    if (opt->placement_spec && strcmp(opt->placement_spec, "block") != 0 &&
        strcmp(opt->placement_spec, "round-robin") != 0) {
        usage_error("--placement wants block or round-robin, not '%s'",
                    opt->placement_spec);
        return -1;
    }
    if (fr_hosts_parse(opt->hosts_spec, &opt->hosts, why, sizeof why) != 0 ||
        fr_launch_parse(opt->launch_spec, &opt->launch, why, sizeof why) != 0) {
        usage_error("%s", why);
        return -1;
    }
    if (opt->nranks > 0 || !opt->hosts.counted)
        return 0;
    if (opt->hosts.slots > MAX_RANKS) {
        usage_error("the host counts add up to %llu ranks, more than %u",
                    (unsigned long long)opt->hosts.slots, MAX_RANKS);
        return -1;
    }
    opt->nranks = (uint32_t)opt->hosts.slots;
    return 0;
}

/* --proxy: a host's part of a job that flitrun runs elsewhere. */
static int proxy_options(struct options *opt)
{
    char why[256];
    if (opt->hosts_spec) {
        usage_error("--proxy runs one host's ranks: no --hosts or --hostfile");
        return -1;
    }
    if (proxy_parse(opt, why, sizeof why) != 0) {
        usage_error("%s", why);
        return -1;
    }
    return 0;
}

static int place_ranks(struct options *opt)
{
    char why[256];
    enum fr_placement how = opt->placement_spec && opt->placement_spec[0] == 'r'
                                ? FR_PLACE_ROUND_ROBIN
                                : FR_PLACE_BLOCK;
    opt->host_of = calloc(opt->nranks, sizeof *opt->host_of);
    if (!opt->host_of) {
        say("out of memory for %u ranks", opt->nranks);
        return -1;
    }
    int err =
        fr_hosts_place(&opt->hosts, opt->nranks, how, opt->host_of, why, sizeof why);
    if (err)
        usage_error("%s", why);
    return err;
}

void options_free(struct options *opt)
{
    fr_hosts_free(&opt->hosts);
    fr_launch_free(&opt->launch);
    free(opt->hosts_owned);
    opt->hosts_owned = NULL;
    free(opt->host_of);
    opt->host_of = NULL;
    free(opt->here);
    opt->here = NULL;
    free(opt->proxy_host);
    opt->proxy_host = NULL;
}

int parse_options(int argc, char **argv, struct options *opt)
{
    static const struct option longopts[] = {
        {"np", required_argument, NULL, 'n'},
        {"timeout", required_argument, NULL, 'T'},
        {"prefix", no_argument, NULL, 'p'},
        {"keep-going", no_argument, NULL, 'k'},
        {"allow-exit-without-finalize", no_argument, NULL, 'A'},
        {"stdin", required_argument, NULL, 'S'},
        {"hosts", required_argument, NULL, 'H'},
        {"launch", required_argument, NULL, 'L'},
        {"hostfile", required_argument, NULL, 'F'},
        {"placement", required_argument, NULL, 'P'},
        {"boot-addr", required_argument, NULL, 'B'},
        {"map-by", required_argument, NULL, 'M'},
        {"no-proxy", no_argument, NULL, 'X'},
        {"proxy", required_argument, NULL, 'Q'},
        {"verbose", no_argument, NULL, 'v'},
        {"help", no_argument, NULL, 'h'},
        {"version", no_argument, NULL, 'V'},
        {NULL, 0, NULL, 0},
    };
    int c;
    opterr = 0;
    /* '+': the program's own options are not ours */
    while ((c = getopt_long(argc, argv, "+:n:H:pkvh", longopts, NULL)) != -1) {
        int r = parse_one(c, argv, opt);
        if (r != 0)
            return r;
    }
    if (parse_hosts(opt) != 0)
        return -1;
    if (opt->nranks == 0) {
        usage_error("-n N is required (or a count for every host in --hosts)");
        return -1;
    }
    if (opt->hosts_spec && place_ranks(opt) != 0)
        return -1;
    if (opt->proxy_spec && proxy_options(opt) != 0)
        return -1;
    if (optind >= argc) {
        usage_error("no program to run");
        return -1;
    }
    opt->argv = argv + optind;
    const char *v = getenv("FLIT_VERBOSE");
    if (v && atoi(v) > 0)
        opt->verbose = true; /* the ranks will say more; so do we */
    return 0;
}

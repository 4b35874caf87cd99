# SPDX-License-Identifier: BSD-3-Clause
# The README's performance tables, as markdown, from the CSV files of
# bench/readme_tables.sh: DIR/RUN/SOURCE.csv, one RUN directory per round
# of runs, SOURCE one of
#
#   shm          flit-bench on shared memory
#   mpi          bench/mpi_pingpong.c on Open MPI (shared memory)
#   loopback     flit-bench over UDP on loopback (udp_bench.sh --csv)
#   loopback-spin0   the same with FLIT_SPIN_US=0, latency at 8 B only
#   veth         flit-bench across two network namespaces
#   loss-PCT     flit-bench across them under PCT% loss, --no-baselines
#
# Each cell is the median over the runs with the range in brackets; a
# ratio is the median of the runs' own ratios (a figure beside a baseline
# measured in the same run, or flit beside the Open MPI run next to it).
# Variables: machine (the header line), load, command, mpi_version.

BEGIN { FS = "," }

FNR == 1 {
    n = split(FILENAME, part, "/")
    src = part[n]
    sub(/\.csv$/, "", src)
    run = part[n - 1]
    if (!(run in seen_run)) {
        seen_run[run] = 1
        run_list[++nruns] = run
    }
    next
}

{
    k = run SUBSEP src SUBSEP $1 SUBSEP $2
    if (k in have)
        next    # a name measured twice in one run: the first (its section's)
    have[k] = 1
    if ($1 == "bandwidth_long" && $7 ~ /noisy/)
        sweep_noisy[run SUBSEP src] = 1
    val[k] = $3
    base[k] = $5
    rat[k] = $6
    note[k] = $7
}

# ---- statistics over the runs

function sort_n(a, n,    i, j, t) {
    for (i = 2; i <= n; i++)
        for (j = i; j > 1 && a[j - 1] > a[j]; j--) {
            t = a[j]; a[j] = a[j - 1]; a[j - 1] = t
        }
}

# Gathers a field (val, base, rat) of one figure over the runs into got[]:
# how many; noisy_runs and missing_runs say what the other runs had.
function gather(src, name, size, field,    r, k, x, n) {
    n = 0
    noisy_runs = missing_runs = 0
    delete got
    for (r = 1; r <= nruns; r++) {
        k = run_list[r] SUBSEP src SUBSEP name SUBSEP size
        if (!(k in have)) {
            missing_runs++
            continue
        }
        x = field == "val" ? val[k] : field == "base" ? base[k] : rat[k]
        # N1/2 and the peak come from the whole sweep: none from a run
        # where some of its sizes were noisy (the peak may be among them)
        if ((name == "nhalf_long" || name == "peak_bandwidth_long") &&
            ((run_list[r] SUBSEP src) in sweep_noisy)) {
            noisy_runs++
            continue
        }
        if (x == "" || x == "nan" || x == "-nan") {
            if (note[k] ~ /noisy/)
                noisy_runs++
            else
                missing_runs++
            continue
        }
        got[++n] = x + 0
    }
    sort_n(got, n)
    return n
}

# The runs' ratios of two figures, each pair from one run.
function gather_pair(sa, na, za, sb, nb, zb,    r, ka, kb, n) {
    n = 0
    noisy_runs = missing_runs = 0
    delete got
    for (r = 1; r <= nruns; r++) {
        ka = run_list[r] SUBSEP sa SUBSEP na SUBSEP za
        kb = run_list[r] SUBSEP sb SUBSEP nb SUBSEP zb
        if (!(ka in have) || !(kb in have)) {
            missing_runs++
            continue
        }
        if (val[ka] == "" || val[kb] == "" || val[kb] + 0 == 0) {
            if (note[ka] ~ /noisy/ || note[kb] ~ /noisy/)
                noisy_runs++
            else
                missing_runs++
            continue
        }
        got[++n] = val[ka] / val[kb]
    }
    sort_n(got, n)
    return n
}

function median(n) {
    return n % 2 ? got[(n + 1) / 2] : (got[n / 2] + got[n / 2 + 1]) / 2
}

# ---- formatting

function num(x, unit) {
    if (unit == "us")
        return sprintf(x < 1 ? "%.3f" : x < 10 ? "%.2f" : x < 100 ? "%.1f" : "%.0f", x)
    if (unit == "MB/s")
        return x >= 1000 ? sprintf("%.2f", x / 1000) : sprintf("%.0f", x)
    if (unit == "M/s" || unit == "x")
        return sprintf(x < 10 ? "%.2f" : "%.1f", x)
    if (unit == "B")
        return x >= 1024 ? sprintf("%.2f", x / 1024) : sprintf("%.0f", x)
    if (unit == "count")
        return sprintf("%d", x)
    return x
}

function unit_name(x, unit) {
    if (unit == "us") return " µs"
    if (unit == "MB/s") return x >= 1000 ? " GB/s" : " MB/s"
    if (unit == "M/s") return " M/s"
    if (unit == "B") return x >= 1024 ? " KiB" : " B"
    return ""
}

# "0.187 µs (0.172–0.213)", with the runs that gave no figure; got[1..n]
# sorted, noisy_runs and missing_runs from the gathering.
function cell(n, unit,    m, s) {
    if (n == 0)
        return noisy_runs ? "noisy" : "—"
    m = median(n)
    s = num(m, unit)
    if (n > 1 && num(got[1], unit) != num(got[n], unit)) {
        # the range in the median's unit
        if (unit == "MB/s" && (m >= 1000) != (got[1] >= 1000))
            s = s unit_name(m, unit) " (" sprintf("%.2f", got[1] / 1000) "–" \
                sprintf("%.2f", got[n] / 1000) ")"
        else
            s = s unit_name(m, unit) " (" num(got[1], unit) "–" num(got[n], unit) ")"
    } else {
        s = s unit_name(m, unit)
    }
    if (noisy_runs)
        s = s "; noisy in " noisy_runs " of " nruns " runs"
    return s
}

function fig(src, name, size, unit) {
    return cell(gather(src, name, size, "val"), unit)
}

function fig_base(src, name, size, unit) {
    return cell(gather(src, name, size, "base"), unit)
}

function fig_ratio(src, name, size) {
    last_n = gather(src, name, size, "rat")
    last_ratio = last_n ? median(last_n) : ""
    return cell(last_n, "x")
}

function pair_ratio(sa, na, za, sb, nb, zb) {
    last_n = gather_pair(sa, na, za, sb, nb, zb)
    last_ratio = last_n ? median(last_n) : ""
    return cell(last_n, "x")
}

# The median of one figure (for a target on the figure itself); "" if none.
function med(src, name, size,    n) {
    n = gather(src, name, size, "val")
    return n ? median(n) : ""
}

# "≤ 1.5: met"; x "" (no figure): the target alone.
function target(text, op, limit, x) {
    if (x == "")
        return text
    if (op == "<=" && x <= limit || op == "<" && x < limit || \
        op == ">=" && x >= limit || op == ">" && x > limit)
        return text ": met"
    return text ": not met"
}

function row(a, b, c, d, e) {
    printf "| %s | %s | %s | %s | %s |\n", a, b, c, d, e
}

function head5(a, b, c, d, e) {
    row(a, b, c, d, e)
    print "|---|---|---|---|---|"
}

function has(src,    r, k) {
    for (k in have) {
        split(k, r, SUBSEP)
        if (r[2] == src)
            return 1
    }
    return 0
}

# Over a group of sizes: "lo–hi" of the per-size medians of a field, or of
# the per-size median ratios (field "rat").
function span(src, name, sizes, field, unit,    s, ns, i, n, m, lo, hi, k) {
    ns = split(sizes, s, " ")
    k = 0
    for (i = 1; i <= ns; i++) {
        n = gather(src, name, s[i], field)
        if (!n)
            continue
        m = median(n)
        lo = k == 0 || m < lo ? m : lo
        hi = k == 0 || m > hi ? m : hi
        k++
    }
    if (k == 0)
        return "—"
    if (unit == "MB/s" && hi >= 1000 && lo < 1000)
        return sprintf("%.0f MB/s … %.2f GB/s", lo, hi / 1000)
    return num(lo, unit) "–" num(hi, unit) unit_name(hi, unit)
}

function span_pair(sa, na, sb, nb, sizes,    s, ns, i, n, m, lo, hi, k) {
    ns = split(sizes, s, " ")
    k = 0
    for (i = 1; i <= ns; i++) {
        n = gather_pair(sa, na, s[i], sb, nb, s[i])
        if (!n)
            continue
        m = median(n)
        lo = k == 0 || m < lo ? m : lo
        hi = k == 0 || m > hi ? m : hi
        k++
    }
    return k ? num(lo, "x") "–" num(hi, "x") : "—"
}

# N1/2 (field val: flit's, base: the baseline's): a size, or flit-bench's
# reason for none, from the note "flit's reason; baseline: its reason".
function nhalf(src, field,    n, r, k, why, at) {
    n = gather(src, "nhalf_long", "", field)
    if (n)
        return cell(n, "B")
    for (r = 1; r <= nruns; r++) {
        k = run_list[r] SUBSEP src SUBSEP "nhalf_long" SUBSEP ""
        if (!(k in have) || note[k] == "" || ((run_list[r] SUBSEP src) in sweep_noisy))
            continue
        why = note[k]
        at = index(why, "baseline: ")
        if (field == "base")
            why = at ? substr(why, at + 10) : ""
        else
            why = at ? substr(why, 1, at - 1) : why
        sub(/; $/, "", why)
        if (why != "")
            return "none: " why
    }
    return noisy_runs ? "noisy" : "—"
}

# "6.3 µs ×1.05": the median of a figure under loss and the median of its
# runs' ratios to the lossless run of the same round (with_ratio), or "—".
function loss_cell(src, name, size, unit, with_ratio,    n, s) {
    n = gather(src, name, size, "val")
    if (n == 0)
        return noisy_runs ? "noisy" : "—"
    s = num(median(n), unit) unit_name(median(n), unit)
    last_ratio = ""
    if (with_ratio) {
        n = gather_pair(src, name, size, "loss-0", name, size)
        if (n) {
            last_ratio = median(n)
            s = s " ×" num(last_ratio, "x")
        }
    }
    return s
}

# A row of a figure beside the baseline of its own run: label, the figure
# (src, name, size, unit), what precedes and follows the baseline's value,
# and a target (text, operator, limit) checked on the median ratio, or on
# the median figure when on_value.
function std_row(label, src, name, size, unit, bpre, bsuf, ttext, top, tlim, on_value,
                 f, b, r, x) {
    f = fig(src, name, size, unit)
    b = fig_base(src, name, size, unit)
    r = fig_ratio(src, name, size)
    x = last_ratio
    if (on_value)
        x = med(src, name, size)
    row(label, f, bpre b bsuf, r, ttext == "" ? "" : target(ttext, top, tlim, x))
}

# A row of a flit figure beside another source's (Open MPI), pair by pair.
function pair_row(label, src, name, size, unit, osrc, oname, bpre, ttext, top, tlim,
                  f, b, r) {
    f = fig(src, name, size, unit)
    b = bpre fig(osrc, oname, size, unit)
    r = pair_ratio(src, name, size, osrc, oname, size)
    row(label, f, b, r, ttext == "" ? "" : target(ttext, top, tlim, last_ratio))
}

END {
    MiB = 1048576
    mpi = has("mpi")
    printf "Measured %s,\nby `%s`.\n", machine, command
    if (nruns > 1)
        printf "Each cell is the median of %d runs, their range in brackets; a ratio is\n" \
               "the median of the runs' own ratios (a figure beside its baseline measured\n" \
               "in the same run, or beside the Open MPI run next to it: the runs\n" \
               "alternate).", nruns
    else
        printf "One run: a ratio is a figure beside its baseline measured in the same\n" \
               "run, or beside the Open MPI run next to it."
    printf " \"noisy\": a rank lost its CPU to other work in every attempt at\n" \
           "that figure. Load average when the runs began: %s.", load
    if (mpi_version != "")
        printf "\n%s: pml ob1, btl self,vader.", mpi_version
    printf "\n\n"

    print "**Shared memory** (`make bench`, `make bench-compare`)"
    print ""
    head5("figure", "flit", "baseline", "ratio", "target")
    std_row("8 B short AM, one way", "shm", "latency_short", 8, "us",
            "raw flag ping-pong ", "", "≤ 1.5", "<=", 1.5)
    std_row("same, beside one shared line", "shm", "latency_short_line", 8, "us",
            "one-line ping-pong ", "")
    if (mpi)
        pair_row("same, beside Open MPI", "shm", "latency_short", 8, "us", "mpi", "latency",
                 "Open MPI ", "below Open MPI", "<", 1)
    std_row("8 B message rate", "shm", "rate_short", 8, "M/s", "raw ring ", "",
            "> 10 M/s", ">", 10, 1)
    if (mpi)
        pair_row("same, beside Open MPI", "shm", "rate_short", 8, "M/s", "mpi", "rate",
                 "Open MPI ", "")
    std_row("long AM, 1 MiB", "shm", "bandwidth_long", MiB, "MB/s", "memcpy ", "",
            "≥ 0.80", ">=", 0.8)
    row("long AM N½", nhalf("shm", "val"), "memcpy " nhalf("shm", "base"), "", "")
    std_row("long AM peak bandwidth", "shm", "peak_bandwidth_long", "", "MB/s", "memcpy ", "")

    print ""
    print "**UDP** (`make bench-udp`; loopback: `FLIT_TRANSPORT=udp`, 65507-byte"
    print "datagrams; veth: one rank per namespace, 1472-byte datagrams; the raw"
    print "baseline batches and spins as flit does, see bench/bench_udp.h)"
    print ""
    head5("figure", "flit", "raw UDP, same processes", "ratio", "target")
    std_row("8 B one way, polling, loopback", "loopback", "latency_short", 8, "us", "",
            " (spinning `recvfrom`)", "≤ 1.2", "<=", 1.2)
    std_row("8 B one way, blocking (`flit_wait`), loopback", "loopback",
            "latency_short_wait", 8, "us", "", " (blocking `recvfrom`)", "≤ 1.2", "<=", 1.2)
    std_row("same, `FLIT_SPIN_US=0`", "loopback-spin0", "latency_short_wait", 8, "us", "",
            "", "≤ 1.2", "<=", 1.2)
    std_row("8 B one way, polling, veth", "veth", "latency_short", 8, "us", "", "")
    std_row("8 B message rate (packed), loopback", "loopback", "rate_short", 8, "M/s", "",
            " (one datagram each)", "≥ 1 M/s", ">=", 1, 1)
    std_row("8 B message rate (packed), veth", "veth", "rate_short", 8, "M/s", "", "",
            "≥ 1 M/s", ">=", 1, 1)
    std_row("long AM, 1 MiB, loopback", "loopback", "bandwidth_long", MiB, "MB/s", "", "",
            "≥ 0.85", ">=", 0.85)
    std_row("long AM, 1 MiB, veth", "veth", "bandwidth_long", MiB, "MB/s", "", "",
            "≥ 0.85", ">=", 0.85)

    print ""
    print "**Under loss** (veth; nftables drops the given share of the UDP frames each"
    print "host receives, data and acknowledgements alike; every 8-byte round trip"
    print "timed on its own, `flit-bench --percentiles`; medians of the runs, and"
    print "× their ratio to the 0% run)"
    print ""
    print "| loss | 8 B one way: median | 99th percentile | mean | round trips timed | " \
          "1 MiB goodput |"
    print "|---|---|---|---|---|---|"
    split("0 1 5 10", pcts, " ")
    for (i = 1; i <= 4; i++) {
        s = "loss-" pcts[i]
        clean = gather(s, "latency_short_p50", 8, "val")
        label = pcts[i] "%"
        if (clean < nruns)
            label = label " (latency: " clean " of " nruns " runs clean)"
        p50 = loss_cell(s, "latency_short_p50", 8, "us", i > 1)
        p99 = loss_cell(s, "latency_short_p99", 8, "us", i > 1)
        mean = loss_cell(s, "latency_short_mean", 8, "us", i > 1)
        cnt = loss_cell(s, "latency_short_samples", 8, "count", 0)
        bw = loss_cell(s, "bandwidth_long", MiB, "MB/s", i > 1)
        if (pcts[i] == 5 && last_ratio != "")
            bw = bw " (target ≥ 0.5: " (last_ratio >= 0.5 ? "met" : "not met") ")"
        printf "| %s | %s | %s | %s | %s | %s |\n", label, p50, p99, mean, cnt, bw
    }

    print ""
    print "**Streams and tagged messaging** (shared memory; the stream and tagged"
    print "figures of one size are measured in turn, three times; `make bench-compare`)"
    print ""
    head5("figure", "flit", "baseline", "ratio", "target")
    std_row("8 B stream, one piece, one way", "shm", "latency_stream", 8, "us",
            "short AM answered the same way (from the loop) ", "", "≤ 1.1", "<=", 1.1)
    if (mpi)
        pair_row("8 B tagged send/recv, one way", "shm", "latency_tagged", 8, "us", "mpi",
                 "latency", "Open MPI ", "below Open MPI", "<", 1)
    small = "16 32 64 128"
    mid = "256 512 1024 2048 4096 8192 16384 32768"
    big = "65536 131072 262144 524288 1048576 2097152 4194304"
    row("tagged bandwidth, 16–128 B", span("shm", "bandwidth_tagged", small, "val", "MB/s"),
        "the stream of the same size", span("shm", "bandwidth_tagged", small, "rat", "x"),
        "≥ 0.90")
    row("tagged bandwidth, 256 B–32 KiB", span("shm", "bandwidth_tagged", mid, "val", "MB/s"),
        "the stream of the same size", span("shm", "bandwidth_tagged", mid, "rat", "x"),
        "≥ 0.90")
    row("tagged bandwidth, 64 KiB–4 MiB", span("shm", "bandwidth_tagged", big, "val", "MB/s"),
        "the stream of the same size", span("shm", "bandwidth_tagged", big, "rat", "x"),
        "≥ 0.97")
    if (mpi) {
        row("tagged bandwidth beside Open MPI, 16 B and 1 KiB",
            span("shm", "bandwidth_tagged", "16 1024", "val", "MB/s"),
            "Open MPI " span("mpi", "bandwidth", "16 1024", "val", "MB/s"),
            span_pair("shm", "bandwidth_tagged", "mpi", "bandwidth", "16 1024"), "")
        row("tagged bandwidth beside Open MPI, 64 KiB and 1 MiB",
            span("shm", "bandwidth_tagged", "65536 1048576", "val", "MB/s"),
            "Open MPI " span("mpi", "bandwidth", "65536 1048576", "val", "MB/s"),
            span_pair("shm", "bandwidth_tagged", "mpi", "bandwidth", "65536 1048576"), "")
    }
    std_row("stream bandwidth, 1 MiB", "shm", "bandwidth_stream", MiB, "MB/s", "memcpy ", "")
    std_row("stream bandwidth into the receiver's segment, 1 MiB", "shm",
            "bandwidth_stream_placed", MiB, "MB/s", "memcpy ", "", "≥ 0.9", ">=", 0.9)

    print ""
    print "**One-sided communication** (`flit-bench --only rma`; shared memory, and"
    print "over UDP on loopback with `FLIT_TRANSPORT=udp`)"
    print ""
    head5("figure", "flit", "baseline", "ratio", "target")
    std_row("shm 8 B put, visible at the target", "shm", "latency_put", 8, "us",
            "raw flag ping-pong ", "", "≤ 1.5", "<=", 1.5)
    std_row("shm 8 B put with notification", "shm", "latency_put_notify", 8, "us",
            "raw flag ping-pong ", "")
    row("shm 8 B get (blocking)", fig("shm", "latency_get", 8, "us"), "", "", "")
    std_row("shm put bandwidth, 1 MiB", "shm", "bandwidth_put", MiB, "MB/s", "memcpy ", "",
            "≥ 0.9", ">=", 0.9)
    std_row("UDP put bandwidth, 1 MiB", "loopback", "bandwidth_put", MiB, "MB/s",
            "long AM ", "", "≥ 0.9", ">=", 0.9)
    std_row("UDP 8 B put, visible at the target", "loopback", "latency_put", 8, "us",
            "short AM ", "")
    std_row("UDP 8 B put with notification", "loopback", "latency_put_notify", 8, "us",
            "short AM ", "")
    row("UDP 8 B get (blocking)", fig("loopback", "latency_get", 8, "us"), "", "", "")
}

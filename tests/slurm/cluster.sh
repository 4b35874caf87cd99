#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# cluster.sh start|stop|env DIR
# A one-node Slurm cluster on localhost for the slurm_* tests: munged, then
# slurmctld and slurmd from a slurm.conf generated under DIR (no cgroups,
# 8 CPUs declared so that 8 tasks fit on a small machine, its own ports,
# sockets, state and logs under DIR; nothing under /etc, /run or /var).
#
#   start  skips (77, naming the Debian packages) where it cannot run: not
#          root, a package missing. Otherwise waits until the node takes
#          jobs (srun of /bin/true) and writes DIR/env, which the tests read
#          (SLURM_CONF and the munge socket); fails with the daemons' logs
#          if it never does. Whatever it started is stopped on failure.
#   stop   stops the daemons by the pids they wrote (also when start failed
#          halfway), waits for them to be gone, and removes DIR. Safe to run
#          twice, or after nothing was started.
set -u
cmd=$1 dir=$2
# The daemons change directory: every path in slurm.conf is absolute.
case $dir in /*) ;; *) dir=$(pwd)/$dir ;; esac

log() { echo "slurm cluster: $*"; }

pids() {
    for f in "$dir"/slurmd.pid "$dir"/slurmctld.pid "$dir"/munged.pid; do
        [ -s "$f" ] && cat "$f" 2>/dev/null
    done
}

# Alive and not a zombie (a container's init may never reap the daemons).
running() {
    [ -r "/proc/$1/stat" ] && ! grep -q '^[0-9]* (.*) Z' "/proc/$1/stat" 2>/dev/null
}

stop() {
    [ -d "$dir" ] || return 0
    # Jobs first (their steps end with them), then the daemons, munged last.
    if [ -s "$dir/slurmctld.pid" ]; then
        SLURM_CONF=$dir/slurm.conf scancel --quiet --user=root >/dev/null 2>&1 || true
        i=0
        while [ $i -lt 50 ] && [ -n "$(SLURM_CONF=$dir/slurm.conf squeue -h 2>/dev/null)" ]; do
            sleep 0.2
            i=$((i + 1))
        done
    fi
    # The pids first: a daemon removes its pid file as it begins to stop.
    started=$(pids)
    for p in $started; do
        kill -TERM "$p" 2>/dev/null || true
    done
    i=0
    while [ $i -lt 100 ]; do
        alive=
        for p in $started; do
            running "$p" && alive="$alive $p"
        done
        [ -z "$alive" ] && break
        sleep 0.1
        i=$((i + 1))
    done
    for p in $alive; do
        log "pid $p did not stop in 10 s: killed"
        kill -KILL "$p" 2>/dev/null || true
    done
    # Whatever the daemons started that outlived them (a slurmstepd and its
    # tasks): they all inherited this cluster's SLURM_CONF.
    for e in $(grep -lzx "SLURM_CONF=$dir/slurm.conf" /proc/[0-9]*/environ 2>/dev/null); do
        p=${e#/proc/}
        p=${p%/environ}
        [ "$p" = $$ ] || kill -KILL "$p" 2>/dev/null
    done
    rm -rf "$dir"
}

free_port() {
    python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

write_conf() {
    host=$(hostname -s)
    cat >"$dir/slurm.conf" <<CONF
ClusterName=flittest
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=$(free_port)
SlurmdPort=$(free_port)
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$dir/munge.sock
StateSaveLocation=$dir/ctld
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/slurmctld.log
SlurmdLogFile=$dir/slurmd.log
SlurmdParameters=config_overrides
ProctrackType=proctrack/pgid
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
MpiDefault=none
ReturnToService=2
KillWait=2
InactiveLimit=0
MessageTimeout=20
NodeName=$host NodeAddr=127.0.0.1 CPUs=8 Sockets=1 CoresPerSocket=8 ThreadsPerCore=1 RealMemory=1000 State=UNKNOWN
PartitionName=flit Nodes=$host Default=YES MaxTime=10 State=UP OverSubscribe=FORCE:4
CONF
}

start() {
    if [ "$(id -u)" -ne 0 ]; then
        log "SKIP: the cluster's daemons run as root, and this is not"
        exit 77
    fi
    missing=
    for t in slurmctld:slurm-wlm slurmd:slurm-wlm srun:slurm-wlm munged:munge \
             python3:python3; do
        command -v "${t%%:*}" >/dev/null 2>&1 || missing="$missing ${t#*:}"
    done
    if [ -n "$missing" ]; then
        log "SKIP: not installed (Debian):$missing"
        exit 77
    fi
    stop
    mkdir -p "$dir/ctld" "$dir/spool" "$dir/munge"
    chmod 700 "$dir/munge"
    dd if=/dev/urandom of="$dir/munge/key" bs=1024 count=1 2>/dev/null
    chmod 400 "$dir/munge/key"
    # munged refuses root unless forced; everything it touches is under dir.
    munged --force --socket="$dir/munge.sock" --key-file="$dir/munge/key" \
        --pid-file="$dir/munged.pid" --log-file="$dir/munged.log" \
        --seed-file="$dir/munge/seed" || { log "munged did not start"; return 1; }
    write_conf
    cat >"$dir/env" <<ENV
SLURM_CONF=$dir/slurm.conf
export SLURM_CONF
ENV
    SLURM_CONF=$dir/slurm.conf
    export SLURM_CONF
    slurmctld -i || { log "slurmctld did not start"; return 1; }
    slurmd -N "$(hostname -s)" || { log "slurmd did not start"; return 1; }
    i=0
    while ! timeout 10 srun -N1 -n1 -t 1 /bin/true >/dev/null 2>&1; do
        i=$((i + 1))
        if [ $i -ge 30 ]; then
            log "the node took no job in 30 tries"
            return 1
        fi
        sleep 1
    done
    log "up in $dir"
}

case $cmd in
start)
    trap 'stop' INT TERM
    if ! start; then
        for f in "$dir"/*.log; do
            [ -f "$f" ] && { echo "---- $f"; tail -n 30 "$f"; }
        done
        stop
        exit 1
    fi
    ;;
stop) stop ;;
*)
    echo "usage: $0 start|stop DIR" >&2
    exit 2
    ;;
esac

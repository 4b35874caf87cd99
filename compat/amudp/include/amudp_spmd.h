/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * AMUDP's SPMD job start-up, on flit (library flit-amudp).
 *
 * The program calls AMUDP_SPMDStartup first thing in main. Typed as
 *
 *     prog NPROCS [SPAWNFN] args...    (SPAWNFN: L local, S ssh, C custom)
 *
 * the process is the master: it starts NPROCS workers through flitrun
 * (L: on this host; S: on the hosts in SSH_SERVERS; C: on the hosts in
 * SSH_SERVERS through the command template in CSPAWN_CMD, see flitrun
 * --launch), serves as their console, never returns, and exits with the
 * job's status: AMUDP_SPMDExit's code, 255 when a worker died (AMUDP's
 * status for a lost worker). NPROCS is there when the program passes
 * nproc 0, SPAWNFN (either case) when it passes no spawnfn; as in AMUDP
 * the letter may be left out, and then AMUDP_SPAWNFN gives it, else S. The
 * flitrun used is $AMUDP_FLITRUN, else the one installed beside this
 * library (or built beside it), else flitrun on $PATH. Each worker runs
 * `prog args...`, argv[0] as the master got it, and gets back from the
 * same call a bundle and an endpoint ready for use: the translation table
 * holds every worker at its rank, resources are set, no segment. Started
 * by `flitrun -n N prog args...` (or mpirun, srun), the process is a
 * worker at once.
 */
#ifndef __AMUDP_SPMD_H
#define __AMUDP_SPMD_H

#include <amudp.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * Starts workers on the master: nonzero on success. One of the library's
 * below, or the program's own: it gets the workers' command line (argv[0]
 * the program, as the master was given it, then hidden arguments naming
 * the master, then the program's) and must start nproc processes of it,
 * anywhere they reach this host over TCP; they call AMUDP_SPMDStartup and
 * become the job's workers. AMUDP 3.16 passes a fourth argument, the
 * variables to set for the workers; flit needs none (its hidden arguments
 * carry all), and keeps the three-argument type.
 */
typedef int (*amudp_spawnfn_t)(int nproc, int argc, char **argv);

/*
 * nproc 0: read from argv[1]; spawnfn NULL: read the letter that follows.
 * networkdepth 0: the default. networkpid: the same 64-bit value on every
 * worker of the job, different for each job (may be NULL). argc and argv
 * come back without the start-up arguments.
 */
extern int AMUDP_SPMDStartup(int *argc, char ***argv, int nproc, int networkdepth,
                             amudp_spawnfn_t spawnfn, uint64_t *networkpid, eb_t *eb,
                             ep_t *ep);
/* Ends the whole job with exitcode, after the exit callback and flushing
   stdio; any worker may call it alone, also from a signal handler. After
   AM_Terminate it ends this worker alone (the others ended theirs). */
extern int AMUDP_SPMDExit(int exitcode);

typedef void (*amudp_exitcallback_t)(int);
extern int AMUDP_SPMDSetExitCallback(amudp_exitcallback_t fp);
/* What finally ends this process (default: _exit). */
extern void (*AMUDP_SPMDkillmyprocess)(int);

extern int AMUDP_SPMDIsWorker(char **argv);
extern int AMUDP_SPMDNumProcs(void);
extern int AMUDP_SPMDMyProc(void);
/* Returns when every worker has called it; polls the SPMD endpoint
   meanwhile, so handlers run, and waits as AMUDP_PoliteSync says. Its
   messages, and AMUDP_SPMDAllGather's, travel on the SPMD endpoint with
   the tags AMUDP_SPMDStartup set: a program that changes that endpoint's
   tag must keep every worker's translation of it current, as for its own
   messages, or these calls wait for messages the endpoint refuses. */
extern int AMUDP_SPMDBarrier(void);
/* The master's environment as it was when the job started; NULL when the
   variable was not set, or before AMUDP_SPMDStartup. */
extern const char *AMUDP_SPMDgetenvMaster(const char *keyname);
/* dest receives len bytes from every worker, in rank order. */
extern int AMUDP_SPMDAllGather(void *source, void *dest, size_t len);

/* The spawn functions of the SPAWNFN letters, to pass as spawnfn. */
extern int AMUDP_SPMDLocalSpawn(int nproc, int argc, char **argv);
extern int AMUDP_SPMDSshSpawn(int nproc, int argc, char **argv);
extern int AMUDP_SPMDCustomSpawn(int nproc, int argc, char **argv);

typedef struct {
    char abbrev;
    const char *desc;
    amudp_spawnfn_t fnptr;
} amudp_spawnfn_desc_t;
/* Ends with an entry whose abbrev is 0. */
extern amudp_spawnfn_desc_t const AMUDP_Spawnfn_Desc[];

/*
 * AMUDP's checkpoint of the whole job into dir (with BLCR there): 0 when
 * the checkpoint was taken and the job goes on, 1 when the job was
 * restarted from one, -1 on failure. flit offers no checkpointing: every
 * call answers -1 with errno ENOTSUP (EINVAL for a NULL dir), and the job
 * goes on untouched.
 */
extern int AMUDP_SPMDCheckpoint(eb_t *eb, ep_t *ep, const char *dir);

/* standardized AM-2 extensions */
#define AMX_SPMDgetenvMaster    AMUDP_SPMDgetenvMaster
#define AMX_SPMDBarrier         AMUDP_SPMDBarrier
#define AMX_SPMDNumProcs        AMUDP_SPMDNumProcs
#define AMX_SPMDMyProc          AMUDP_SPMDMyProc
#define AMX_SPMDExit            AMUDP_SPMDExit
#define AMX_SPMDSetExitCallback AMUDP_SPMDSetExitCallback
#define AMX_SPMDkillmyprocess   AMUDP_SPMDkillmyprocess
#define AMX_SPMDIsWorker        AMUDP_SPMDIsWorker
#define AMX_SPMDAllGather       AMUDP_SPMDAllGather
#define AMX_SPMDStartup(pargc, pargv, networkdepth, pnetworkpid, peb, pep)               \
    AMUDP_SPMDStartup((pargc), (pargv), 0, (networkdepth), NULL, (pnetworkpid), (peb),   \
                      (pep))

#ifdef __cplusplus
}
#endif

#endif /* __AMUDP_SPMD_H */

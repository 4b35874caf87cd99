/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * VMMC's basic library on flit (library flit-vmmc): virtual memory-mapped
 * communication with deliberate update, after Dubnicki, Bilas, Li and
 * Philbin, "Virtual Memory-Mapped Communication on Myrinet".
 *
 * A receiver exports a receive buffer under a name, naming the nodes that
 * may import it; a sender imports it, and gets back an address in its
 * destination proxy space: a range of its own address space, reserved and
 * backed by nothing, that stands for the remote buffer and serves only to
 * name destinations. SendMsg(srcAddr, destAddr, nbytes) then moves nbytes
 * from the sender's memory into the remote buffer at the place destAddr
 * stands for: no receive call, any length up to the buffer's end (the
 * short and long paths are the library's choice). SendMsgNotify does the
 * same and then runs the exporter's notification handler there, after the
 * data is in its memory. The receiver checks bounds and permissions
 * itself; a proxy address outside every import is an error, never a fault.
 *
 * The names of this header other than SendMsg are flit's spelling: the
 * paper names the operations, not their C declarations (docs/compat.md, "VMMC").
 */
#ifndef FLIT_COMPAT_VMMC_H
#define FLIT_COMPAT_VMMC_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

#define VMMC_SUCCESS       0
#define VMMC_ERR_NOT_INIT  (-1) /* VMMC_Init not called */
#define VMMC_ERR_BAD_ARG   (-2) /* NULL buffer, bad node, bad length */
#define VMMC_ERR_PROXY     (-3) /* proxy range outside every import */
#define VMMC_ERR_DENIED    (-4) /* the exporter did not allow this node */
#define VMMC_ERR_NO_BUFFER (-5) /* no buffer exported by that name (any more) */
#define VMMC_ERR_IN_USE    (-6) /* a name exported twice */
#define VMMC_ERR_SYSTEM    (-7) /* flit or the OS failed (message on stderr) */

/* Runs on the exporter once a notified message's data is in its buffer. */
typedef void (*VMMC_NotifyHandler)(int name, int sender, size_t offset, size_t nbytes);

/* Collective: every node calls it first. */
extern int VMMC_Init(void);
/* Collective: unexports and unimports everything, and ends flit's job for
   this node (when VMMC_Init joined it): the last call. A program that
   returns from main (or exits with 0) without it gets it at exit. */
extern int VMMC_Finalize(void);
extern int VMMC_MyNode(void);
extern int VMMC_NumNodes(void);

/*
 * Exports [buf, buf + nbytes) under name (>= 0, unique on this node) to the
 * nimporters nodes in importers (0: every node). handler (may be NULL)
 * runs for messages sent with SendMsgNotify.
 */
extern int VMMC_Export(int name, void *buf, size_t nbytes, const int *importers,
                       int nimporters, VMMC_NotifyHandler handler);
extern int VMMC_Unexport(int name);

/*
 * Imports node's buffer name into the destination proxy space: *proxy is
 * where it starts there, *nbytes its length. On this host it is granted
 * without the exporter's help (it may be computing, or spinning on its
 * buffer: SendMsg's data lands there all the same). From another host it
 * waits for the exporter to answer (it must make progress: VMMC_Poll, or
 * any call of this library), and so does the data of SendMsg, unless the
 * exporter runs flit's progress thread (FLIT_PROGRESS_THREAD=1), which
 * then does both, and runs notification handlers, on that thread.
 */
extern int VMMC_Import(int node, int name, void **proxy, size_t *nbytes);
extern int VMMC_Unimport(void *proxy);

/* Deliberate update: returns when srcAddr may be reused. */
extern int SendMsg(void *srcAddr, void *destAddr, size_t nbytes);
extern int SendMsgNotify(void *srcAddr, void *destAddr, size_t nbytes);
/* Returns when every message sent to node so far is in its memory. */
extern int VMMC_Flush(int node);

/* Runs the notification handlers of what has arrived, and answers the
   import requests of other nodes. */
extern int VMMC_Poll(void);

#ifdef __cplusplus
}
#endif

#endif /* FLIT_COMPAT_VMMC_H */

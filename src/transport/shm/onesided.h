/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The shared-memory transport's one-sided operations (transport.h's
 * struct fl_tp_onesided), and what they and shm.c share.
 */
#ifndef FL_TRANSPORT_SHM_ONESIDED_H
#define FL_TRANSPORT_SHM_ONESIDED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "transport/transport.h"

extern const struct fl_tp_onesided fl_shm_onesided;

/* Cross-memory attach of all len bytes between buf and pid's memory at
   raddr (write: into pid's memory): 0, or the -errno that stopped it
   (-ESRCH: the process is gone). */
int fl_shm_cma_copy(pid_t pid, bool write, uint64_t raddr, void *buf, size_t len);

/* shm.c: peer's process id while it is connected and alive, else 0. */
uint32_t fl_shm_peer_pid(struct fl_tp_ep *t, uint32_t peer);

/* shm.c: the name in /dev/shm of rank's file with suffix (this endpoint's
   job and endpoint index); rank FL_SHM_SELF: ours. */
#define FL_SHM_SELF UINT32_MAX
void fl_shm_file_name(struct fl_tp_ep *t, uint32_t rank, const char *suffix, char *buf,
                      size_t len);

#endif /* FL_TRANSPORT_SHM_ONESIDED_H */

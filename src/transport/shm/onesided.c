/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * One-sided operations of the shared-memory transport (transport.h): memory
 * that the ranks of this host map, as files in /dev/shm, and cross-memory
 * attach (process_vm_readv / process_vm_writev) to any address of a peer's
 * process. FLIT_SHM_BULK chooses: auto, both; cma, data by attach only
 * (control words still mapped); copy, neither (the RMA layer then moves
 * its data in packets through the rings).
 *
 * Names: /flit-<job>-<rank>-<endpoint>-rma<key>. A file stays in /dev/shm
 * until ->mem_free (at the latest when the endpoint goes): an importer
 * opens it by name, and its mapping outlives the name. flitrun removes
 * what a crashed job left behind.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "transport/shm/onesided.h"

#include "platform/os.h"
#include "transport/shm/config.h"
#include "util/config.h"
#include "util/log.h"

static void mem_name(struct fl_tp_ep *t, uint32_t rank, uint64_t key, char *buf,
                     size_t len)
{
    char suffix[32];
    snprintf(suffix, sizeof suffix, "-rma%llu", (unsigned long long)key);
    fl_shm_file_name(t, rank, suffix, buf, len);
}

static bool os_reaches(struct fl_tp_ep *t, uint32_t peer)
{
    return fl_shm_cfg.bulk != FL_BULK_COPY && fl_shm_peer_pid(t, peer) != 0;
}

static flit_status os_mem_alloc(struct fl_tp_ep *t, uint64_t key, size_t len,
                                void **addr_out)
{
    char name[96];
    int fd;
    mem_name(t, FL_SHM_SELF, key, name, sizeof name);
    int err = fl_shm_create(name, len, &fd, addr_out);
    if (!err) {
        close(fd); /* the mapping and the name are all peers need */
        return FLIT_OK;
    }
    bool short_of = fl_os_shortage(err);
    /* Its pages are reserved at creation: a full /dev/shm fails here, never
       as a SIGBUS later. */
    if (short_of)
        fl_error("shm: no room for %zu bytes of shared memory in /dev/shm: %s", len,
                 strerror(-err));
    else
        fl_info("shm: cannot make %zu bytes of shared memory in /dev/shm: %s", len,
                strerror(-err));
    return short_of ? FLIT_ERR_NO_MEMORY : FLIT_ERR_SYSTEM;
}

static void os_mem_free(struct fl_tp_ep *t, uint64_t key, void *addr, size_t len)
{
    char name[96];
    mem_name(t, FL_SHM_SELF, key, name, sizeof name);
    munmap(addr, len);
    fl_shm_unlink(name);
}

/* Maps [off, off + len) of the file fd, when it holds that much. */
static int map_fd(int fd, uint64_t off, size_t len, bool write, void **addr_out)
{
    struct stat sb;
    if (fstat(fd, &sb) != 0)
        return -errno;
    if (sb.st_size < 0 || (uint64_t)sb.st_size < off + len)
        return -EINVAL; /* not made yet, or not what its owner said */
    void *mem =
        mmap(NULL, len, PROT_READ | (write ? PROT_WRITE : 0), MAP_SHARED, fd, (off_t)off);
    if (mem == MAP_FAILED)
        return -errno;
    *addr_out = mem;
    return 0;
}

static flit_status os_map(struct fl_tp_ep *t, uint32_t peer, uint64_t key, uint64_t off,
                          size_t len, unsigned flags, void **addr_out)
{
    if (!os_reaches(t, peer) ||
        ((flags & FL_TP_MAP_DATA) && fl_shm_cfg.bulk != FL_BULK_AUTO))
        return FLIT_ERR_NOT_SUPPORTED;
    bool write = (flags & FL_TP_MAP_WRITE) != 0;
    char name[96];
    mem_name(t, peer, key, name, sizeof name);
    int fd = shm_open(name, (write ? O_RDWR : O_RDONLY) | O_CLOEXEC, 0);
    int err = fd < 0 ? -errno : map_fd(fd, off, len, write, addr_out);
    if (fd >= 0)
        close(fd);
    if (!err)
        return FLIT_OK;
    fl_debug("shm: cannot map rank %u's %s: %s", peer, name, strerror(-err));
    return fl_os_shortage(err) ? FLIT_ERR_NO_MEMORY : FLIT_ERR_NOT_SUPPORTED;
}

static void os_unmap(struct fl_tp_ep *t, void *addr, size_t len)
{
    (void)t;
    munmap(addr, len);
}

int fl_shm_cma_copy(pid_t pid, bool write, uint64_t raddr, void *buf, size_t len)
{
    size_t done = 0;
    while (done < len) {
        uint8_t *b = (uint8_t *)buf + done;
        ssize_t n = write ? fl_cma_write(pid, raddr + done, b, len - done)
                          : fl_cma_read(pid, b, raddr + done, len - done);
        if (n > 0)
            done += (size_t)n;
        else if (n != -EINTR)
            return n ? (int)n : -EFAULT;
    }
    return 0;
}

/* Cross-memory attach to peer: every address of its process is in reach,
   so the key is not needed. */
static flit_status cma(struct fl_tp_ep *t, uint32_t peer, bool write, uint64_t raddr,
                       void *buf, size_t len)
{
    pid_t pid = (pid_t)fl_shm_peer_pid(t, peer);
    if (!pid)
        return FLIT_ERR_PEER_DOWN;
    int err = fl_shm_cma_copy(pid, write, raddr, buf, len);
    if (err == -ESRCH)
        return FLIT_ERR_PEER_DOWN;
    if (err)
        fl_info("shm: cross-memory attach to rank %u failed (%s); its regions are "
                "reached through packets",
                peer, strerror(-err));
    return err ? FLIT_ERR_NOT_SUPPORTED : FLIT_OK;
}

static flit_status os_put(struct fl_tp_ep *t, uint32_t peer, uint64_t key, uint64_t raddr,
                          const void *src, size_t len)
{
    (void)key;
    return cma(t, peer, true, raddr, (void *)src, len); /* only read from */
}

static flit_status os_get(struct fl_tp_ep *t, uint32_t peer, uint64_t key, uint64_t raddr,
                          void *dst, size_t len)
{
    (void)key;
    return cma(t, peer, false, raddr, dst, len);
}

/* The smallest message pulled without FLIT_SHM_RNDV_MIN_KB. Below it the
   two ways cost alike or the rings win: a pull makes its sender wait for
   the answer, which a window of sends cannot overlap (16 KiB, pulled
   where measured cheaper: bandwidth 0.75 of the rings', latency 1.07). */
#define RNDV_MIN (64u << 10)

/* Pulling a large message by cross-memory attach: FLIT_SHM_RNDV says
   whether, and under auto the receiver chooses by measuring. */
static size_t os_pull_min(struct fl_tp_ep *t, uint32_t peer, bool *measure)
{
    *measure = fl_shm_cfg.rndv == FL_RNDV_AUTO;
    if (fl_shm_cfg.bulk == FL_BULK_COPY || !fl_shm_peer_pid(t, peer) ||
        fl_shm_cfg.rndv == FL_RNDV_OFF)
        return 0;
    return fl_shm_cfg.rndv_min ? (size_t)fl_shm_cfg.rndv_min : RNDV_MIN;
}

const struct fl_tp_onesided fl_shm_onesided = {
    .reaches = os_reaches,
    .mem_alloc = os_mem_alloc,
    .mem_free = os_mem_free,
    .map = os_map,
    .unmap = os_unmap,
    .put = os_put,
    .get = os_get,
    .pull_min = os_pull_min,
};

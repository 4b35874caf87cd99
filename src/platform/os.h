/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The operating-system corner: everything that calls Linux directly for
 * shared files, process handles, cross-memory attach, wake-up sockets,
 * clocks and randomness. Each wrapper returns 0 or -errno; callers turn that
 * into a flit_status and log it once with context.
 */
#ifndef FL_PLATFORM_OS_H
#define FL_PLATFORM_OS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

static inline uint64_t fl_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Cheap pause for spin loops. */
static inline void fl_cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield" ::: "memory");
#endif
}

int fl_random_bytes(void *buf, size_t len);

/* An identity shared by processes that can use the shared-memory transport
   together: boot id, IPC and network namespaces, /dev/shm device. */
int fl_host_id(uint8_t id[16]);

/* Names a job's shared object: "/flit-<job hex16>-<rank>-<ep><suffix>". */
void fl_shm_name(char *buf, size_t len, uint64_t job_id, uint32_t rank, uint32_t ep,
                 const char *suffix);

/* Shared files in /dev/shm. create: O_EXCL, sized, its space reserved (a
   full /dev/shm is -ENOSPC here, never a SIGBUS later), mapped read-write. */
int fl_shm_create(const char *name, size_t size, int *fd_out, void **addr_out);
/* The same, unmapped, with only its first reserve bytes reserved (a file
   whose other parts are taken by whoever first needs them). */
int fl_shm_create_fd(const char *name, size_t size, size_t reserve, int *fd_out);
/* Takes the pages of [off, off + len) of a shared file: 0, -ENOSPC or
   -ENOMEM when /dev/shm or memory is short. 0 where the filesystem cannot
   reserve (the file stays sparse). */
int fl_shm_reserve(int fd, uint64_t off, uint64_t len);
/* Whether a reservation found a filesystem that cannot make one. */
bool fl_shm_sparse(void);
/* Takes the pages of the mapped shared memory [addr, addr + len) (the pages
   around it, whole) through the mapping, as fl_shm_reserve does through the
   file: 0, -ENOSPC when /dev/shm or memory is short (never a SIGBUS),
   -EINVAL where the kernel cannot (before Linux 5.14). */
int fl_shm_populate(void *addr, size_t len);
/* Whether fl_shm_populate works here (asked once). */
bool fl_shm_can_populate(void);
/* Whether a -errno is this process's own shortage (descriptors, memory,
   room in /dev/shm), not its peer's doing: the call that met it fails with
   a status its caller may retry, and no peer is blamed. */
bool fl_os_shortage(int err);
int fl_shm_attach(const char *name, size_t *size_out, void **addr_out);
int fl_shm_map_fd(int fd, size_t size, void **addr_out);
int fl_shm_unlink(const char *name);
/* Removes /dev/shm/<prefix>* (leftovers of a crashed job). Returns count. */
int fl_shm_unlink_prefix(const char *prefix);

/* A pollable handle on another process; readable once it has exited. */
int fl_pidfd_open(pid_t pid);
/* A process's start time (clock ticks since boot, /proc/PID/stat), which
   with its pid names it for good: a pid may be reused, the pair not. 0, or
   -ESRCH when there is no such process or it has exited (a zombie). */
int fl_proc_start(pid_t pid, uint64_t *start);

/* Cross-memory attach: copy into / out of another process's memory. */
ssize_t fl_cma_write(pid_t pid, uint64_t remote_addr, const void *src, size_t len);
ssize_t fl_cma_read(pid_t pid, void *dst, uint64_t remote_addr, size_t len);

/* Wake-up sockets: datagram sockets in the abstract unix namespace. */
#include <sys/un.h>
struct fl_wake_addr {
    struct sockaddr_un sa;
    unsigned len;
};
void fl_wake_addr(const char *name, struct fl_wake_addr *out);
int fl_wake_open(const struct fl_wake_addr *self); /* bound, nonblocking */
/* One datagram; a full socket buffer already means "wake up". */
int fl_wake_send(int sock, const struct fl_wake_addr *peer);
void fl_wake_drain(int sock);

int fl_set_nonblock(int fd);

#endif /* FL_PLATFORM_OS_H */

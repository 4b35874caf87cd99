/* SPDX-License-Identifier: BSD-3-Clause */
/* Linux wrappers; see os.h. */
#include "platform/os.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

int fl_random_bytes(void *buf, size_t len)
{
    uint8_t *p = buf;
    while (len > 0) {
        ssize_t n = getrandom(p, len, 0);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return -errno;
        }
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

/* FNV-1a, to fold identity strings into the 16-byte host id. */
static uint64_t fnv1a(uint64_t h, const void *data, size_t len)
{
    const uint8_t *p = data;
    for (size_t i = 0; i < len; i++) {
        h ^= p[i];
        h *= 0x100000001b3ull;
    }
    return h;
}

int fl_host_id(uint8_t id[16])
{
    char boot[64] = "";
    int fd = open("/proc/sys/kernel/random/boot_id", O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
        ssize_t n = read(fd, boot, sizeof boot - 1);
        boot[n > 0 ? n : 0] = '\0';
        close(fd);
    }
    /* Shared memory needs the same IPC namespace and /dev/shm; the wake-up
       sockets (abstract unix names) need the same network namespace. */
    static const char *const ns_links[] = {"/proc/self/ns/ipc", "/proc/self/ns/net"};
    char ns[128];
    size_t len = 0;
    for (size_t i = 0; i < sizeof ns_links / sizeof ns_links[0]; i++) {
        ssize_t n = readlink(ns_links[i], ns + len, sizeof ns - 1 - len);
        if (n > 0)
            len += (size_t)n;
    }
    ns[len] = '\0';
    struct stat st;
    uint64_t dev = stat("/dev/shm", &st) == 0 ? (uint64_t)st.st_dev : 0;
    uint64_t a = fnv1a(0xcbf29ce484222325ull, boot, strlen(boot));
    uint64_t b = fnv1a(fnv1a(0x84222325cbf29ce4ull, ns, len), &dev, sizeof dev);
    memcpy(id, &a, 8);
    memcpy(id + 8, &b, 8);
    return 0;
}

void fl_shm_name(char *buf, size_t len, uint64_t job_id, uint32_t rank, uint32_t ep,
                 const char *suffix)
{
    snprintf(buf, len, "/flit-%016llx-%u-%u%s", (unsigned long long)job_id, rank, ep,
             suffix);
}

int fl_shm_map_fd(int fd, size_t size, void **addr_out)
{
    void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED)
        return -errno;
    *addr_out = p;
    return 0;
}

/*
 * A file in /dev/shm is sized by ftruncate without its pages: on a full
 * tmpfs the first store to a page that has none is a SIGBUS, in whichever
 * process makes it. posix_fallocate takes the pages now, so the shortage is
 * an error here. It answers an error number (it leaves errno alone), and
 * tmpfs gives up with EINTR when a signal comes while it zeroes pages.
 */
static _Atomic bool shm_sparse;

int fl_shm_reserve(int fd, uint64_t off, uint64_t len)
{
    if (len == 0)
        return 0;
    int err;
    do
        err = posix_fallocate(fd, (off_t)off, (off_t)len);
    while (err == EINTR);
    if (err != EOPNOTSUPP && err != EINVAL && err != ENOSYS)
        return -err;
    /* A filesystem that cannot reserve (/dev/shm not a tmpfs): the file
       stays sparse, as it was before, and fl_shm_sparse says so. */
    atomic_store(&shm_sparse, true);
    return 0;
}

bool fl_shm_sparse(void)
{
    return atomic_load(&shm_sparse);
}

/*
 * MADV_POPULATE_WRITE faults the pages in as a store would, but answers
 * EFAULT where the store would have been a SIGBUS (a full tmpfs) and
 * ENOMEM where memory is short.
 */
int fl_shm_populate(void *addr, size_t len)
{
    if (len == 0)
        return 0;
    uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
    uintptr_t from = (uintptr_t)addr & ~(page - 1);
    uintptr_t to = ((uintptr_t)addr + len + page - 1) & ~(page - 1);
    int err;
    do
        err = madvise((void *)from, to - from, MADV_POPULATE_WRITE) ? errno : 0;
    while (err == EINTR || err == EAGAIN);
    return err == EFAULT ? -ENOSPC : -err;
}

bool fl_shm_can_populate(void)
{
    static _Atomic int known; /* 0 not asked, 1 yes, 2 no */
    int k = atomic_load(&known);
    if (k == 0) {
        size_t page = (size_t)sysconf(_SC_PAGESIZE);
        void *p =
            mmap(NULL, page, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
        k = p != MAP_FAILED && fl_shm_populate(p, page) == 0 ? 1 : 2;
        if (p != MAP_FAILED)
            munmap(p, page);
        atomic_store(&known, k);
    }
    return k == 1;
}

int fl_shm_create_fd(const char *name, size_t size, size_t reserve, int *fd_out)
{
    int fd = shm_open(name, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0)
        return -errno;
    int err = ftruncate(fd, (off_t)size) != 0 ? -errno : 0;
    if (!err)
        err = fl_shm_reserve(fd, 0, reserve < size ? reserve : size);
    if (err) {
        close(fd);
        shm_unlink(name);
        return err;
    }
    *fd_out = fd;
    return 0;
}

int fl_shm_create(const char *name, size_t size, int *fd_out, void **addr_out)
{
    int fd;
    int err = fl_shm_create_fd(name, size, size, &fd);
    if (err)
        return err;
    void *p = NULL;
    err = fl_shm_map_fd(fd, size, &p);
    if (err) {
        close(fd);
        shm_unlink(name);
        return err;
    }
    *fd_out = fd;
    *addr_out = p;
    return 0;
}

bool fl_os_shortage(int err)
{
    return err == -EMFILE || err == -ENFILE || err == -ENOMEM || err == -ENOSPC ||
           err == -EAGAIN;
}

int fl_shm_attach(const char *name, size_t *size_out, void **addr_out)
{
    int fd = shm_open(name, O_RDWR | O_CLOEXEC, 0);
    if (fd < 0)
        return -errno;
    struct stat st;
    int err = fstat(fd, &st) == 0 ? 0 : -errno;
    void *p = NULL;
    if (!err && st.st_size <= 0)
        err = -EINVAL;
    if (!err)
        err = fl_shm_map_fd(fd, (size_t)st.st_size, &p);
    close(fd);
    if (err)
        return err;
    *size_out = (size_t)st.st_size;
    *addr_out = p;
    return 0;
}

int fl_shm_unlink(const char *name)
{
    return shm_unlink(name) == 0 ? 0 : -errno;
}

int fl_shm_unlink_prefix(const char *prefix)
{
    DIR *d = opendir("/dev/shm");
    if (!d)
        return -errno;
    size_t plen = strlen(prefix);
    int count = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (strncmp(e->d_name, prefix, plen) != 0)
            continue;
        char name[sizeof e->d_name + 2];
        snprintf(name, sizeof name, "/%s", e->d_name);
        if (shm_unlink(name) == 0)
            count++;
    }
    closedir(d);
    return count;
}

int fl_pidfd_open(pid_t pid)
{
    long fd = syscall(SYS_pidfd_open, pid, 0);
    return fd < 0 ? -errno : (int)fd;
}

int fl_proc_start(pid_t pid, uint64_t *start)
{
    char path[48], buf[1024];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return errno == ENOENT ? -ESRCH : -errno;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0)
        return -ESRCH; /* it went while we read */
    buf[n] = '\0';
    /* "PID (COMM) STATE F4 ... F22": COMM may hold anything, ')' too. */
    char *p = strrchr(buf, ')');
    if (!p || p[1] != ' ')
        return -EINVAL;
    p += 2;
    if (*p == 'Z' || *p == 'X')
        return -ESRCH;
    for (int field = 3; field < 22; field++) { /* to the start of field 22 */
        p = strchr(p, ' ');
        if (!p)
            return -EINVAL;
        p++;
    }
    char *end;
    unsigned long long v = strtoull(p, &end, 10);
    if (end == p)
        return -EINVAL;
    *start = v;
    return 0;
}

ssize_t fl_cma_write(pid_t pid, uint64_t remote_addr, const void *src, size_t len)
{
    struct iovec l = {(void *)src, len};
    struct iovec r = {(void *)(uintptr_t)remote_addr, len};
    ssize_t n = process_vm_writev(pid, &l, 1, &r, 1, 0);
    return n < 0 ? -errno : n;
}

ssize_t fl_cma_read(pid_t pid, void *dst, uint64_t remote_addr, size_t len)
{
    struct iovec l = {dst, len};
    struct iovec r = {(void *)(uintptr_t)remote_addr, len};
    ssize_t n = process_vm_readv(pid, &l, 1, &r, 1, 0);
    return n < 0 ? -errno : n;
}

void fl_wake_addr(const char *name, struct fl_wake_addr *out)
{
    memset(out, 0, sizeof *out);
    out->sa.sun_family = AF_UNIX;
    size_t n = strlen(name);
    if (n > sizeof out->sa.sun_path - 1)
        n = sizeof out->sa.sun_path - 1;   /* our names are far shorter */
    memcpy(out->sa.sun_path + 1, name, n); /* abstract: leading NUL */
    out->len = (unsigned)(offsetof(struct sockaddr_un, sun_path) + 1 + n);
}

int fl_wake_open(const struct fl_wake_addr *self)
{
    int s = socket(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (s < 0)
        return -errno;
    if (bind(s, (const struct sockaddr *)&self->sa, self->len) != 0) {
        int err = -errno;
        close(s);
        return err;
    }
    return s;
}

int fl_wake_send(int sock, const struct fl_wake_addr *peer)
{
    static const char one = 1;
    for (;;) {
        ssize_t n = sendto(sock, &one, 1, MSG_DONTWAIT | MSG_NOSIGNAL,
                           (const struct sockaddr *)&peer->sa, peer->len);
        if (n >= 0 || errno == EAGAIN || errno == EWOULDBLOCK)
            return 0; /* a full queue is already a pending wake-up */
        if (errno != EINTR)
            return -errno;
    }
}

void fl_wake_drain(int sock)
{
    char buf[64];
    while (recv(sock, buf, sizeof buf, MSG_DONTWAIT) > 0)
        ;
}

int fl_set_nonblock(int fd)
{
    int fl = fcntl(fd, F_GETFL);
    if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0)
        return -errno;
    return 0;
}

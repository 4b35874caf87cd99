/* SPDX-License-Identifier: BSD-3-Clause */
/* Asymmetric fences through membarrier(2); see fence.h. */
#include "platform/fence.h"

#include <linux/membarrier.h>
#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

bool fl_fence_asymmetric;

static long membarrier(int cmd)
{
    return syscall(SYS_membarrier, cmd, 0, 0);
}

static void setup_once(void)
{
    long q = membarrier(MEMBARRIER_CMD_QUERY);
    fl_fence_asymmetric = q > 0 && (q & MEMBARRIER_CMD_GLOBAL_EXPEDITED) &&
                          membarrier(MEMBARRIER_CMD_REGISTER_GLOBAL_EXPEDITED) == 0;
}

void fl_fence_setup(void)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, setup_once);
}

void fl_fence_slow(void)
{
    atomic_thread_fence(memory_order_seq_cst);
    /* Every registered thread now passes a full barrier: pairs with the
       compiler-only fl_fence_fast on the hot side. */
    if (fl_fence_asymmetric && membarrier(MEMBARRIER_CMD_GLOBAL_EXPEDITED) != 0)
        fl_fence_asymmetric = false; /* cannot happen once registered */
}

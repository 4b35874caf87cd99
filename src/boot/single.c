/* SPDX-License-Identifier: BSD-3-Clause */
/* No launcher: the program was started by hand and is a job of one rank. */
#include "boot/blobs.h"
#include "platform/os.h"

static bool single_detect(void)
{
    return true;
}

static flit_status single_open(struct fl_boot_info *info)
{
    info->rank = 0;
    info->size = 1;
    info->launcher = "singleton";
    if (fl_random_bytes(&info->job_id, sizeof info->job_id) != 0)
        return FLIT_ERR_SYSTEM;
    return FLIT_OK;
}

static flit_status single_allgather(const void *mine, size_t len, struct fl_blobs **out)
{
    struct fl_blobs *b = fl_blobs_alloc(1, len);
    if (!b)
        return FLIT_ERR_NO_MEMORY;
    fl_blobs_add(b, 0, mine, len);
    *out = b;
    return FLIT_OK;
}

static void single_close(bool clean)
{
    (void)clean;
}

const struct fl_boot_ops fl_boot_single = {
    .name = "singleton",
    .detect = single_detect,
    .open = single_open,
    .allgather = single_allgather,
    .close = single_close,
};

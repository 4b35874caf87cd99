/* SPDX-License-Identifier: BSD-3-Clause */
/* A Fast Messages program built against the installed flit-fm: each node
   sends the next one four words and waits for its own. */
#include <fm.h>

static int got = -1;

static int words(FM_stream *s, unsigned sender)
{
    int w[4];
    FM_receive(w, s, sizeof w);
    got = w[0] == (int)sender && w[3] == 4 ? 1 : 0;
    return FM_CONTINUE;
}

int main(void)
{
    if (FM_initialize() != FM_SUCCESS || FM_register_handler(1, words) != 1 ||
        FM_send_4((FM_nodeid + 1) % FM_numnodes, 1, (int)FM_nodeid, 2, 3, 4) !=
            FM_SUCCESS)
        return 1;
    while (got < 0)
        FM_extract();
    FM_finalize();
    return got == 1 ? 0 : 1;
}

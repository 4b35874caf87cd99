/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fl_chan_decode, the one decoder of the reliability channel's datagrams
 * (src/channel/wire.h), on any bytes. The datagram is copied to a buffer of
 * exactly its size, so that AddressSanitizer sees any read past its end.
 *
 * When the decoder accepts, the datagram must be what it says: chunks that
 * tile it exactly, each inside it, lanes and flags known, and encoding the
 * decoded header and chunk headers again gives back the same bytes.
 */
#include <string.h>

#include "channel/wire.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > 65536)
        return 0; /* larger than any datagram the channel receives */
    uint8_t *buf = malloc(size ? size : 1);
    FUZZ_CHECK(buf != NULL);
    memcpy(buf, data, size);
    struct fl_chan_hdr h;
    static struct fl_chan_chunk chunks[FL_CHAN_MAX_CHUNKS];
    if (fl_chan_decode(buf, size, &h, chunks) == FLIT_OK) {
        FUZZ_CHECK(size >= FL_CHAN_HDR && h.nchunks <= FL_CHAN_MAX_CHUNKS);
        FUZZ_CHECK(h.kind == FL_CHAN_DATA || h.kind == FL_CHAN_PING);
        uint8_t again[FL_CHAN_MAX_HDR];
        size_t pos = fl_chan_encode_hdr(again, &h);
        FUZZ_CHECK(pos == fl_chan_hdr_size(&h) && pos <= size);
        FUZZ_CHECK(memcmp(again, buf, pos) == 0);
        for (unsigned i = 0; i < h.nchunks; i++) {
            const struct fl_chan_chunk *c = &chunks[i];
            FUZZ_CHECK(c->lane < FL_LANES);
            FUZZ_CHECK((c->flags & ~(FL_CHAN_FIRST | FL_CHAN_LAST)) == 0);
            FUZZ_CHECK(c->data == buf + pos + FL_CHAN_CHUNK_HDR);
            FUZZ_CHECK(fl_chan_chunk_size(c->len) <= size - pos);
            uint8_t hdr[FL_CHAN_CHUNK_HDR];
            fl_chan_encode_chunk(hdr, c);
            FUZZ_CHECK(memcmp(hdr, buf + pos, FL_CHAN_CHUNK_HDR) == 0);
            fuzz_touch(c->data, c->len); /* every byte is inside the buffer */
            pos += fl_chan_chunk_size(c->len);
        }
        FUZZ_CHECK(pos == size);
    }
    free(buf);
    return 0;
}

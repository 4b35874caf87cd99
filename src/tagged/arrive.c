/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A message arriving (internal.h): the context's stream handler. It reads
 * the tag, takes the first matching posted receive or else queues an
 * unexpected entry, and receives the payload: where it lies in the packet
 * at hand when the packet holds it whole, else streamed, possibly across
 * packets and on a fiber that may resume on another thread.
 */
#include <string.h>

#include "internal.h"

/* Receives the payload into a posted receive's buffer, then completes it. */
static void deliver_posted(flit_stream_t *s, struct flit_request *r, uint32_t src,
                           uint64_t tag, size_t len)
{
    size_t n = min_size(len, r->size);
    flit_status st = FLIT_OK;
    if (n) {
        st = req_recv(s, r, n);
        if (st != FLIT_OK) /* the sender died: what did arrive is in place */
            n = min_size(n, len - flit_stream_remaining(s));
    }
    if (st == FLIT_OK && n < len) {
        (void)flit_stream_skip(s, len - n); /* the tail is discarded anyway */
        st = FLIT_ERR_TOO_LARGE;
    }
    r->info = (flit_tagged_info_t){
        .source = flit_rank(src), .tag = tag, .length = len, .received = n, .status = st};
    req_complete(r);
}

/* The payload, where it arrived, into a posted receive's buffer. */
static void deliver_in_place(struct flit_request *r, const uint8_t *payload, uint32_t src,
                             uint64_t tag, size_t len)
{
    size_t n = min_size(len, r->size);
    req_copy(r, payload, n);
    r->info = (flit_tagged_info_t){.source = flit_rank(src),
                                   .tag = tag,
                                   .length = len,
                                   .received = n,
                                   .status = n < len ? FLIT_ERR_TOO_LARGE : FLIT_OK};
    req_complete(r);
}

/* Under the mutex: e has arrived; a receive that claimed it meanwhile gets
   it (a pooled one at once). Returns that receive, or NULL. */
static struct flit_request *arrived_locked(struct flit_tagged *t, struct entry *e,
                                           flit_status st, size_t got)
{
    e->status = st;
    e->got = got;
    e->arrived = true;
    struct flit_request *r = e->req;
    if (r) {
        fl_tagged_unexp_unlink(t, e);
        r->claimed = NULL;
        if (e->cls != ENTRY_MALLOC) {
            fl_tagged_take_entry(r, e);
            fl_tagged_entry_put(t, e);
        }
    }
    return r;
}

/* Receives an unexpected message into its entry; hands it to a receive
   that claimed it meanwhile. */
static void deliver_unexpected(struct flit_tagged *t, flit_stream_t *s, struct entry *e)
{
    flit_status st = e->status;
    size_t got = 0;
    if (st == FLIT_OK && e->len) {
        st = flit_stream_recv(s, e->data, e->len);
        got =
            st == FLIT_OK ? e->len : min_size(e->len, e->len - flit_stream_remaining(s));
    }
    bool pooled = e->cls != ENTRY_MALLOC;
    lock(t);
    struct flit_request *r = arrived_locked(t, e, st, got);
    t->handlers_left++;
    unlock(t);
    if (!r)
        return;
    if (!pooled) /* large: copied outside the mutex */
        fl_tagged_take_large(r, e);
    req_complete(r);
}

/* One more handler started (see handlers_in). */
static void count_handler(struct flit_tagged *t)
{
    if (t->mt)
        atomic_fetch_add_explicit(&t->handlers_in, 1, memory_order_relaxed);
    else /* a plain add: no locked instruction */
        atomic_store_explicit(
            &t->handlers_in,
            atomic_load_explicit(&t->handlers_in, memory_order_relaxed) + 1,
            memory_order_relaxed);
}

/* A message without a whole tag: counted, and the handler is done. */
static void malformed(struct flit_tagged *t)
{
    lock(t);
    fl_tagged_count(&t->ctr->malformed);
    t->handlers_left++;
    unlock(t);
}

/*
 * A message that the packet at hand holds whole (most of them: a piece
 * is 32 KiB) is read where it arrived: the tag in place, the payload
 * copied once, into the receive's buffer or an unexpected entry (taking
 * it onto the stack first cost a second copy: 2-5% of the instructions
 * of a message sent and received, 8 B to 1 KiB). A small one goes into
 * its unexpected entry under the mutex; a larger one, or one still
 * arriving, is taken outside it, header first.
 */
void fl_tagged_on_message(flit_stream_t *s, size_t total, void *user)
{
    struct flit_tagged *t = user;
    const void *here = NULL;
    size_t at_hand = 0;
    (void)flit_stream_peek(s, &here, &at_hand);
    bool in_place = at_hand == total && total >= HDR_LEN;
    bool small = in_place && total <= HDR_LEN + WHOLE_LEN;
    _Alignas(8) uint8_t hdr[HDR_LEN];
    const uint8_t *head = in_place ? here : hdr, *payload = head + HDR_LEN;
    count_handler(t);
    if (__builtin_expect(total < HDR_LEN ||
                             (!in_place && flit_stream_recv(s, hdr, HDR_LEN) != FLIT_OK),
                         0)) {
        malformed(t);
        return;
    }
    uint64_t tag = get_le64(head);
    uint32_t src = flit_stream_rank(s).idx;
    size_t len = total - HDR_LEN;

    struct entry *e = NULL;
    lock(t);
    fl_tagged_count(&t->ctr->arrived);
    struct flit_request *r = t->posted_head ? fl_tagged_posted_take(t, src, tag) : NULL;
    if (!r)
        e = fl_tagged_unexp_new(t, src, tag, len, small ? payload : NULL);
    /* Done with the context, unless a payload is to come into e. */
    if (!e || small)
        t->handlers_left++;
    unlock(t);

    if (r && in_place) {
        deliver_in_place(r, payload, src, tag, len);
    } else if (r) {
        deliver_posted(s, r, src, tag, len);
    } else if (e && !small) {
        if (in_place) /* the stream's next byte is the payload's first */
            (void)flit_stream_skip(s, HDR_LEN);
        deliver_unexpected(t, s, e);
    }
}

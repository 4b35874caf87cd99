/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Handle tables (<flit/handle.h>): slots in chunks that never move (get
 * reads them without the lock while new grows the table), a FIFO of free
 * slots (a freed slot waits behind every other free one before it is
 * reused), and in each slot a generation that free bumps.
 *
 * A handle's value, low bit first: 1 (never an aligned address, never
 * NULL), the slot's index, the table's tag, the slot's generation.
 *
 * Get against free and new: free stores the object NULL, then bumps the
 * generation; new stores the object into a slot whose generation moved on
 * already. Get reads the generation, the object, then the generation again:
 * an object read while the slot changed hands shows as a second read that
 * differs, and is refused. Every access is sequentially consistent.
 */
#include <flit/handle.h>

#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>

#if UINTPTR_MAX > 0xffffffffu
#define IDX_BITS 22u
#define TAG_BITS 8u
#define GEN_BITS 32u
#else
#define IDX_BITS 17u
#define TAG_BITS 4u
#define GEN_BITS 10u
#endif
#define CHUNK_BITS 10u
#define CHUNK      (1u << CHUNK_BITS)
#define MAX_SLOTS  (1u << IDX_BITS)
#define TAG_SHIFT  (1u + IDX_BITS)
#define GEN_SHIFT  (1u + IDX_BITS + TAG_BITS)
#define GEN_LAST   ((uint32_t)((1ull << GEN_BITS) - 1))
#define NO_SLOT    UINT32_MAX

struct slot {
    uint32_t gen; /* the live handle's generation (atomic) */
    uint32_t next_free;
    void *obj; /* NULL while free (atomic) */
};

struct flit_handles {
    pthread_mutex_t lock; /* new, free, growing */
    uintptr_t tag;
    uint32_t nslots;                        /* made so far */
    uint32_t head, tail;                    /* free slots, oldest first */
    struct slot *chunks[MAX_SLOTS / CHUNK]; /* set once each (atomic) */
};

#define LOAD(p)     __atomic_load_n((p), __ATOMIC_SEQ_CST)
#define STORE(p, v) __atomic_store_n((p), (v), __ATOMIC_SEQ_CST)

/* The table *table names, made on first use. */
static struct flit_handles *table_of(flit_handles_t **table)
{
    static pthread_mutex_t make_lock = PTHREAD_MUTEX_INITIALIZER;
    static uintptr_t next_tag;
    struct flit_handles *t = LOAD(table);
    if (t)
        return t;
    pthread_mutex_lock(&make_lock);
    if (!(t = LOAD(table)) && (t = calloc(1, sizeof *t))) {
        pthread_mutex_init(&t->lock, NULL);
        t->tag = next_tag++ & ((1u << TAG_BITS) - 1);
        t->head = t->tail = NO_SLOT;
        STORE(table, t);
    }
    pthread_mutex_unlock(&make_lock);
    return t;
}

static struct slot *slot_at(struct flit_handles *t, uint32_t idx)
{
    struct slot *chunk = LOAD(&t->chunks[idx >> CHUNK_BITS]);
    return chunk ? &chunk[idx & (CHUNK - 1)] : NULL;
}

static void *encode(const struct flit_handles *t, uint32_t idx, uint32_t gen)
{
    return (void *)((uintptr_t)gen << GEN_SHIFT | t->tag << TAG_SHIFT |
                    (uintptr_t)idx << 1 | 1u);
}

/* The slot a value names in t, and the generation it names; NULL when it
   is not of t. */
static struct slot *decode(struct flit_handles *t, const void *handle, uint32_t *gen)
{
    uintptr_t v = (uintptr_t)handle;
    if (!t || !(v & 1u) || ((v >> TAG_SHIFT) & ((1u << TAG_BITS) - 1)) != t->tag)
        return NULL;
    *gen = (uint32_t)(v >> GEN_SHIFT);
    return slot_at(t, (uint32_t)(v >> 1) & (MAX_SLOTS - 1));
}

/* Under the lock: a free slot's index, the oldest first, or a new one. */
static uint32_t take_slot(struct flit_handles *t)
{
    if (t->head != NO_SLOT) {
        uint32_t idx = t->head;
        t->head = slot_at(t, idx)->next_free;
        if (t->head == NO_SLOT)
            t->tail = NO_SLOT;
        return idx;
    }
    if (t->nslots == MAX_SLOTS)
        return NO_SLOT;
    if (!(t->nslots & (CHUNK - 1))) {
        struct slot *chunk = calloc(CHUNK, sizeof *chunk);
        if (!chunk)
            return NO_SLOT;
        STORE(&t->chunks[t->nslots >> CHUNK_BITS], chunk);
    }
    return t->nslots++;
}

flit_status flit_handle_new(flit_handles_t **table, void *obj, void **handle)
{
    if (!table || !obj || !handle)
        return FLIT_ERR_INVALID_ARG;
    struct flit_handles *t = table_of(table);
    if (!t)
        return FLIT_ERR_NO_MEMORY;
    pthread_mutex_lock(&t->lock);
    uint32_t idx = take_slot(t);
    void *h = NULL;
    if (idx != NO_SLOT) {
        struct slot *s = slot_at(t, idx);
        STORE(&s->obj, obj);
        h = encode(t, idx, LOAD(&s->gen));
    }
    pthread_mutex_unlock(&t->lock);
    if (!h)
        return FLIT_ERR_NO_MEMORY;
    *handle = h;
    return FLIT_OK;
}

void *flit_handle_get(flit_handles_t **table, const void *handle)
{
    uint32_t gen;
    struct slot *s = table ? decode(LOAD(table), handle, &gen) : NULL;
    if (!s || LOAD(&s->gen) != gen)
        return NULL;
    void *obj = LOAD(&s->obj);
    return LOAD(&s->gen) == gen ? obj : NULL;
}

void *flit_handle_free(flit_handles_t **table, const void *handle)
{
    struct flit_handles *t = table ? LOAD(table) : NULL;
    uint32_t gen;
    if (!t)
        return NULL;
    pthread_mutex_lock(&t->lock);
    struct slot *s = decode(t, handle, &gen);
    void *obj = s && LOAD(&s->gen) == gen ? LOAD(&s->obj) : NULL;
    if (obj) {
        uint32_t idx = (uint32_t)((uintptr_t)handle >> 1) & (MAX_SLOTS - 1);
        STORE(&s->obj, NULL);
        STORE(&s->gen, gen + 1);
        /* A slot at its last generation is retired: its values never
           come back. */
        if (gen + 1 != GEN_LAST) {
            s->next_free = NO_SLOT;
            if (t->tail != NO_SLOT)
                slot_at(t, t->tail)->next_free = idx;
            else
                t->head = idx;
            t->tail = idx;
        }
    }
    pthread_mutex_unlock(&t->lock);
    return obj;
}

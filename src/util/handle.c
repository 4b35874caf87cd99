/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Handle tables (<flit/handle.h>): slots in chunks that never move (get
 * reads them without a lock while the table grows), a lock-free stack of
 * free slots, and in each slot a generation that free bumps.
 *
 * A handle's value, low bit first: 1 (never an aligned address, never
 * NULL), the slot's index, the table's tag, the slot's generation.
 *
 * New pops a free slot (or, under the mutex, makes one) and stores the
 * object; the slot's generation moved on when it was freed. Free claims the
 * handle by bumping its slot's generation with a compare-and-swap (of two
 * frees of one handle, one wins), stores the object NULL and pushes the
 * slot. The free stack's head carries a count bumped by every change, so a
 * pop that raced with a pop and a push fails its compare-and-swap (no ABA).
 * A slot whose generation reached its last value is retired, never pushed:
 * a value, once freed, never names anything again.
 *
 * Get reads the generation, the object, then the generation again: an
 * object read while the slot changed hands shows as a second read that
 * differs, and is refused. Loads acquire and stores release: an object
 * read is one whose store (in new, after the pop that follows the free
 * that bumped the generation) makes that generation visible to the second
 * read. Sequentially consistent stores, each a locked exchange on x86,
 * were three of the six locked instructions a request of the tagged layer
 * cost (new and free), about 20 ns of an 8-byte MPI message on AMD EPYC.
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
    uint32_t gen;       /* the live handle's generation (atomic) */
    uint32_t next_free; /* index + 1 of the next free slot, 0: none (atomic) */
    void *obj;          /* NULL while free (atomic) */
};

struct flit_handles {
    pthread_mutex_t lock; /* growing */
    uintptr_t tag;
    uint32_t nslots;                        /* made so far (under the lock) */
    uint64_t free_head;                     /* count << 32 | index + 1 (atomic) */
    struct slot *chunks[MAX_SLOTS / CHUNK]; /* set once each (atomic) */
};

#define LOAD(p)     __atomic_load_n((p), __ATOMIC_ACQUIRE)
#define STORE(p, v) __atomic_store_n((p), (v), __ATOMIC_RELEASE)
#define CAS(p, expect, v)                                                                \
    __atomic_compare_exchange_n((p), (expect), (v), false, __ATOMIC_ACQ_REL,             \
                                __ATOMIC_ACQUIRE)

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

/* The slot a value names in t (*idx), and the generation it names; NULL
   when it is not of t. */
static struct slot *decode(struct flit_handles *t, const void *handle, uint32_t *idx,
                           uint32_t *gen)
{
    uintptr_t v = (uintptr_t)handle;
    if (!t || !(v & 1u) || ((v >> TAG_SHIFT) & ((1u << TAG_BITS) - 1)) != t->tag)
        return NULL;
    *gen = (uint32_t)(v >> GEN_SHIFT);
    *idx = (uint32_t)(v >> 1) & (MAX_SLOTS - 1);
    return slot_at(t, *idx);
}

/* A free slot popped off the stack; NO_SLOT when it is empty. */
static uint32_t pop_free(struct flit_handles *t)
{
    uint64_t head = LOAD(&t->free_head);
    while ((uint32_t)head) {
        uint32_t idx = (uint32_t)head - 1;
        /* A slot popped and pushed again meanwhile: the count differs. */
        uint64_t next = ((head >> 32) + 1) << 32 | LOAD(&slot_at(t, idx)->next_free);
        if (CAS(&t->free_head, &head, next))
            return idx;
    }
    return NO_SLOT;
}

static void push_free(struct flit_handles *t, uint32_t idx, struct slot *s)
{
    uint64_t head = LOAD(&t->free_head);
    uint64_t next;
    do {
        STORE(&s->next_free, (uint32_t)head);
        next = ((head >> 32) + 1) << 32 | (idx + 1);
    } while (!CAS(&t->free_head, &head, next));
}

/* A slot never used, made under the mutex; NO_SLOT when full or short of
   memory. */
static uint32_t make_slot(struct flit_handles *t)
{
    uint32_t idx = NO_SLOT;
    pthread_mutex_lock(&t->lock);
    if (t->nslots < MAX_SLOTS) {
        bool room = t->nslots & (CHUNK - 1);
        struct slot *chunk = room ? NULL : calloc(CHUNK, sizeof *chunk);
        if (chunk)
            STORE(&t->chunks[t->nslots >> CHUNK_BITS], chunk);
        if (room || chunk)
            idx = t->nslots++;
    }
    pthread_mutex_unlock(&t->lock);
    return idx;
}

flit_status flit_handle_new(flit_handles_t **table, void *obj, void **handle)
{
    if (!table || !obj || !handle)
        return FLIT_ERR_INVALID_ARG;
    struct flit_handles *t = table_of(table);
    if (!t)
        return FLIT_ERR_NO_MEMORY;
    uint32_t idx = pop_free(t);
    if (idx == NO_SLOT && (idx = make_slot(t)) == NO_SLOT)
        return FLIT_ERR_NO_MEMORY;
    struct slot *s = slot_at(t, idx);
    STORE(&s->obj, obj);
    *handle = encode(t, idx, LOAD(&s->gen));
    return FLIT_OK;
}

void *flit_handle_get(flit_handles_t **table, const void *handle)
{
    uint32_t idx, gen;
    struct slot *s = table ? decode(LOAD(table), handle, &idx, &gen) : NULL;
    if (!s || LOAD(&s->gen) != gen)
        return NULL;
    void *obj = LOAD(&s->obj);
    return LOAD(&s->gen) == gen ? obj : NULL;
}

void *flit_handle_free(flit_handles_t **table, const void *handle)
{
    struct flit_handles *t = table ? LOAD(table) : NULL;
    uint32_t idx, gen;
    struct slot *s = decode(t, handle, &idx, &gen);
    if (!s || LOAD(&s->gen) != gen)
        return NULL;
    void *obj = LOAD(&s->obj); /* stays while gen is the handle's */
    uint32_t expect = gen;
    if (!obj || !CAS(&s->gen, &expect, gen + 1))
        return NULL; /* not live, or another free won */
    STORE(&s->obj, NULL);
    if (gen + 1 != GEN_LAST) /* else retired: its values never come back */
        push_free(t, idx, s);
    return obj;
}

void *flit_handle_renew(flit_handles_t **table, const void *handle)
{
    struct flit_handles *t = table ? LOAD(table) : NULL;
    uint32_t idx, gen;
    struct slot *s = decode(t, handle, &idx, &gen);
    if (!s || LOAD(&s->gen) != gen || !LOAD(&s->obj))
        return NULL;
    if (gen + 1 == GEN_LAST) { /* free retires the slot */
        (void)flit_handle_free(table, handle);
        return NULL;
    }
    uint32_t expect = gen;
    if (!CAS(&s->gen, &expect, gen + 1))
        return NULL; /* a free won */
    return encode(t, idx, gen + 1);
}

/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Handles for layers built on flit (the RPC, group, object and tagged
 * layers, the compatibility libraries, a user's own runtime): the opaque
 * value a library hands its caller in place of a pointer to its object.
 *
 * Why: a caller may keep a handle past the object's end (destroy twice,
 * cancel a call that completed). A raw pointer then names freed memory, or
 * worse, the next object malloc placed in the same block: a magic number
 * stored in the object cannot tell them apart. A handle here is an index
 * into a table and that slot's generation, packed in a pointer-sized value
 * that is never a valid address (its low bit is set). Freeing a handle
 * bumps its slot's generation, so the old value is refused for ever (a slot
 * whose generation would wrap is retired, never reused), without reading
 * the object it once named. Each table has a tag of its own in the value:
 * a handle of one table is refused by another.
 *
 * Cost: flit_handle_get is a few loads; new and free a compare-and-swap
 * or two on the table's stack of free slots (no lock; O(1)), renew one;
 * malloc and a
 * mutex only when the table grows (by 1024 slots).
 * A table holds up to 4 Mi live handles (128 Ki where pointers are 32-bit).
 *
 * Tables: a library keeps one `static flit_handles_t *` per handle type,
 * NULL to begin with, and passes its address; the table is made on first
 * use (thread-safe) and lives until the process ends.
 *
 * Threads: get is safe beside new and free on any thread. Its answer holds
 * until the handle is freed: a library frees a handle under the lock that
 * its calls on that object take, and looks the handle up again under that
 * lock before acting (or frees it only where no other thread may use it).
 */
#ifndef FLIT_HANDLE_H
#define FLIT_HANDLE_H

#include <flit/flit.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct flit_handles flit_handles_t;

/*
 * A new handle for obj (not NULL) in *table (made if NULL): *handle.
 * FLIT_ERR_INVALID_ARG for a NULL argument; FLIT_ERR_NO_MEMORY when the
 * table is full or memory is short.
 */
FLIT_API flit_status flit_handle_new(flit_handles_t **table, void *obj, void **handle);

/* The object a live handle of *table names; NULL for any other value
   (NULL, freed, of another table, never made). Reads no object. */
FLIT_API void *flit_handle_get(flit_handles_t **table, const void *handle);

/*
 * Ends a handle: the object it named, or NULL (and nothing done) when it
 * was not a live handle of *table. From then on get answers NULL for it.
 */
FLIT_API void *flit_handle_free(flit_handles_t **table, const void *handle);

/*
 * The next value of a live handle, naming the same object: the old value
 * is refused from now on, as after free, but the slot stays the object's.
 * For an object a library keeps for reuse (a request on a free list): one
 * compare-and-swap where free and new cost three. NULL when handle is not
 * a live handle of *table (nothing done), or when its slot's generations
 * are spent: then the handle is freed as by flit_handle_free, and the
 * object needs flit_handle_new.
 */
FLIT_API void *flit_handle_renew(flit_handles_t **table, const void *handle);

#ifdef __cplusplus
}
#endif

#endif /* FLIT_HANDLE_H */

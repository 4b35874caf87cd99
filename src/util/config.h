/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Configuration from FLIT_* environment variables, read once by flit_init.
 * Each plug-in describes its own variables in a table next to its code
 * (struct fl_setting) and keeps their values itself; this engine reads,
 * checks, prints and documents every registered table the same way. The
 * variables of no particular plug-in are here (fl_core_settings).
 */
#ifndef FL_UTIL_CONFIG_H
#define FL_UTIL_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "flit/flit.h"

/*
 * One FLIT_* variable, described where its plug-in is (a transport, the
 * channel, a layer) in a table ending with a NULL name, registered with
 * fl_config_add. What it accepts is said here and nowhere else: the error
 * for a bad value, FLIT_VERBOSE's listing and docs/settings.md's table
 * (config_test compares the two) are all written from these fields.
 */
enum fl_setting_kind {
    FL_SET_INT,
    FL_SET_BOOL,
    FL_SET_ENUM,    /* one of choices, kept as its index */
    FL_SET_KB,      /* given in KiB, kept in bytes */
    FL_SET_SECONDS, /* given in seconds (decimals allowed), kept in ms */
    FL_SET_RATE,    /* a probability 0..1, kept in parts per million */
    FL_SET_IPV4,    /* a dotted address, kept in host order; 0: pick one */
    FL_SET_NAMES,   /* "auto" (kept as 0) or a comma-separated list of
                       choices, kept as a mask: bit i for choices[i] */
    FL_SET_TEXT,    /* a word (a provider's name): kept in text */
};

struct fl_setting {
    const char *name;
    enum fl_setting_kind kind;
    int64_t *value;        /* where it is kept */
    int64_t def, min, max; /* FL_SET_INT, FL_SET_KB: as given (KiB); else as kept */
    const char *unit;      /* of min and max as given: "KiB", "µs" */
    const char *help;
    bool pow2; /* only powers of two */
    /* A value outside min..max that stands for something else (-1 for
       "flit picks"), allowed when special_means says what. */
    int64_t special;
    const char *special_means;
    const char *const *choices; /* FL_SET_ENUM, FL_SET_NAMES: NULL-terminated */
    bool job; /* every rank of a job must have the same (fl_config_job_values) */
    /* FL_SET_TEXT: where it is kept (FL_CONFIG_WORD bytes; value unused),
       and its default ("" when NULL: unset). */
    char *text;
    const char *text_def;
};
#define FL_CONFIG_WORD 64 /* a FL_SET_TEXT value's room, its NUL included */

/* The settings of no particular plug-in: logging, waiting, liveness,
   which transports serve (FLIT_TRANSPORT), fibers. */
struct fl_config {
    int64_t verbose;         /* FLIT_VERBOSE */
    int64_t stats;           /* FLIT_STATS */
    int64_t spin_us;         /* FLIT_SPIN_US; -1 = fl_progress_init picks */
    int64_t yield_us;        /* FLIT_YIELD_US; -1 = fl_progress_init picks */
    int64_t progress_thread; /* FLIT_PROGRESS_THREAD */
    int64_t long_chunk;      /* FLIT_LONG_CHUNK_KB, in bytes: piece size when copying */
    int64_t peer_check_ms;   /* FLIT_PEER_CHECK_MS: liveness check period */
    int64_t transport; /* FLIT_TRANSPORT: 0 (auto) or a mask of fl_config_transports */
    int64_t peer_timeout_ms; /* FLIT_PEER_TIMEOUT, given in seconds */
    int64_t fiber_stack;     /* FLIT_FIBER_STACK_KB, in bytes */
    int64_t fibers;          /* FLIT_FIBERS: enum fl_fiber_choice */
};

enum fl_fiber_choice {
    FL_FIBERS_AUTO = 0, /* flit's own switch where it has one, else ucontext */
    FL_FIBERS_UCONTEXT, /* always makecontext/swapcontext */
};

extern struct fl_config fl_cfg;

/* The table of struct fl_config's variables. */
extern const struct fl_setting fl_core_settings[];

/* Registers a table of settings (once; again is harmless), before
   fl_config_load. The build's list (src/flit.c, fl_build_settings) does it
   for every plug-in it is made of. FLIT_ERR_NO_MEMORY past the registry's
   room (FL_CONFIG_MAX settings), our bug. */
#define FL_CONFIG_MAX 96
flit_status fl_config_add(const struct fl_setting *table);
/* FLIT_TRANSPORT's choices: the names of the transports built in, in
   preference order, NULL-terminated (at most 63), kept by reference. */
void fl_config_set_transports(const char *const *names);
/* Those names. */
const char *const *fl_config_transports(void);

/* Reads the environment; FLIT_ERR_CONFIG on a bad value, logged with the
   variable, the value given, what is wrong with it and what is allowed
   (range and unit, or the choices), by the job's first task only (FLIT_RANK
   or another launcher's task number 0 or unset): the others share the
   setting and return the status silently, so a job says it once. */
flit_status fl_config_load(void);
/* The same for one table that is not registered (a public-API layer's,
   read when the layer registers, after flit_init may have loaded the
   rest): its values kept, each bad one logged as fl_config_load does. */
flit_status fl_config_load_table(const struct fl_setting *table);
/* Set from above (core/pub_layer.c: the settings of layers on the public
   API): whether a FLIT_* name (len bytes) someone else reads; such a
   variable draws no "unknown variable" warning. NULL: none. */
extern bool (*fl_config_known_above)(const char *name, size_t len);
/* The environment checked without keeping it, for a launcher before it
   starts the ranks: from variable *i of the table on, the next bad one's
   message (as fl_config_load logs it) into msg and true, with *i past it;
   false when none is left. */
bool fl_config_next_bad(size_t *i, char *msg, size_t len);
/* Prints the effective configuration, one variable per line: its value,
   "(default)" when it was not set, and what a "flit picks" value such as
   FLIT_SPIN_US=-1 became once flit_init settled it, and why. */
void fl_config_print(FILE *out);
/* A variable left at its special value ("flit picks") was settled to value
   once the job was known (why: the reason, or NULL); FLIT_VERBOSE says so. */
void fl_config_settle(const char *name, int64_t value, const char *why);
/* The settings every rank of a job must share (FLIT_TRANSPORT,
   FLIT_SHM_RING_KB), in table order, as kept: at most max written to out,
   their number returned. flit_ep_create compares them across ranks. */
#define FL_CONFIG_JOB_MAX 8
unsigned fl_config_job_values(int64_t *out, unsigned max);
/* The k-th of them: its name, and val as it would be given. */
void fl_config_job_describe(unsigned k, int64_t val, const char **name, char *buf,
                            size_t len);

#define FL_CONFIG_TEXT 160

/* Variable i of the table as docs/settings.md's table writes it:
   name, default, allowed values. */
struct fl_config_doc {
    const char *name;
    char def[FL_CONFIG_TEXT];
    char allowed[FL_CONFIG_TEXT];
};
/* Fills d for variable i; false past the last one. */
bool fl_config_describe(size_t i, struct fl_config_doc *d);

#endif /* FL_UTIL_CONFIG_H */

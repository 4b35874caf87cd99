/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * flit_strerror / flit_status_name (src/core/status.c): every status has its
 * own non-empty sentence and its enumerator's name; unknown values get the
 * documented fallbacks, never NULL.
 */
#include <string.h>

#include "unit.h"

static void expect_name(flit_status st, const char *want)
{
    const char *got = flit_status_name(st);
    if (strcmp(got, want) != 0)
        FAIL("flit_status_name(%d) = \"%s\", expected \"%s\"", (int)st, got, want);
}

int main(void)
{
    for (int i = 0; i < FLIT_STATUS_COUNT; i++) {
        flit_status st = (flit_status)i;
        const char *text = flit_strerror(st);
        const char *name = flit_status_name(st);
        CHECK(text != NULL && name != NULL);
        if (text[0] == '\0' || strcmp(text, "unknown flit status") == 0)
            FAIL("status %d has no text", i);
        if (strncmp(name, "FLIT_", 5) != 0 || strlen(name) < 6 ||
            strcmp(name, "FLIT_?") == 0)
            FAIL("status %d has name \"%s\"", i, name);
        for (int j = 0; j < i; j++) {
            if (strcmp(text, flit_strerror((flit_status)j)) == 0)
                FAIL("statuses %d and %d share the text \"%s\"", j, i, text);
            if (strcmp(name, flit_status_name((flit_status)j)) == 0)
                FAIL("statuses %d and %d share the name \"%s\"", j, i, name);
        }
        /* Names are the enumerators: FLIT_OK, then FLIT_ERR_*. */
        if (i > 0 && strncmp(name, "FLIT_ERR_", 9) != 0)
            FAIL("status %d is named \"%s\"", i, name);
    }
    /* The table is in enum order. */
    expect_name(FLIT_OK, "FLIT_OK");
    expect_name(FLIT_ERR_INVALID_ARG, "FLIT_ERR_INVALID_ARG");
    expect_name(FLIT_ERR_NOT_INITIALIZED, "FLIT_ERR_NOT_INITIALIZED");
    expect_name(FLIT_ERR_ALREADY_INITIALIZED, "FLIT_ERR_ALREADY_INITIALIZED");
    expect_name(FLIT_ERR_FINALIZED, "FLIT_ERR_FINALIZED");
    expect_name(FLIT_ERR_FORKED, "FLIT_ERR_FORKED");
    expect_name(FLIT_ERR_THREAD, "FLIT_ERR_THREAD");
    expect_name(FLIT_ERR_NO_MEMORY, "FLIT_ERR_NO_MEMORY");
    expect_name(FLIT_ERR_SYSTEM, "FLIT_ERR_SYSTEM");
    expect_name(FLIT_ERR_BOOT, "FLIT_ERR_BOOT");
    expect_name(FLIT_ERR_RANK, "FLIT_ERR_RANK");
    expect_name(FLIT_ERR_NARGS, "FLIT_ERR_NARGS");
    expect_name(FLIT_ERR_TOO_LARGE, "FLIT_ERR_TOO_LARGE");
    expect_name(FLIT_ERR_BOUNDS, "FLIT_ERR_BOUNDS");
    expect_name(FLIT_ERR_NO_SEGMENT, "FLIT_ERR_NO_SEGMENT");
    expect_name(FLIT_ERR_AGAIN, "FLIT_ERR_AGAIN");
    expect_name(FLIT_ERR_TIMEOUT, "FLIT_ERR_TIMEOUT");
    expect_name(FLIT_ERR_IN_HANDLER, "FLIT_ERR_IN_HANDLER");
    expect_name(FLIT_ERR_REPLY_IN_REPLY, "FLIT_ERR_REPLY_IN_REPLY");
    expect_name(FLIT_ERR_ALREADY_REPLIED, "FLIT_ERR_ALREADY_REPLIED");
    expect_name(FLIT_ERR_BAD_TOKEN, "FLIT_ERR_BAD_TOKEN");
    expect_name(FLIT_ERR_PEER_DOWN, "FLIT_ERR_PEER_DOWN");
    expect_name(FLIT_ERR_NO_HANDLER, "FLIT_ERR_NO_HANDLER");
    expect_name(FLIT_ERR_BAD_HANDLER, "FLIT_ERR_BAD_HANDLER");
    expect_name(FLIT_ERR_BAD_TAG, "FLIT_ERR_BAD_TAG");
    expect_name(FLIT_ERR_BAD_PACKET, "FLIT_ERR_BAD_PACKET");
    expect_name(FLIT_ERR_UNREACHABLE, "FLIT_ERR_UNREACHABLE");
    expect_name(FLIT_ERR_NOT_SUPPORTED, "FLIT_ERR_NOT_SUPPORTED");
    expect_name(FLIT_ERR_DENIED, "FLIT_ERR_DENIED");
    expect_name(FLIT_ERR_REVOKED, "FLIT_ERR_REVOKED");
    expect_name(FLIT_ERR_CLOSED, "FLIT_ERR_CLOSED");
    expect_name(FLIT_ERR_EXHAUSTED, "FLIT_ERR_EXHAUSTED");
    expect_name(FLIT_ERR_NO_LAUNCHER, "FLIT_ERR_NO_LAUNCHER");
    expect_name(FLIT_ERR_CONFIG, "FLIT_ERR_CONFIG");
    expect_name(FLIT_ERR_NOT_FOUND, "FLIT_ERR_NOT_FOUND");
    CHECK(FLIT_ERR_NOT_FOUND + 1 == FLIT_STATUS_COUNT);
    CHECK(strcmp(flit_strerror(FLIT_OK), "success") == 0);

    static const int unknown[] = {-1,   FLIT_STATUS_COUNT, FLIT_STATUS_COUNT + 1,
                                  9999, -2147483647 - 1,   2147483647};
    for (size_t i = 0; i < sizeof unknown / sizeof unknown[0]; i++) {
        flit_status st = (flit_status)unknown[i];
        const char *text = flit_strerror(st);
        const char *name = flit_status_name(st);
        if (!text || strcmp(text, "unknown flit status") != 0)
            FAIL("flit_strerror(%d) = \"%s\"", unknown[i], text ? text : "(null)");
        if (!name || strcmp(name, "FLIT_?") != 0)
            FAIL("flit_status_name(%d) = \"%s\"", unknown[i], name ? name : "(null)");
    }
    return 0;
}

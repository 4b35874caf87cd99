/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The FLIT_* settings of layers built on the public API: declared in
 * their descriptors, read once when the layer is registered (before
 * flit_init joins the job for the built-in ones), checked against their
 * range, and known to the warning about unknown variables.
 */
#include "core/pub_settings.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "core/pub_layer.h"
#include "util/log.h"

/* values[i]: the settings' values of the i-th registered layer, in its
   order; kept for the process's life, as the registration is. */
static int64_t *values[FLIT_LAYER_MAX];

static bool declared_ok(const flit_layer_setting_t *s)
{
    return s->name && strncmp(s->name, "FLIT_", 5) == 0 && s->min <= s->max &&
           s->def >= s->min && s->def <= s->max;
}

/* The variable's value, or its default when unset or empty; false for one
   that is not an integer within the range (logged, with what is allowed). */
static bool read_one(const flit_layer_setting_t *s, int64_t *out)
{
    const char *text = getenv(s->name);
    *out = s->def;
    if (!text || !*text)
        return true;
    char *end;
    errno = 0;
    long long v = strtoll(text, &end, 0);
    if (errno || *end || v < s->min || v > s->max) {
        fl_error("%s=\"%s\" is not valid: allowed %" PRId64 " .. %" PRId64 " — %s",
                 s->name, text, s->min, s->max, s->doc ? s->doc : "");
        return false;
    }
    *out = v;
    return true;
}

flit_status fl_pub_settings_read(const flit_layer_t *l, unsigned i)
{
    for (unsigned k = 0; k < l->nsettings; k++)
        if (!declared_ok(&l->settings[k]))
            return FLIT_ERR_INVALID_ARG;
    int64_t *v = calloc(l->nsettings ? l->nsettings : 1, sizeof *v);
    if (!v)
        return FLIT_ERR_NO_MEMORY;
    bool ok = true;
    for (unsigned k = 0; k < l->nsettings; k++)
        ok &= read_one(&l->settings[k], &v[k]);
    if (!ok) {
        free(v);
        return FLIT_ERR_CONFIG;
    }
    free(values[i]); /* a registration that failed after reading */
    values[i] = v;
    return FLIT_OK;
}

flit_status flit_layer_setting(const flit_layer_t *layer, const char *name, int64_t *out)
{
    if (!layer || !name || !out)
        return FLIT_ERR_INVALID_ARG;
    unsigned n = fl_pub_count();
    for (unsigned i = 0; i < n; i++) {
        if (fl_pub_at(i) != layer)
            continue;
        for (unsigned k = 0; k < layer->nsettings; k++)
            if (strcmp(layer->settings[k].name, name) == 0) {
                *out = values[i][k];
                return FLIT_OK;
            }
    }
    return FLIT_ERR_INVALID_ARG;
}

bool fl_pub_knows_setting(const char *name, size_t len)
{
    unsigned n = fl_pub_count();
    for (unsigned i = 0; i < n; i++) {
        const flit_layer_t *l = fl_pub_at(i);
        for (unsigned k = 0; k < l->nsettings; k++)
            if (strlen(l->settings[k].name) == len &&
                strncmp(l->settings[k].name, name, len) == 0)
                return true;
    }
    return false;
}

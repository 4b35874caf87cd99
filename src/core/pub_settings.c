/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The FLIT_* settings of layers built on the public API: declared in
 * their descriptors, read once when the layer is registered (before
 * flit_init joins the job for the built-in ones), checked against their
 * range, and known to the warning about unknown variables.
 */
#include "core/pub_settings.h"

#include <stdlib.h>
#include <string.h>

#include "core/pub_layer.h"
#include "util/config.h"

/* values[i]: the settings' values of the i-th registered layer, in its
   order, kept for the process's life, as the registration is. */
static int64_t *values[FLIT_LAYER_MAX];

static bool declared_ok(const flit_layer_setting_t *s)
{
    return s->name && strncmp(s->name, "FLIT_", 5) == 0 && s->min <= s->max &&
           s->def >= s->min && s->def <= s->max;
}

/* Read as every other setting is: the layer's declarations as a table of
   whole numbers for the engine (util/config.c), so a bad value draws the
   same message as a transport's, once per job. */
flit_status fl_pub_settings_read(const flit_layer_t *l, unsigned i)
{
    for (unsigned k = 0; k < l->nsettings; k++)
        if (!declared_ok(&l->settings[k]))
            return FLIT_ERR_INVALID_ARG;
    int64_t *v = calloc(l->nsettings ? l->nsettings : 1, sizeof *v);
    struct fl_setting *table = calloc(l->nsettings + 1u, sizeof *table);
    if (!v || !table) {
        free(v);
        free(table);
        return FLIT_ERR_NO_MEMORY;
    }
    for (unsigned k = 0; k < l->nsettings; k++) {
        const flit_layer_setting_t *s = &l->settings[k];
        table[k] = (struct fl_setting){.name = s->name,
                                       .kind = FL_SET_INT,
                                       .value = &v[k],
                                       .def = s->def,
                                       .min = s->min,
                                       .max = s->max,
                                       .help = s->doc ? s->doc : ""};
    }
    flit_status st = fl_config_load_table(table);
    free(table);
    if (st != FLIT_OK) {
        free(v);
        return st;
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

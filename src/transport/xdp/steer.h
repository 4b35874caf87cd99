/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The XDP program steer.bpf.c as the build compiled it (clang -target
 * bpf): an ELF object, embedded in the library by embed.cmake so that no
 * file needs to be found at run time.
 */
#ifndef FL_TRANSPORT_XDP_STEER_H
#define FL_TRANSPORT_XDP_STEER_H

#include <stddef.h>

extern const unsigned char fl_xdp_steer_obj[];
extern const size_t fl_xdp_steer_obj_len;

#endif /* FL_TRANSPORT_XDP_STEER_H */

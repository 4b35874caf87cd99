/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The platform macros AMUDP installs (amx_portable_platform.h) and its
 * header includes, for programs that test them: which compiler, operating
 * system and processor this is, as preprocessor names a program can use in
 * #if. Each family is one macro defined to 1 (the others stay undefined,
 * so #if reads them as 0), plus its name as a token (..._FAMILYNAME) and a
 * number (..._FAMILYID). Only PLATFORM_* names, and AMUDP's include guard.
 *
 *   PLATFORM_COMPILER_GNU, _CLANG, _INTEL or _UNKNOWN, and the same with
 *     _C or _CXX appended for the language being compiled
 *     (PLATFORM_COMPILER_GNU_C); PLATFORM_COMPILER_C and _CXX (0 or 1);
 *     _FAMILYNAME, _FAMILYID, _VERSION (an integer:
 *     PLATFORM_COMPILER_VERSION_INT(maj, min, pat)), _VERSION_STR, _IDSTR,
 *     and PLATFORM_COMPILER_VERSION_GT/_GE/_EQ/_LE/_LT(maj, min, pat),
 *     which compare the version of the compiler at hand;
 *   PLATFORM_OS_LINUX, _DARWIN, _FREEBSD, _NETBSD, _OPENBSD, _CYGWIN,
 *     _UNKNOWN, _FAMILYNAME, _FAMILYID;
 *   PLATFORM_ARCH_X86_64, _X86, _AARCH64, _ARM, _POWERPC, _RISCV, _S390,
 *     _SPARC, _MIPS, _UNKNOWN, _FAMILYNAME, _FAMILYID; PLATFORM_ARCH_32 or
 *     PLATFORM_ARCH_64 (pointer width); PLATFORM_ARCH_LITTLE_ENDIAN or
 *     PLATFORM_ARCH_BIG_ENDIAN.
 */
#ifndef _PORTABLE_PLATFORM_H
#define _PORTABLE_PLATFORM_H

/* ---------------------------------------------------------------- compiler */

#define PLATFORM_COMPILER_VERSION_INT(maj, min, pat)                                     \
    (((maj) << 24) | ((min) << 16) | (pat))

#if defined(__INTEL_COMPILER) || defined(__INTEL_LLVM_COMPILER)
#define PLATFORM_COMPILER_INTEL      1
#define PLATFORM_COMPILER_FAMILYNAME INTEL
#define PLATFORM_COMPILER_FAMILYID   2
#if defined(__INTEL_LLVM_COMPILER)
#define PLATFORM_COMPILER_VERSION                                                        \
    PLATFORM_COMPILER_VERSION_INT(__INTEL_LLVM_COMPILER / 10000,                         \
                                  __INTEL_LLVM_COMPILER / 100 % 100,                     \
                                  __INTEL_LLVM_COMPILER % 100)
#else
#define PLATFORM_COMPILER_VERSION                                                        \
    PLATFORM_COMPILER_VERSION_INT(__INTEL_COMPILER / 100, __INTEL_COMPILER / 10 % 10,    \
                                  __INTEL_COMPILER % 10)
#endif
#elif defined(__clang__)
#define PLATFORM_COMPILER_CLANG      1
#define PLATFORM_COMPILER_FAMILYNAME CLANG
#define PLATFORM_COMPILER_FAMILYID   3
#define PLATFORM_COMPILER_VERSION                                                        \
    PLATFORM_COMPILER_VERSION_INT(__clang_major__, __clang_minor__, __clang_patchlevel__)
#elif defined(__GNUC__)
#define PLATFORM_COMPILER_GNU        1
#define PLATFORM_COMPILER_FAMILYNAME GNU
#define PLATFORM_COMPILER_FAMILYID   1
#define PLATFORM_COMPILER_VERSION                                                        \
    PLATFORM_COMPILER_VERSION_INT(__GNUC__, __GNUC_MINOR__, __GNUC_PATCHLEVEL__)
#else
#define PLATFORM_COMPILER_UNKNOWN    1
#define PLATFORM_COMPILER_FAMILYNAME UNKNOWN
#define PLATFORM_COMPILER_FAMILYID   0
#define PLATFORM_COMPILER_VERSION    0
#endif

#ifdef __cplusplus
#define PLATFORM_COMPILER_C   0
#define PLATFORM_COMPILER_CXX 1
#else
#define PLATFORM_COMPILER_C   1
#define PLATFORM_COMPILER_CXX 0
#endif
#if PLATFORM_COMPILER_GNU && PLATFORM_COMPILER_CXX
#define PLATFORM_COMPILER_GNU_CXX 1
#elif PLATFORM_COMPILER_GNU
#define PLATFORM_COMPILER_GNU_C 1
#elif PLATFORM_COMPILER_CLANG && PLATFORM_COMPILER_CXX
#define PLATFORM_COMPILER_CLANG_CXX 1
#elif PLATFORM_COMPILER_CLANG
#define PLATFORM_COMPILER_CLANG_C 1
#elif PLATFORM_COMPILER_INTEL && PLATFORM_COMPILER_CXX
#define PLATFORM_COMPILER_INTEL_CXX 1
#elif PLATFORM_COMPILER_INTEL
#define PLATFORM_COMPILER_INTEL_C 1
#elif PLATFORM_COMPILER_CXX
#define PLATFORM_COMPILER_UNKNOWN_CXX 1
#else
#define PLATFORM_COMPILER_UNKNOWN_C 1
#endif

#define PLATFORM_STRINGIFY_HELPER_(x) #x
#define PLATFORM_STRINGIFY_(x)        PLATFORM_STRINGIFY_HELPER_(x)
#ifdef __VERSION__
#define PLATFORM_COMPILER_VERSION_STR __VERSION__
#else
#define PLATFORM_COMPILER_VERSION_STR PLATFORM_STRINGIFY_(PLATFORM_COMPILER_VERSION)
#endif
#define PLATFORM_COMPILER_IDSTR                                                          \
    "|COMPILER_FAMILY:" PLATFORM_STRINGIFY_(                                             \
        PLATFORM_COMPILER_FAMILYNAME) "|COMPILER_VERSION:" PLATFORM_COMPILER_VERSION_STR \
                                      "|"

#define PLATFORM_COMPILER_VERSION_GT(maj, min, pat)                                      \
    (PLATFORM_COMPILER_VERSION > PLATFORM_COMPILER_VERSION_INT(maj, min, pat))
#define PLATFORM_COMPILER_VERSION_GE(maj, min, pat)                                      \
    (PLATFORM_COMPILER_VERSION >= PLATFORM_COMPILER_VERSION_INT(maj, min, pat))
#define PLATFORM_COMPILER_VERSION_EQ(maj, min, pat)                                      \
    (PLATFORM_COMPILER_VERSION == PLATFORM_COMPILER_VERSION_INT(maj, min, pat))
#define PLATFORM_COMPILER_VERSION_LE(maj, min, pat)                                      \
    (PLATFORM_COMPILER_VERSION <= PLATFORM_COMPILER_VERSION_INT(maj, min, pat))
#define PLATFORM_COMPILER_VERSION_LT(maj, min, pat)                                      \
    (PLATFORM_COMPILER_VERSION < PLATFORM_COMPILER_VERSION_INT(maj, min, pat))

/* ---------------------------------------------------------------- operating system */

#if defined(__linux__)
#define PLATFORM_OS_LINUX      1
#define PLATFORM_OS_FAMILYNAME LINUX
#define PLATFORM_OS_FAMILYID   1
#elif defined(__APPLE__) && defined(__MACH__)
#define PLATFORM_OS_DARWIN     1
#define PLATFORM_OS_FAMILYNAME DARWIN
#define PLATFORM_OS_FAMILYID   2
#elif defined(__FreeBSD__)
#define PLATFORM_OS_FREEBSD    1
#define PLATFORM_OS_FAMILYNAME FREEBSD
#define PLATFORM_OS_FAMILYID   3
#elif defined(__NetBSD__)
#define PLATFORM_OS_NETBSD     1
#define PLATFORM_OS_FAMILYNAME NETBSD
#define PLATFORM_OS_FAMILYID   4
#elif defined(__OpenBSD__)
#define PLATFORM_OS_OPENBSD    1
#define PLATFORM_OS_FAMILYNAME OPENBSD
#define PLATFORM_OS_FAMILYID   5
#elif defined(__CYGWIN__)
#define PLATFORM_OS_CYGWIN     1
#define PLATFORM_OS_FAMILYNAME CYGWIN
#define PLATFORM_OS_FAMILYID   6
#else
#define PLATFORM_OS_UNKNOWN    1
#define PLATFORM_OS_FAMILYNAME UNKNOWN
#define PLATFORM_OS_FAMILYID   0
#endif

/* ---------------------------------------------------------------- processor */

#if defined(__x86_64__) || defined(__x86_64) || defined(__amd64__)
#define PLATFORM_ARCH_X86_64     1
#define PLATFORM_ARCH_FAMILYNAME X86_64
#define PLATFORM_ARCH_FAMILYID   1
#elif defined(__i386__) || defined(__i386)
#define PLATFORM_ARCH_X86        1
#define PLATFORM_ARCH_FAMILYNAME X86
#define PLATFORM_ARCH_FAMILYID   2
#elif defined(__aarch64__)
#define PLATFORM_ARCH_AARCH64    1
#define PLATFORM_ARCH_FAMILYNAME AARCH64
#define PLATFORM_ARCH_FAMILYID   3
#elif defined(__arm__)
#define PLATFORM_ARCH_ARM        1
#define PLATFORM_ARCH_FAMILYNAME ARM
#define PLATFORM_ARCH_FAMILYID   4
#elif defined(__powerpc__) || defined(__powerpc64__) || defined(__PPC__)
#define PLATFORM_ARCH_POWERPC    1
#define PLATFORM_ARCH_FAMILYNAME POWERPC
#define PLATFORM_ARCH_FAMILYID   5
#elif defined(__riscv)
#define PLATFORM_ARCH_RISCV      1
#define PLATFORM_ARCH_FAMILYNAME RISCV
#define PLATFORM_ARCH_FAMILYID   6
#elif defined(__s390__)
#define PLATFORM_ARCH_S390       1
#define PLATFORM_ARCH_FAMILYNAME S390
#define PLATFORM_ARCH_FAMILYID   7
#elif defined(__sparc__) || defined(__sparc)
#define PLATFORM_ARCH_SPARC      1
#define PLATFORM_ARCH_FAMILYNAME SPARC
#define PLATFORM_ARCH_FAMILYID   8
#elif defined(__mips__)
#define PLATFORM_ARCH_MIPS       1
#define PLATFORM_ARCH_FAMILYNAME MIPS
#define PLATFORM_ARCH_FAMILYID   9
#else
#define PLATFORM_ARCH_UNKNOWN    1
#define PLATFORM_ARCH_FAMILYNAME UNKNOWN
#define PLATFORM_ARCH_FAMILYID   0
#endif

#if defined(__SIZEOF_POINTER__) && __SIZEOF_POINTER__ == 8
#define PLATFORM_ARCH_64 1
#elif defined(__SIZEOF_POINTER__) && __SIZEOF_POINTER__ == 4
#define PLATFORM_ARCH_32 1
#elif defined(__LP64__) || defined(_LP64)
#define PLATFORM_ARCH_64 1
#else
#define PLATFORM_ARCH_32 1
#endif

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
#define PLATFORM_ARCH_BIG_ENDIAN 1
#elif defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define PLATFORM_ARCH_LITTLE_ENDIAN 1
#elif defined(__BIG_ENDIAN__) || defined(__ARMEB__) || defined(__MIPSEB__)
#define PLATFORM_ARCH_BIG_ENDIAN 1
#else
#define PLATFORM_ARCH_LITTLE_ENDIAN 1
#endif

#endif /* _PORTABLE_PLATFORM_H */

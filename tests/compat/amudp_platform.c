/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * amx_portable_platform.h, as AMUDP programs use it: through <amudp.h>,
 * which includes it, and on its own. Exactly one compiler, system and
 * processor family is named, and each agrees with what this program finds
 * at run time (pointer width, byte order, the compiler's own macros).
 */
#include <amudp.h>
#include <amx_portable_platform.h>
#include <stdint.h>
#include <string.h>

#include "test.h"

#define STR_(x) #x
#define STR(x)  STR_(x)

#if PLATFORM_COMPILER_GNU + PLATFORM_COMPILER_CLANG + PLATFORM_COMPILER_INTEL +          \
        PLATFORM_COMPILER_UNKNOWN !=                                                     \
    1
#error "not exactly one compiler family"
#endif
#if PLATFORM_OS_LINUX + PLATFORM_OS_DARWIN + PLATFORM_OS_FREEBSD + PLATFORM_OS_NETBSD +  \
        PLATFORM_OS_OPENBSD + PLATFORM_OS_CYGWIN + PLATFORM_OS_UNKNOWN !=                \
    1
#error "not exactly one operating system"
#endif
#if PLATFORM_ARCH_X86_64 + PLATFORM_ARCH_X86 + PLATFORM_ARCH_AARCH64 +                   \
        PLATFORM_ARCH_ARM + PLATFORM_ARCH_POWERPC + PLATFORM_ARCH_RISCV +                \
        PLATFORM_ARCH_S390 + PLATFORM_ARCH_SPARC + PLATFORM_ARCH_MIPS +                  \
        PLATFORM_ARCH_UNKNOWN !=                                                         \
    1
#error "not exactly one processor family"
#endif
#if PLATFORM_ARCH_32 + PLATFORM_ARCH_64 != 1 ||                                          \
    PLATFORM_ARCH_LITTLE_ENDIAN + PLATFORM_ARCH_BIG_ENDIAN != 1
#error "pointer width or byte order not named once"
#endif
#if !PLATFORM_COMPILER_C || PLATFORM_COMPILER_CXX
#error "this is C"
#endif
#if defined(__linux__) && !PLATFORM_OS_LINUX
#error "Linux not recognised"
#endif
#if defined(__x86_64__) && !PLATFORM_ARCH_X86_64
#error "x86-64 not recognised"
#endif
#if defined(__aarch64__) && !PLATFORM_ARCH_AARCH64
#error "AArch64 not recognised"
#endif

int main(void)
{
    CHECK(sizeof(void *) == (PLATFORM_ARCH_64 ? 8 : 4));
    const uint16_t one = 1;
    CHECK(*(const unsigned char *)&one == (PLATFORM_ARCH_LITTLE_ENDIAN ? 1 : 0));
#if defined(__clang__)
#if !PLATFORM_COMPILER_CLANG_C || PLATFORM_COMPILER_GNU
    FAIL("clang compiling C is not PLATFORM_COMPILER_CLANG_C alone");
#endif
    CHECK(PLATFORM_COMPILER_VERSION ==
          PLATFORM_COMPILER_VERSION_INT(__clang_major__, __clang_minor__,
                                        __clang_patchlevel__));
    CHECK(strcmp(STR(PLATFORM_COMPILER_FAMILYNAME), "CLANG") == 0);
#elif defined(__GNUC__) && !defined(__INTEL_COMPILER) && !defined(__INTEL_LLVM_COMPILER)
#if !PLATFORM_COMPILER_GNU_C || PLATFORM_COMPILER_CLANG
    FAIL("gcc compiling C is not PLATFORM_COMPILER_GNU_C alone");
#endif
    CHECK(PLATFORM_COMPILER_VERSION_EQ(__GNUC__, __GNUC_MINOR__, __GNUC_PATCHLEVEL__));
    CHECK(strcmp(STR(PLATFORM_COMPILER_FAMILYNAME), "GNU") == 0);
#endif
    CHECK(PLATFORM_COMPILER_VERSION_GE(0, 0, 0) &&
          PLATFORM_COMPILER_VERSION_LT(100, 0, 0));
    CHECK(!PLATFORM_COMPILER_VERSION_GT(100, 0, 0) &&
          PLATFORM_COMPILER_VERSION_LE(100, 0, 0));
    CHECK(PLATFORM_COMPILER_VERSION_INT(1, 2, 3) <
          PLATFORM_COMPILER_VERSION_INT(1, 3, 0));
    CHECK(strstr(PLATFORM_COMPILER_IDSTR, STR(PLATFORM_COMPILER_FAMILYNAME)) != NULL);
    CHECK(strlen(PLATFORM_COMPILER_VERSION_STR) > 0);
#if defined(__linux__)
    CHECK(strcmp(STR(PLATFORM_OS_FAMILYNAME), "LINUX") == 0 && PLATFORM_OS_FAMILYID == 1);
#endif
#if defined(__x86_64__)
    CHECK(strcmp(STR(PLATFORM_ARCH_FAMILYNAME), "X86_64") == 0);
#endif
    printf("amudp_platform: %s, %s, %s, %d-bit\n", PLATFORM_COMPILER_IDSTR,
           STR(PLATFORM_OS_FAMILYNAME), STR(PLATFORM_ARCH_FAMILYNAME),
           PLATFORM_ARCH_64 ? 64 : 32);
    return 0;
}

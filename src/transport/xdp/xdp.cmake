# SPDX-License-Identifier: BSD-3-Clause
# The AF_XDP transport's sources, included by the top CMakeLists.txt when
# FLIT_WITH_XDP: its C files (frame.c, the decoder, is built always: its
# test and fuzzer need no libxdp), and its XDP program compiled to BPF by clang
# and embedded as a C array (embed.cmake).
set(FLIT_XDP_DIR ${PROJECT_SOURCE_DIR}/src/transport/xdp)
set(FLIT_XDP_GEN ${PROJECT_BINARY_DIR}/src/transport/xdp)
file(MAKE_DIRECTORY ${FLIT_XDP_GEN})
# The kernel headers' asm/ lives under the multiarch directory on Debian.
set(FLIT_BPF_INCLUDES)
if(CMAKE_LIBRARY_ARCHITECTURE)
  list(APPEND FLIT_BPF_INCLUDES -I/usr/include/${CMAKE_LIBRARY_ARCHITECTURE})
endif()
add_custom_command(
  OUTPUT ${FLIT_XDP_GEN}/steer.bpf.o
  COMMAND ${FLIT_BPF_CLANG} -O2 -g -target bpf ${FLIT_BPF_INCLUDES}
          -c ${FLIT_XDP_DIR}/steer.bpf.c -o ${FLIT_XDP_GEN}/steer.bpf.o
  DEPENDS ${FLIT_XDP_DIR}/steer.bpf.c
  COMMENT "Compiling the XDP program steer.bpf.c to BPF")
add_custom_command(
  OUTPUT ${FLIT_XDP_GEN}/steer_obj.c
  COMMAND ${CMAKE_COMMAND} -DIN=${FLIT_XDP_GEN}/steer.bpf.o
          -DOUT=${FLIT_XDP_GEN}/steer_obj.c -P ${FLIT_XDP_DIR}/embed.cmake
  DEPENDS ${FLIT_XDP_GEN}/steer.bpf.o ${FLIT_XDP_DIR}/embed.cmake)
# Beside FLIT_SOURCES, not in it: the libFuzzer build compiles that list
# again, without libxdp.
set(FLIT_XDP_SOURCES
  src/transport/xdp/neigh.c
  src/transport/xdp/xsk.c
  src/transport/xdp/xdp.c
  ${FLIT_XDP_GEN}/steer_obj.c)

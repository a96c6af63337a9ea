/* private_header.c — a probe of the build's privacy (tests/CMakeLists.txt): compiled against a
 * library that links the owner of LG_PROBE_HEADER, a header private to its folder, it must not
 * find it. */
#include LG_PROBE_HEADER

int lg_probe_private(void);
int lg_probe_private(void) { return 0; }

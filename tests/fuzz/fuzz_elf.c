/* fuzz_elf.c — libFuzzer target for the ELF symbol lookup that names a retention path's root
 * (hx_elf_symbol, harness/exec/exec_keep.c). The module's path comes from the program's memory map,
 * so its bytes are not trusted: any input must return found or not found, never read outside
 * the buffer (ASan watches). The first 16 bytes choose the address and the load base.
 *
 *   ci/fuzz 60 fuzz_elf
 * Seeds: tests/fuzz/elf (a small executable with a global, and the same stripped to .dynsym).
 */
#include <stdlib.h>
#include <string.h>

#include "exec_impl.h"
#include "lg_fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    uint64_t addr = 0x4010, base = 0;
    if (size > 16) { /* a seed is a whole ELF file: its own bytes are both the header and these */
        memcpy(&addr, data + size - 16, 8);
        memcpy(&base, data + size - 8, 8);
    }
    /* a copy of exactly `size` bytes, 8-aligned as a mapped file is, so ASan sees any overread */
    unsigned char *img = malloc(size ? size : 1);
    if (!img) return 0;
    memcpy(img, data, size);
    char name[64];
    uint64_t off = 0;
    int found = hx_elf_symbol(img, size, addr, base, name, sizeof name, &off);
    if (found != 0 && found != 1) lg_fuzz_die("hx_elf_symbol returned neither 0 nor 1");
    if (found && (strlen(name) == 0 || strlen(name) >= sizeof name))
        lg_fuzz_die("a found symbol has no name or an unterminated one");
    free(img);
    return 0;
}

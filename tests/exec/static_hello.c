/* static_hello.c — linked with -static: no dynamic linker, so leakgate exec must refuse it. */
#include <stdio.h>

int main(void)
{
    puts("hello from a static program");
    return 0;
}

/* Preloaded into a command by tests/cli/light_commands.sh: when the process exits, its
 * /proc/self/maps is copied to $COHORT_TEST_MAPS (the libraries it really mapped, dlopen'ed ones
 * included). Test-only; never installed. */
#include <stdio.h>
#include <stdlib.h>

__attribute__((destructor)) static void copy_maps(void) {
  const char* path = getenv("COHORT_TEST_MAPS");
  if (path == NULL) return;
  FILE* in = fopen("/proc/self/maps", "r");
  FILE* out = fopen(path, "w");
  if (in != NULL && out != NULL) {
    char buffer[4096];
    size_t n;
    while ((n = fread(buffer, 1, sizeof buffer, in)) > 0) fwrite(buffer, 1, n, out);
  }
  if (in != NULL) fclose(in);
  if (out != NULL) fclose(out);
}

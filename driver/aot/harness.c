/* Run an AOT-compiled model from files: the C harness of `vta compile --executor aot`.
 *
 *   harness IN_0.bin ... IN_{n-1}.bin OUT_0.bin ... OUT_{m-1}.bin
 *
 * Each input file holds the raw bytes of one input (little-endian, C order), in the
 * order and of the size model.h declares; each output is written the same way. Built
 * with the module's model.h on the include path and linked with its model.o (cross:
 * `aarch64-linux-gnu-gcc -static -I MODULE harness.c MODULE/model.o -fopenmp -lm`) or
 * model.so (host); driver/aot/harness.py does both. The same source builds for
 * x86-64, AArch64 and ARMv7. A module compiled with `--aot-prefix mnist_` needs
 * `-DAOT_PREFIX=mnist_ -DAOT_PREFIX_UPPER=MNIST_` (harness.py passes the manifest's).
 *
 * Exit status (a one-line message on stderr names the file and the fix):
 *   0 success; 2 wrong number of arguments; 3 an input file cannot be read;
 *   4 an input file has the wrong size; 5 an output file cannot be written;
 *   6 the model returned a non-zero status; 7 out of memory.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model.h"

/* model.h's names start with its prefix: vtamod_ unless given on the command line. */
#ifndef AOT_PREFIX
#define AOT_PREFIX vtamod_
#define AOT_PREFIX_UPPER VTAMOD_
#endif
#define CAT_(a, b) a##b
#define CAT(a, b) CAT_(a, b)
#define STR_(a) #a
#define STR(a) STR_(a)
#define M(name) CAT(AOT_PREFIX, name)        /* M(run): vtamod_run */
#define MU(name) CAT(AOT_PREFIX_UPPER, name) /* MU(ALIGN): VTAMOD_ALIGN */

enum { OK = 0, E_USAGE = 2, E_READ = 3, E_SIZE = 4, E_WRITE = 5, E_MODEL = 6, E_NOMEM = 7 };

/* The workspace: static, so a run allocates nothing beyond the input/output buffers. */
static unsigned char workspace[MU(WORKSPACE_BYTES) + MU(ALIGN)]
    __attribute__((aligned(MU(ALIGN))));

static void *alloc_aligned(size_t n) {
    size_t rounded = (n + MU(ALIGN) - 1) / MU(ALIGN) * MU(ALIGN);
    return aligned_alloc(MU(ALIGN), rounded ? rounded : MU(ALIGN));
}

/* Read exactly `n` bytes of `path` into `dst`; the file must hold no more. */
static int read_input(int i, const char *path, void *dst, size_t n) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "harness: input %d '%s': cannot open %s (%s); give one raw file per "
                "input\n", i, M(input_names)[i], path, strerror(errno));
        return E_READ;
    }
    size_t got = fread(dst, 1, n, f);
    int extra = fgetc(f) != EOF;
    fclose(f);
    if (got != n || extra) {
        fprintf(stderr, "harness: input %d '%s': %s holds %s%zu bytes, the model takes %zu "
                "(%s); write the array's raw bytes (numpy: x.astype('%s').tofile(path))\n",
                i, M(input_names)[i], path, extra ? "more than " : "", got, n,
                M(input_desc)[i], M(input_dtypes)[i]);
        return E_SIZE;
    }
    return OK;
}

static int write_output(int i, const char *path, const void *src, size_t n) {
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(src, 1, n, f) != n || fclose(f) != 0) {
        fprintf(stderr, "harness: output %d '%s': cannot write %s (%s)\n", i,
                M(output_names)[i], path, strerror(errno));
        return E_WRITE;
    }
    return OK;
}

int main(int argc, char **argv) {
    void *inputs[MU(NUM_INPUTS) + 1], *outputs[MU(NUM_OUTPUTS) + 1];
    int status = OK, i;
    if (argc != 1 + MU(NUM_INPUTS) + MU(NUM_OUTPUTS)) {
        fprintf(stderr, "harness: %d file argument(s), the model takes %d input and %d output "
                "file(s): %s IN.bin... OUT.bin...\n", argc - 1, MU(NUM_INPUTS),
                MU(NUM_OUTPUTS), argv[0]);
        return E_USAGE;
    }
    for (i = 0; i < MU(NUM_INPUTS); i++) inputs[i] = alloc_aligned(M(input_bytes)[i]);
    for (i = 0; i < MU(NUM_OUTPUTS); i++) outputs[i] = alloc_aligned(M(output_bytes)[i]);
    for (i = 0; i < MU(NUM_INPUTS) && status == OK; i++)
        status = inputs[i] ? read_input(i, argv[1 + i], inputs[i], M(input_bytes)[i]) : E_NOMEM;
    for (i = 0; i < MU(NUM_OUTPUTS) && status == OK; i++)
        if (!outputs[i]) status = E_NOMEM;
    if (status == E_NOMEM) fprintf(stderr, "harness: out of memory for the inputs/outputs\n");
    if (status == OK) {
        int32_t rc = M(run)(inputs, outputs, workspace);
        if (rc != 0) {
            fprintf(stderr, "harness: " STR(M(run)) " returned %d (-1: NULL pointer, -2: "
                    "misaligned pointer, >0: a kernel's status)\n", (int)rc);
            status = E_MODEL;
        }
    }
    for (i = 0; i < MU(NUM_OUTPUTS) && status == OK; i++)
        status = write_output(i, argv[1 + MU(NUM_INPUTS) + i], outputs[i],
                              M(output_bytes)[i]);
    for (i = 0; i < MU(NUM_INPUTS); i++) free(inputs[i]);
    for (i = 0; i < MU(NUM_OUTPUTS); i++) free(outputs[i]);
    return status;
}

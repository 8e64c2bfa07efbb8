/* A qemu TCG plugin (plugin API version 1, as qemu-user 7.2 has it) counting the guest
 * instructions a program executes between markers the program sets itself:
 *
 *   qemu-aarch64 -d plugin [-D LOG] -plugin ./insn_count.so[,blocks=N] PROGRAM ...
 *
 * (qemu writes a plugin's output only with -d plugin: to stderr, or to LOG. It also runs under
 * qemu-x86_64, whose AVX2 emulation lets it count the avx2 level's instructions too.)
 *
 * The program opens a region with close(-1234567) and ends it with close(-1234568) (a syscall no
 * program makes otherwise: close() of a negative descriptor fails with EBADF and does nothing);
 * at each end the plugin writes "insn_count: region R: N instructions" to qemu's log. Counting: each
 * translated block adds its instruction count to a counter, inline, every time it is entered
 * (qemu_plugin_register_vcpu_tb_exec_inline), so the count is exact for code that runs on one
 * thread and leaves its blocks only by their last instruction. With blocks=N it also writes, at
 * each region's end, the N blocks that executed the most instructions in it: their guest address,
 * instruction count and executions (where a kernel's inner loop is).
 *
 * Built from the repository by benchmarks/aarch64/instructions.py (cc -shared -fPIC). Debian's
 * qemu-user ships no plugin header: the few functions and types of the API used here are declared
 * below as qemu 7.2's include/qemu/qemu-plugin.h declares them. */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- qemu-plugin.h, version 1: the declarations used here ---- */
typedef uint64_t qemu_plugin_id_t;
typedef struct qemu_info_t {
    const char* target_name; /* the first member; the rest is not used here */
} qemu_info_t;
struct qemu_plugin_tb;
enum qemu_plugin_op { QEMU_PLUGIN_INLINE_ADD_U64 };
typedef void (*qemu_plugin_vcpu_tb_trans_cb_t)(qemu_plugin_id_t id, struct qemu_plugin_tb* tb);
typedef void (*qemu_plugin_vcpu_syscall_cb_t)(qemu_plugin_id_t id, unsigned int vcpu_index,
                                              int64_t num, uint64_t a1, uint64_t a2, uint64_t a3,
                                              uint64_t a4, uint64_t a5, uint64_t a6, uint64_t a7,
                                              uint64_t a8);
typedef void (*qemu_plugin_udata_cb_t)(qemu_plugin_id_t id, void* userdata);
void qemu_plugin_register_vcpu_tb_trans_cb(qemu_plugin_id_t id, qemu_plugin_vcpu_tb_trans_cb_t cb);
void qemu_plugin_register_vcpu_tb_exec_inline(struct qemu_plugin_tb* tb, enum qemu_plugin_op op,
                                              void* ptr, uint64_t imm);
size_t qemu_plugin_tb_n_insns(const struct qemu_plugin_tb* tb);
uint64_t qemu_plugin_tb_vaddr(const struct qemu_plugin_tb* tb);
void qemu_plugin_register_vcpu_syscall_cb(qemu_plugin_id_t id, qemu_plugin_vcpu_syscall_cb_t cb);
void qemu_plugin_register_atexit_cb(qemu_plugin_id_t id, qemu_plugin_udata_cb_t cb, void* userdata);
void qemu_plugin_outs(const char* string);
#define QEMU_PLUGIN_EXPORT __attribute__((visibility("default")))
QEMU_PLUGIN_EXPORT int qemu_plugin_version = 1;
/* ---- end of qemu-plugin.h ---- */

#define MARK_START ((uint32_t)-1234567)
#define MARK_STOP ((uint32_t)-1234568)
static int64_t syscall_close = 57; /* AArch64's (the generic table's) close; x86-64's is 3 */

static uint64_t executed; /* instructions of every block entered */
static uint64_t started;  /* `executed` at the region's start */
static uint64_t regions;
static int region_open;

/* blocks=N: a record per translated block, its executions counted inline too. */
struct block {
    uint64_t vaddr, insns, runs, runs_at_start;
};
static struct block** blocks;
static size_t block_count, block_room;
static unsigned hottest;

static void on_translate(qemu_plugin_id_t id, struct qemu_plugin_tb* tb) {
    (void)id;
    const size_t insns = qemu_plugin_tb_n_insns(tb);
    qemu_plugin_register_vcpu_tb_exec_inline(tb, QEMU_PLUGIN_INLINE_ADD_U64, &executed, insns);
    if (hottest == 0) return;
    if (block_count == block_room) {
        block_room = block_room ? 2 * block_room : 4096;
        blocks = realloc(blocks, block_room * sizeof *blocks);
    }
    /* Never freed: qemu may translate a block again, and keeps calling the inline op's target. */
    struct block* b = calloc(1, sizeof *b);
    b->vaddr = qemu_plugin_tb_vaddr(tb);
    b->insns = insns;
    blocks[block_count++] = b;
    qemu_plugin_register_vcpu_tb_exec_inline(tb, QEMU_PLUGIN_INLINE_ADD_U64, &b->runs, 1);
}

static int by_instructions(const void* x, const void* y) {
    const struct block *a = *(struct block*const*)x, *b = *(struct block*const*)y;
    const uint64_t ia = a->insns * (a->runs - a->runs_at_start);
    const uint64_t ib = b->insns * (b->runs - b->runs_at_start);
    return ia < ib ? 1 : ia > ib ? -1 : 0;
}

static void on_syscall(qemu_plugin_id_t id, unsigned int vcpu, int64_t num, uint64_t a1,
                       uint64_t a2, uint64_t a3, uint64_t a4, uint64_t a5, uint64_t a6, uint64_t a7,
                       uint64_t a8) {
    (void)id, (void)vcpu, (void)a2, (void)a3, (void)a4, (void)a5, (void)a6, (void)a7, (void)a8;
    if (num != syscall_close) return;
    char line[160];
    if ((uint32_t)a1 == MARK_START) {
        for (size_t i = 0; i < block_count; ++i) blocks[i]->runs_at_start = blocks[i]->runs;
        started = executed;
        region_open = 1;
    } else if ((uint32_t)a1 == MARK_STOP && region_open) {
        region_open = 0;
        snprintf(line, sizeof line, "insn_count: region %" PRIu64 ": %" PRIu64 " instructions\n",
                 regions++, executed - started);
        qemu_plugin_outs(line);
        if (hottest == 0) return;
        qsort(blocks, block_count, sizeof *blocks, by_instructions);
        for (size_t i = 0; i < block_count && i < hottest; ++i) {
            const struct block* b = blocks[i];
            snprintf(line, sizeof line,
                     "insn_count: block 0x%" PRIx64 " %" PRIu64 " instructions, %" PRIu64 " runs\n",
                     b->vaddr, b->insns, b->runs - b->runs_at_start);
            qemu_plugin_outs(line);
        }
    }
}

static void on_program_exit(qemu_plugin_id_t id, void* userdata) {
    (void)id, (void)userdata;
    char line[96];
    snprintf(line, sizeof line, "insn_count: %" PRIu64 " instructions in all\n", executed);
    qemu_plugin_outs(line);
}

QEMU_PLUGIN_EXPORT int qemu_plugin_install(qemu_plugin_id_t id, const qemu_info_t* info, int argc,
                                           char** argv) {
    if (strcmp(info->target_name, "x86_64") == 0) syscall_close = 3;
    for (int i = 0; i < argc; ++i) {
        if (strncmp(argv[i], "blocks=", 7) == 0) {
            hottest = (unsigned)strtoul(argv[i] + 7, NULL, 10);
        } else {
            fprintf(stderr, "insn_count: unknown argument '%s' (blocks=N)\n", argv[i]);
            return -1;
        }
    }
    qemu_plugin_register_vcpu_tb_trans_cb(id, on_translate);
    qemu_plugin_register_vcpu_syscall_cb(id, on_syscall);
    qemu_plugin_register_atexit_cb(id, on_program_exit, NULL);
    return 0;
}

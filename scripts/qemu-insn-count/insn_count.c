/* A qemu-user TCG plugin that counts executed guest instructions, and separately the RVV ones
 * (major opcode OP-V 0x57, or vector loads/stores: LOAD-FP 0x07 / STORE-FP 0x27 with a vector
 * width field). Counters are inline adds (no callbacks), so the overhead is small. Run one guest
 * thread when exact counts matter: the inline adds of concurrent vCPUs are not atomic.
 * skip=<begin>-<end> (hex or decimal guest addresses, [begin, end)): instructions there are not
 * counted but totalled apart (an IME2 emulation build's software model: k3bench's JSON gives the
 * range as ime2_instructions.model_code, nm as __start_/__stop_k3_ime2_model).
 * Regions: a guest that makes the marker system call (number K3_COUNT_MARK_SYSCALL, first argument
 * a region id below MAX_REGIONS; unknown to Linux, so it returns ENOSYS and does nothing else) ends
 * the current region there and starts that one; the counts of each region used are printed as
 * "region=<id> insns=<n> vector_insns=<n> skipped_insns=<n>" lines after the totals. Region 0 is
 * where a process starts. The inline adds run when a translation block starts, and a system call
 * ends its block, so a region's count is exact to the instruction (the marker's own ecall and the
 * few instructions that set it up belong to the region it ends).
 * mem=on: also the bytes the counted instructions load and store, as qemu reports each access to
 * a plugin (a callback per access: many times slower), apart for vector and scalar instructions:
 * " load_bytes=<n> store_bytes=<n> vector_load_bytes=<n> vector_store_bytes=<n>" after the counts
 * of the totals and of every region. qemu-user 7.2 runs an RVV load or store as one access per
 * element (target/riscv/vector_helper.c through cpu_ld*_data_ra), and each reports itself.
 * Output: "insns=<n> vector_insns=<n>" (plus " skipped_insns=<n>" with skip=) on stderr at exit,
 * or into outfile=<path>. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "qemu/qemu-plugin.h"

QEMU_PLUGIN_EXPORT int qemu_plugin_version = QEMU_PLUGIN_VERSION;

static uint64_t total_insns;
static uint64_t vector_insns;
static uint64_t skipped_insns;
static char outfile[4096];
static int have_skip;
static uint64_t skip_begin, skip_end;
static int count_memory;
/* [vector][store]: bytes accessed by counted instructions (mem=on). */
static uint64_t mem_bytes[2][2];

/* Keep in step with harness/runner/model/count_marks.h. */
#define K3_COUNT_MARK_SYSCALL 0x4b33
#define MAX_REGIONS 4096
struct region {
  uint64_t insns, vector_insns, skipped_insns;
  uint64_t mem_bytes[2][2];
  int used;
};
static struct region regions[MAX_REGIONS];
static unsigned current_region;
static int markers_seen;
static uint64_t mark_insns, mark_vector, mark_skipped; /* the totals at the last marker */
static uint64_t mark_mem[2][2];

/* Everything counted since the last marker belongs to the region it ends. */
static void close_region(void) {
  struct region *r = &regions[current_region];
  r->insns += total_insns - mark_insns;
  r->vector_insns += vector_insns - mark_vector;
  r->skipped_insns += skipped_insns - mark_skipped;
  for (int v = 0; v < 2; ++v)
    for (int st = 0; st < 2; ++st) {
      r->mem_bytes[v][st] += mem_bytes[v][st] - mark_mem[v][st];
      mark_mem[v][st] = mem_bytes[v][st];
    }
  r->used = 1;
  mark_insns = total_insns;
  mark_vector = vector_insns;
  mark_skipped = skipped_insns;
}

static void on_syscall(qemu_plugin_id_t id, unsigned int vcpu_index, int64_t num, uint64_t a1,
                       uint64_t a2, uint64_t a3, uint64_t a4, uint64_t a5, uint64_t a6, uint64_t a7,
                       uint64_t a8) {
  (void)id, (void)vcpu_index, (void)a2, (void)a3, (void)a4, (void)a5, (void)a6, (void)a7, (void)a8;
  if (num != K3_COUNT_MARK_SYSCALL || a1 >= MAX_REGIONS) return;
  close_region();
  current_region = (unsigned)a1;
  markers_seen = 1;
}

static int skipped(const struct qemu_plugin_insn *insn) {
  const uint64_t pc = qemu_plugin_insn_vaddr(insn);
  return have_skip && pc >= skip_begin && pc < skip_end;
}

static int is_vector(const struct qemu_plugin_insn *insn) {
  if (qemu_plugin_insn_size(insn) != 4) return 0;
  uint32_t word;
  memcpy(&word, qemu_plugin_insn_data(insn), 4);
  const uint32_t opcode = word & 0x7F;
  if (opcode == 0x57) return 1; /* OP-V (arithmetic, vsetvl) */
  if (opcode == 0x07 || opcode == 0x27) {
    const uint32_t width = (word >> 12) & 0x7; /* 0,5,6,7: vector element widths; 1-4: scalar FP */
    return width == 0 || width >= 5;
  }
  return 0;
}

/* One access of a counted instruction; udata: 1 for a vector instruction. */
static void on_mem(unsigned int vcpu_index, qemu_plugin_meminfo_t info, uint64_t vaddr, void *udata) {
  (void)vcpu_index, (void)vaddr;
  mem_bytes[udata != NULL][qemu_plugin_mem_is_store(info) ? 1 : 0] +=
      (uint64_t)1 << qemu_plugin_mem_size_shift(info);
}

static void print_mem(FILE *f, uint64_t m[2][2]) {
  if (!count_memory) return;
  fprintf(f, " load_bytes=%" PRIu64 " store_bytes=%" PRIu64 " vector_load_bytes=%" PRIu64
             " vector_store_bytes=%" PRIu64,
          m[0][0] + m[1][0], m[0][1] + m[1][1], m[1][0], m[1][1]);
}

static void on_tb_translate(qemu_plugin_id_t id, struct qemu_plugin_tb *tb) {
  (void)id;
  const size_t n = qemu_plugin_tb_n_insns(tb);
  size_t counted = 0;
  for (size_t i = 0; i < n; ++i) counted += !skipped(qemu_plugin_tb_get_insn(tb, i));
  if (counted > 0) qemu_plugin_register_vcpu_tb_exec_inline(tb, QEMU_PLUGIN_INLINE_ADD_U64, &total_insns, counted);
  if (counted < n) qemu_plugin_register_vcpu_tb_exec_inline(tb, QEMU_PLUGIN_INLINE_ADD_U64, &skipped_insns, n - counted);
  for (size_t i = 0; i < n; ++i) {
    struct qemu_plugin_insn *insn = qemu_plugin_tb_get_insn(tb, i);
    if (!skipped(insn) && is_vector(insn)) {
      qemu_plugin_register_vcpu_insn_exec_inline(insn, QEMU_PLUGIN_INLINE_ADD_U64, &vector_insns, 1);
    }
    if (count_memory && !skipped(insn)) {
      qemu_plugin_register_vcpu_mem_cb(insn, on_mem, QEMU_PLUGIN_CB_NO_REGS, QEMU_PLUGIN_MEM_RW,
                                       is_vector(insn) ? (void *)1 : NULL);
    }
  }
}

static void at_exit(qemu_plugin_id_t id, void *data) {
  (void)id;
  (void)data;
  FILE *f = outfile[0] ? fopen(outfile, "w") : stderr;
  if (!f) f = stderr;
  fprintf(f, "insns=%" PRIu64 " vector_insns=%" PRIu64, total_insns, vector_insns);
  if (have_skip) fprintf(f, " skipped_insns=%" PRIu64, skipped_insns);
  print_mem(f, mem_bytes);
  fprintf(f, "\n");
  if (markers_seen) { /* every region used */
    close_region();
    for (unsigned i = 0; i < MAX_REGIONS; ++i) {
      if (!regions[i].used) continue;
      fprintf(f, "region=%u insns=%" PRIu64 " vector_insns=%" PRIu64 " skipped_insns=%" PRIu64, i,
              regions[i].insns, regions[i].vector_insns, regions[i].skipped_insns);
      print_mem(f, regions[i].mem_bytes);
      fprintf(f, "\n");
    }
  }
  if (f != stderr) fclose(f);
}

QEMU_PLUGIN_EXPORT int qemu_plugin_install(qemu_plugin_id_t id, const qemu_info_t *info, int argc,
                                           char **argv) {
  (void)info;
  for (int i = 0; i < argc; ++i) {
    if (strncmp(argv[i], "outfile=", 8) == 0) snprintf(outfile, sizeof(outfile), "%s", argv[i] + 8);
    if (strcmp(argv[i], "mem=on") == 0) count_memory = 1;
    if (strncmp(argv[i], "skip=", 5) == 0) {
      char *end = NULL;
      skip_begin = strtoull(argv[i] + 5, &end, 0);
      if (!end || *end != '-') {
        fprintf(stderr, "insn_count: skip=<begin>-<end> expected, got '%s'\n", argv[i]);
        return -1;
      }
      skip_end = strtoull(end + 1, NULL, 0);
      have_skip = skip_end > skip_begin;
    }
  }
  qemu_plugin_register_vcpu_tb_trans_cb(id, on_tb_translate);
  qemu_plugin_register_vcpu_syscall_cb(id, on_syscall);
  qemu_plugin_register_atexit_cb(id, at_exit, NULL);
  return 0;
}

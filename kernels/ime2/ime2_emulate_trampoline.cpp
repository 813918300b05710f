// Emulation builds: the trampoline every emulated IME2 instruction calls and the vector register
// moves its decoder makes (ime2_emulate.cpp). Assembly only, in a file of its own because it is
// the one part of the emulation compiled with V: the decoder and the model are compiled without
// it (kernels/CMakeLists.txt), so that they leave every vector register where it is.
#if defined(K3_IME2_EMULATION)

// The frame: [0, 544) scalar state (x_i at 8i, f_i at 256 + 8i, vl, vtype, fcsr, vcsr at
// 512..536), below it the register image, 32 * vlenb bytes for v0..v31 (the decoder fills what it
// reads).
asm(R"(
    .pushsection k3_ime2_model, "ax", @progbits
    .globl k3_ime2_emulate_insn
    .type k3_ime2_emulate_insn, @function
    .p2align 2
k3_ime2_emulate_insn:
    addi sp, sp, -544
)"
    "sd x1, 8(sp)\n"
    "sd x3, 24(sp)\n"
    "sd x4, 32(sp)\n"
    "sd x5, 40(sp)\n"
    "sd x6, 48(sp)\n"
    "sd x7, 56(sp)\n"
    "sd x8, 64(sp)\n"
    "sd x9, 72(sp)\n"
    "sd x10, 80(sp)\n"
    "sd x11, 88(sp)\n"
    "sd x12, 96(sp)\n"
    "sd x13, 104(sp)\n"
    "sd x14, 112(sp)\n"
    "sd x15, 120(sp)\n"
    "sd x16, 128(sp)\n"
    "sd x17, 136(sp)\n"
    "sd x18, 144(sp)\n"
    "sd x19, 152(sp)\n"
    "sd x20, 160(sp)\n"
    "sd x21, 168(sp)\n"
    "sd x22, 176(sp)\n"
    "sd x23, 184(sp)\n"
    "sd x24, 192(sp)\n"
    "sd x25, 200(sp)\n"
    "sd x26, 208(sp)\n"
    "sd x27, 216(sp)\n"
    "sd x28, 224(sp)\n"
    "sd x29, 232(sp)\n"
    "sd x30, 240(sp)\n"
    "sd x31, 248(sp)\n"
    "fsd f0, 256(sp)\n"
    "fsd f1, 264(sp)\n"
    "fsd f2, 272(sp)\n"
    "fsd f3, 280(sp)\n"
    "fsd f4, 288(sp)\n"
    "fsd f5, 296(sp)\n"
    "fsd f6, 304(sp)\n"
    "fsd f7, 312(sp)\n"
    "fsd f8, 320(sp)\n"
    "fsd f9, 328(sp)\n"
    "fsd f10, 336(sp)\n"
    "fsd f11, 344(sp)\n"
    "fsd f12, 352(sp)\n"
    "fsd f13, 360(sp)\n"
    "fsd f14, 368(sp)\n"
    "fsd f15, 376(sp)\n"
    "fsd f16, 384(sp)\n"
    "fsd f17, 392(sp)\n"
    "fsd f18, 400(sp)\n"
    "fsd f19, 408(sp)\n"
    "fsd f20, 416(sp)\n"
    "fsd f21, 424(sp)\n"
    "fsd f22, 432(sp)\n"
    "fsd f23, 440(sp)\n"
    "fsd f24, 448(sp)\n"
    "fsd f25, 456(sp)\n"
    "fsd f26, 464(sp)\n"
    "fsd f27, 472(sp)\n"
    "fsd f28, 480(sp)\n"
    "fsd f29, 488(sp)\n"
    "fsd f30, 496(sp)\n"
    "fsd f31, 504(sp)\n"
    R"(
    csrr t0, vl
    sd t0, 512(sp)
    csrr t0, vtype
    sd t0, 520(sp)
    frcsr t0
    sd t0, 528(sp)
    csrr t0, vcsr
    sd t0, 536(sp)
    csrr t1, vlenb
    slli t0, t1, 5
    sub sp, sp, t0
    mv a0, ra
    mv a1, sp
    csrr a2, vlenb
    call k3_ime2_emulate_word
    csrr t1, vlenb
    slli t1, t1, 5
    add sp, sp, t1
    ld t0, 512(sp)
    ld t1, 520(sp)
    vsetvl zero, t0, t1
    ld t0, 528(sp)
    fscsr t0
    ld t0, 536(sp)
    csrw vcsr, t0
)"
    "fld f0, 256(sp)\n"
    "fld f1, 264(sp)\n"
    "fld f2, 272(sp)\n"
    "fld f3, 280(sp)\n"
    "fld f4, 288(sp)\n"
    "fld f5, 296(sp)\n"
    "fld f6, 304(sp)\n"
    "fld f7, 312(sp)\n"
    "fld f8, 320(sp)\n"
    "fld f9, 328(sp)\n"
    "fld f10, 336(sp)\n"
    "fld f11, 344(sp)\n"
    "fld f12, 352(sp)\n"
    "fld f13, 360(sp)\n"
    "fld f14, 368(sp)\n"
    "fld f15, 376(sp)\n"
    "fld f16, 384(sp)\n"
    "fld f17, 392(sp)\n"
    "fld f18, 400(sp)\n"
    "fld f19, 408(sp)\n"
    "fld f20, 416(sp)\n"
    "fld f21, 424(sp)\n"
    "fld f22, 432(sp)\n"
    "fld f23, 440(sp)\n"
    "fld f24, 448(sp)\n"
    "fld f25, 456(sp)\n"
    "fld f26, 464(sp)\n"
    "fld f27, 472(sp)\n"
    "fld f28, 480(sp)\n"
    "fld f29, 488(sp)\n"
    "fld f30, 496(sp)\n"
    "fld f31, 504(sp)\n"
    "ld x1, 8(sp)\n"
    "ld x3, 24(sp)\n"
    "ld x4, 32(sp)\n"
    "ld x5, 40(sp)\n"
    "ld x6, 48(sp)\n"
    "ld x7, 56(sp)\n"
    "ld x8, 64(sp)\n"
    "ld x9, 72(sp)\n"
    "ld x10, 80(sp)\n"
    "ld x11, 88(sp)\n"
    "ld x12, 96(sp)\n"
    "ld x13, 104(sp)\n"
    "ld x14, 112(sp)\n"
    "ld x15, 120(sp)\n"
    "ld x16, 128(sp)\n"
    "ld x17, 136(sp)\n"
    "ld x18, 144(sp)\n"
    "ld x19, 152(sp)\n"
    "ld x20, 160(sp)\n"
    "ld x21, 168(sp)\n"
    "ld x22, 176(sp)\n"
    "ld x23, 184(sp)\n"
    "ld x24, 192(sp)\n"
    "ld x25, 200(sp)\n"
    "ld x26, 208(sp)\n"
    "ld x27, 216(sp)\n"
    "ld x28, 224(sp)\n"
    "ld x29, 232(sp)\n"
    "ld x30, 240(sp)\n"
    "ld x31, 248(sp)\n"
    R"(
    addi sp, sp, 544
    jalr zero, 4(ra)
    .size k3_ime2_emulate_insn, . - k3_ime2_emulate_insn
    .popsection
)");

// k3_ime2_save_vreg(r, p) / k3_ime2_load_vreg(r, p): a jump to entry r of a table of 8-byte
// entries (no compressed instructions), each one whole-register move and a return. One macro
// makes both: the save stores 64-bit elements, so it sets vtype first (the load's vl1re64 needs
// none).
asm(R"(
    .pushsection k3_ime2_model, "ax", @progbits
    .option push
    .option norvc
    .macro k3_ime2_e64
    vsetvli t0, zero, e64, m1, ta, ma
    .endm
    .macro k3_ime2_no_setup
    .endm
    .macro k3_ime2_vreg_table name, setup, move
    .globl \name
    .type \name, @function
    .p2align 3
\name:
    \setup
    andi a0, a0, 31
    slli a0, a0, 3
    auipc t1, 0
    add t1, t1, a0
    jalr zero, 12(t1)
    .irp r, 0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25,26,27,28,29,30,31
    \move v\r, (a1)
    jalr zero, 0(ra)
    .endr
    .size \name, . - \name
    .endm
    k3_ime2_vreg_table k3_ime2_save_vreg, k3_ime2_e64, vse64.v
    k3_ime2_vreg_table k3_ime2_load_vreg, k3_ime2_no_setup, vl1re64.v
    .option pop
    .popsection
)");

#endif  // K3_IME2_EMULATION

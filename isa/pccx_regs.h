/* SPDX-License-Identifier: (GPL-2.0 WITH Linux-syscall-note) OR MIT */
/*
 * pccx v002 register map: the one definition of every register offset and
 * field, shared by the kernel module, the firmware, the simulator and the
 * command engine. It lives in isa/ with the rest of the device contract that
 * all of them compile (the kernel build links isa/ into its tree); it is not
 * user-space ABI, which is uapi/pccx.h alone. Documented in docs/registers.md.
 */
#ifndef PCCX_REGS_H
#define PCCX_REGS_H

/* Pages, relative to the device base. */
#define PCCX_CTRL_PAGE            0x0000u
#define PCCX_DM_PAGE(ch)          (0x1000u * (1u + (ch)))
#define PCCX_MMIO_SIZE            0x7000u

/* DataMover channels. */
#define PCCX_DM_HP(p)             (p)         /* weight streams, p = 0..3 */
#define PCCX_DM_FMAP              4u          /* MM2S host -> L2 */
#define PCCX_DM_RESULT            5u          /* S2MM L2 -> host */
#define PCCX_DM_CHANNELS          6u

/* Control page (64-bit registers). */
#define PCCX_REG_INSTR            0x000u
#define PCCX_REG_KICK             0x008u
#define PCCX_REG_ID               0x100u
#define PCCX_REG_FEATURES         0x108u
#define PCCX_REG_STATUS           0x110u
#define PCCX_REG_RETIRED          0x118u
#define PCCX_REG_ERROR            0x120u
#define PCCX_REG_ERROR_INFO       0x128u
#define PCCX_REG_IRQ_STATUS       0x130u
#define PCCX_REG_IRQ_ENABLE       0x138u
#define PCCX_REG_RESET            0x140u
#define PCCX_REG_DMA_ADDR_BITS    0x148u
#define PCCX_REG_CAPS             0x150u
#define PCCX_REG_CLOCKS           0x158u
#define PCCX_REG_CYCLES           0x160u
#define PCCX_REG_WFIFO_DEPTH      0x168u

#define PCCX_ID_MAGIC             0x50434358u  /* "PCCX" in ID[63:32] */
#define PCCX_ID_MAJOR             2u

#define PCCX_FEAT_STATUS_REGS     (1u << 0)
#define PCCX_FEAT_ERROR_REG       (1u << 1)
#define PCCX_FEAT_IRQ             (1u << 2)
#define PCCX_FEAT_SOFT_RESET      (1u << 3)
#define PCCX_FEAT_RETIRED         (1u << 4)
#define PCCX_FEAT_CVO_EXT         (1u << 5)
#define PCCX_FEAT_WSTREAM4        (1u << 6)
#define PCCX_FEAT_WIDE_DMA        (1u << 7)
#define PCCX_FEAT_PERF            (1u << 8)
#define PCCX_FEAT_ROWMASK         (1u << 9)   /* GEMV rowmask: only kept rows are read */
#define PCCX_FEAT_SMUL            (1u << 10)  /* CVO smul: (dst * S) * src, one pass */
#define PCCX_FEAT_COLSKIP         (1u << 11)  /* q4c weights: only non-zero inputs' columns read */
#define PCCX_FEAT_RACC            (1u << 12)  /* SUM/SUMSQ accm: the sum starts from S */

#define PCCX_STATUS_BUSY          (1u << 0)
#define PCCX_STATUS_DONE          (1u << 1)
#define PCCX_STATUS_ERROR         (1u << 2)
#define PCCX_STATUS_IDLE          (1u << 3)
#define PCCX_STATUS_HALTED        (1u << 4)
#define PCCX_STATUS_FIFO_SHIFT    8
#define PCCX_STATUS_FIFO_MASK     (0xfu << PCCX_STATUS_FIFO_SHIFT)

#define PCCX_ERROR_CAUSE_MASK     0xffu
#define PCCX_ERROR_VALID          (1u << 8)
#define PCCX_ERROR_ISA_SHIFT      16
#define PCCX_ERROR_ISA_MASK       (0xffu << PCCX_ERROR_ISA_SHIFT)
#define PCCX_ERROR_INDEX_SHIFT    32

#define PCCX_CAUSE_ILLEGAL_INSN   1u
#define PCCX_CAUSE_BAD_OPERANDS   2u
#define PCCX_CAUSE_DMA_SLVERR     3u
#define PCCX_CAUSE_DMA_DECERR     4u
#define PCCX_CAUSE_DMA_INTERR     5u
#define PCCX_CAUSE_STREAM_OVERRUN 6u
#define PCCX_CAUSE_DMA_WINDOW     7u

#define PCCX_IRQ_IDLE             (1u << 0)
#define PCCX_IRQ_ERROR            (1u << 1)
#define PCCX_IRQ_DM               (1u << 2)

/* DataMover page (32-bit registers). */
#define PCCX_DM_CMD_LO            0x00u
#define PCCX_DM_CMD_HI            0x04u
#define PCCX_DM_CMD_EXT           0x08u
#define PCCX_DM_CMD_PUSH          0x0Cu
#define PCCX_DM_STS_POP           0x10u
#define PCCX_DM_FLAGS             0x14u
#define PCCX_DM_CMD_LVL           0x18u
#define PCCX_DM_STS_LVL           0x1Cu
#define PCCX_DM_ERR_W1C           0x20u
#define PCCX_DM_CMD_ADDR_HI       0x24u

#define PCCX_DM_FLAG_CMD_EMPTY    (1u << 0)
#define PCCX_DM_FLAG_CMD_FULL     (1u << 1)
#define PCCX_DM_FLAG_STS_EMPTY    (1u << 2)
#define PCCX_DM_FLAG_STS_FULL     (1u << 3)
#define PCCX_DM_FLAG_ERR_SHIFT    4

/* PG022 command fields (80-bit command: LO = [31:0], HI = [63:32], EXT = [79:64]). */
#define PCCX_DM_BTT_MAX           ((1u << 23) - 1u)
#define PCCX_DM_CMD_TYPE_INCR     (1u << 23)
#define PCCX_DM_CMD_EOF           (1u << 30)
#define PCCX_DM_EXT_TAG_MASK      0xfu         /* command bits [67:64] */
#define PCCX_DM_EXT_WINDOW        (1u << 4)    /* [68]: a rowmask window (FEATURES.ROWMASK) */
#define PCCX_DM_EXT_CACHE_SHIFT   8            /* [75:72] */
#define PCCX_DM_EXT_USER_SHIFT    12           /* [79:76] */

/* Status byte. */
#define PCCX_DM_STS_TAG_MASK      0x0fu
#define PCCX_DM_STS_INTERR        (1u << 4)
#define PCCX_DM_STS_DECERR        (1u << 5)
#define PCCX_DM_STS_SLVERR        (1u << 6)
#define PCCX_DM_STS_OKAY          (1u << 7)

#endif /* PCCX_REGS_H */

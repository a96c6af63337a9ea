/* channels.h — the memory channels, one row each. Everything that lists channels is generated
 * from this table: the enum, the schema's names and labels, the granularity the verdict rules
 * use, the default budgets, the plot colours and panel orders, the default requirements, the
 * channels whose rise arms heap profiling, and the names in help texts and error messages
 * (rpt_channel_list). Adding a channel is a row here plus the code that measures it (the
 * snapshot figure it reads: harness/session.c maps a snapshot to the channels for `run` and
 * `exec` alike), and its lines in docs/results.schema.json and docs/results-schema.md, which
 * test_channels names when they are missing. Files written before the row load with the
 * channel not measured (docs/results-schema.md). A channel read at every step too
 * (RPT_CHF_SAMPLED) also widens the timeline's sample rows.
 *
 *   X(ID, name, label, exact, granularity, colour, delta, trend, band, slope, floor, flags)
 *
 *   exact        zero tolerance: one byte left is a leak (the ledgers); else statistical
 *   granularity  the bytes one reading moves by: 1 for a byte counter, a page, a driver page;
 *                a rise smaller than this is not a rise (the steady-rise rule, docs/design.md)
 *   colour       its line in every figure
 *   delta, trend its panel's rank in the per-session delta figure and in the trend figure
 *                (1 first; 0: not drawn there)
 *   band, slope, floor  the default budget of a statistical channel (bytes; zeros when exact):
 *                what the level may reach, the slope per session, the smallest step that counts;
 *                `leakgate calibrate` measures wider ones where the machine is noisier
 *   flags        RPT_CHF_*: where the channel is required by default and what it is
 */
#ifndef LG_RPT_CHANNELS_H
#define LG_RPT_CHANNELS_H

// clang-format off
#define RPT_CHF_DEVICE  1u  /* device memory: needs --device cuda in `run` */
#define RPT_CHF_HOST    2u  /* required by default on the host (`run`, and "host" in --require) */
#define RPT_CHF_CUDA    4u  /* required by default with --device cuda as well */
#define RPT_CHF_EXACT   8u  /* in --require's "exact" set */
#define RPT_CHF_ALLOC   16u /* jemalloc's statistics: not in a sanitizer build */
#define RPT_CHF_PROCESS 32u /* every process has it: exec requires it, its rise arms profiling */
#define RPT_CHF_SAMPLED 64u /* read at every training step too: `run`'s timeline in sessions */

#define RPT_KiB 1024.0
#define RPT_MiB (1024.0 * 1024.0)

#define RPT_CHANNELS(X)                                                                            \
    X(TAGGED_HOST, "tagged_host", "tagged host bytes", true, 1, "#1f77b4", 1, 0,                   \
      0, 0, 0, RPT_CHF_HOST | RPT_CHF_EXACT | RPT_CHF_SAMPLED)                                     \
    X(TAGGED_DEVICE, "tagged_device", "tagged device bytes", true, 1, "#9467bd", 5, 0,             \
      0, 0, 0, RPT_CHF_DEVICE | RPT_CHF_CUDA | RPT_CHF_EXACT | RPT_CHF_SAMPLED)                    \
    X(REFS, "refs", "unbalanced references", true, 1, "#7f7f7f", 0, 0,                             \
      0, 0, 0, RPT_CHF_HOST | RPT_CHF_EXACT)                                                       \
    X(JE_ALLOCATED, "je_allocated", "jemalloc allocated", false, 1, "#ff7f0e", 2, 3,               \
      512 * RPT_KiB, 8 * RPT_KiB, 32 * RPT_KiB,                                                    \
      RPT_CHF_HOST | RPT_CHF_ALLOC | RPT_CHF_PROCESS | RPT_CHF_SAMPLED)                            \
    X(JE_ACTIVE, "je_active", "jemalloc active", false, 4096, "#bcbd22", 0, 4,                     \
      1 * RPT_MiB, 32 * RPT_KiB, 128 * RPT_KiB, RPT_CHF_HOST | RPT_CHF_ALLOC | RPT_CHF_PROCESS)   \
    X(JE_RESIDENT, "je_resident", "jemalloc resident", false, 4096, "#8c564b", 3, 2,               \
      4 * RPT_MiB, 64 * RPT_KiB, 256 * RPT_KiB, RPT_CHF_HOST | RPT_CHF_ALLOC | RPT_CHF_PROCESS)   \
    X(RSS, "rss", "process RSS", false, 4096, "#d62728", 4, 1,                                     \
      4 * RPT_MiB, 64 * RPT_KiB, 256 * RPT_KiB, RPT_CHF_HOST | RPT_CHF_PROCESS | RPT_CHF_SAMPLED) \
    X(DEV_DRIVER, "dev_driver", "whole GPU used, every process (driver view)", false, 2 << 20,     \
      "#17becf", 6, 5, 64 * RPT_MiB, 2 * RPT_MiB, 8 * RPT_MiB, RPT_CHF_DEVICE)                     \
    X(DEV_PROCESS, "dev_process", "device used by this process", false, 2 << 20, "#e377c2", 0, 6,  \
      64 * RPT_MiB, 2 * RPT_MiB, 8 * RPT_MiB, RPT_CHF_DEVICE | RPT_CHF_CUDA)
// clang-format on

/* The measurement channels, most exact first (docs/design.md): RPT_CH_TAGGED_HOST, ... */
enum rpt_channel {
#define RPT_X_ENUM(id, ...) RPT_CH_##id,
    RPT_CHANNELS(RPT_X_ENUM)
#undef RPT_X_ENUM
        RPT_NCHANNELS
};

#endif

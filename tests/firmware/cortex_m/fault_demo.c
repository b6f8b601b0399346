/* A bare-metal Cortex-M3 firmware for QEMU's mps2-an385 that crashes on request and reports the fault the way
 * the projects people run on these chips do, from a real fault handler reading the real stacked frame and the
 * real System Control Block registers. The report texts are those of each project's sources (the files named at
 * each function); the code around them is this file's own.
 *
 * On boot it prints "fault-demo ready" and waits for one byte on the UART:
 *   z  Zephyr 3.x, minimal log mode ("E: "): a NULL write escalated to a HARD FAULT, then "Halting system"
 *   m  Zephyr 3.x, full log mode ("[hh:mm:ss.mmm,uuu] <err> os: "): the MemManage handler's MPU FAULT
 *   o  Zephyr 1.x printk format: MPU FAULT, "***** Hardware exception *****", "Faulting instruction address = "
 *   n  nRF Connect SDK (Zephyr with its fatal_error library): an undefined instruction, "E: Resetting system",
 *      then a real reset (SYSRESETREQ): the board boots again
 *   c  CmBacktrace on bare metal: the NULL write, its registers, diagnosis and call stack
 *   b  Mbed OS fault handler and its error report
 *   a  a FreeRTOS demo's vAssertCalled: "ASSERT! Line N, file F"
 */
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "demo.h"

/* --- the machine ------------------------------------------------------------------------------------------ */

#define REG(a) (*(volatile uint32_t *)(a))
#define UART_DATA REG(0x40004000u) /* CMSDK APB UART0 */
#define UART_STATE REG(0x40004004u)
#define UART_CTRL REG(0x40004008u)
#define UART_BAUDDIV REG(0x40004010u)
#define SCB_ICSR REG(0xE000ED04u)
#define SCB_AIRCR REG(0xE000ED0Cu)
#define SCB_SHCSR REG(0xE000ED24u)
#define SCB_CFSR REG(0xE000ED28u)
#define SCB_HFSR REG(0xE000ED2Cu)
#define SCB_DFSR REG(0xE000ED30u)
#define SCB_MMFAR REG(0xE000ED34u)
#define SCB_BFAR REG(0xE000ED38u)
#define SCB_AFSR REG(0xE000ED3Cu)
#define SCB_CPUID REG(0xE000ED00u)
#define MPU_CTRL REG(0xE000ED94u)
#define MPU_RNR REG(0xE000ED98u)
#define MPU_RBAR REG(0xE000ED9Cu)
#define MPU_RASR REG(0xE000EDA0u)
#define SYST_CSR REG(0xE000E010u)
#define SYST_RVR REG(0xE000E014u)

#define CFSR_MMARVALID (1u << 7)
#define CFSR_DACCVIOL (1u << 1)
#define CFSR_IACCVIOL (1u << 0)
#define CFSR_PRECISERR (1u << 9)
#define CFSR_BFARVALID (1u << 15)
#define CFSR_UNDEFINSTR (1u << 16)
#define CFSR_INVSTATE (1u << 17)
#define HFSR_FORCED (1u << 30)

extern uint32_t _data_start, _data_end, _data_load, _bss_start, _bss_end, _stack_start, _stack_end, _code_end;
extern void (*const vectors[16])(void);

static volatile uint32_t uptime_ms;
static volatile char mode;
static struct {
    const char *name;
    uint32_t stack[4];
} main_thread = {"main", {0}};

static void uart_putc(char c)
{
    while (UART_STATE & 1u) {
    }
    UART_DATA = (uint32_t)c;
}

static void out(const char *s)
{
    static char last;
    for (; *s; last = *s++) {
        if (*s == '\n' && last != '\r') { /* the console's newline conversion (onlcr) */
            uart_putc('\r');
        }
        uart_putc(*s);
    }
}

static void outf(const char *fmt, ...)
{
    char buf[200];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    out(buf);
}

static char uart_getc(void)
{
    while (!(UART_STATE & 2u)) {
    }
    return (char)UART_DATA;
}

static __attribute__((noreturn)) void halt(void)
{
    __asm volatile("cpsid i");
    for (;;) {
        __asm volatile("wfi");
    }
}

static __attribute__((noreturn)) void system_reset(void)
{
    __asm volatile("dsb");
    SCB_AIRCR = 0x05FA0004u; /* SYSRESETREQ */
    for (;;) {
    }
}

/* --- Zephyr: arch/arm/core/cortex_m/fault.c, arch/arm/core/fatal.c (esf_dump), kernel/fatal.c ------------- */

static const char *z_prefix = "";

static void z_log(const char *fmt, ...)
{
    char buf[160];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    if (mode == 'm') { /* CONFIG_LOG_MODE_DEFERRED/IMMEDIATE: "[00:00:01.234,000] <err> os: " */
        uint32_t ms = uptime_ms;
        outf("[%02lu:%02lu:%02lu.%03lu,000] <err> os: %s\n", (unsigned long)(ms / 3600000u),
             (unsigned long)(ms / 60000u % 60u), (unsigned long)(ms / 1000u % 60u), (unsigned long)(ms % 1000u),
             buf);
    } else if (mode == 'o') { /* Zephyr 1.x: printk, no prefix */
        outf("%s\n", buf);
    } else { /* CONFIG_LOG_MODE_MINIMAL */
        outf("%s%s\n", z_prefix, buf);
    }
}

static void z_mem_manage_fault(void)
{
    z_log("***** MPU FAULT *****");
    if (SCB_CFSR & CFSR_DACCVIOL) {
        z_log("  Data Access Violation");
        uint32_t mmfar = SCB_MMFAR;
        if (SCB_CFSR & CFSR_MMARVALID) {
            z_log("  MMFAR Address: 0x%lx", (unsigned long)mmfar);
        }
    }
    if (SCB_CFSR & CFSR_IACCVIOL) {
        z_log("  Instruction Access Violation");
    }
}

static void z_usage_fault(void)
{
    z_log("***** USAGE FAULT *****");
    if (SCB_CFSR & CFSR_INVSTATE) {
        z_log("  Illegal use of the EPSR");
    }
    if (SCB_CFSR & CFSR_UNDEFINSTR) {
        z_log("  Attempt to execute undefined instruction");
    }
}

static void zephyr_report(const uint32_t *esf, uint32_t exception)
{
    z_prefix = "E: ";
    if (mode == 'o') {
        z_mem_manage_fault();
        outf("***** Hardware exception *****\n");
        outf("Current thread ID = %p\nFaulting instruction address = 0x%lx\n", (void *)&main_thread,
             (unsigned long)esf[6]);
        outf("Fatal fault in thread %p! Aborting.\n", (void *)&main_thread);
        halt();
    }
    if (exception == 3) {
        z_log("***** HARD FAULT *****");
        if (SCB_HFSR & HFSR_FORCED) {
            z_log("  Fault escalation (see below)");
            if (SCB_CFSR & 0xFFu) {
                z_mem_manage_fault();
            } else if (SCB_CFSR & 0xFFFF0000u) {
                z_usage_fault();
            }
        }
    } else if (exception == 4) {
        z_mem_manage_fault();
    } else if (exception == 6) {
        z_usage_fault();
    }
    z_log("r0/a1:  0x%08lx  r1/a2:  0x%08lx  r2/a3:  0x%08lx", (unsigned long)esf[0], (unsigned long)esf[1],
          (unsigned long)esf[2]);
    z_log("r3/a4:  0x%08lx r12/ip:  0x%08lx r14/lr:  0x%08lx", (unsigned long)esf[3], (unsigned long)esf[4],
          (unsigned long)esf[5]);
    z_log(" xpsr:  0x%08lx", (unsigned long)esf[7]);
    z_log("Faulting instruction address (r15/pc): 0x%08lx", (unsigned long)esf[6]);
    z_log(">>> ZEPHYR FATAL ERROR %d: %s on CPU %d", 0, "CPU exception", 0);
    z_log("Current thread: %p (%s)", (void *)&main_thread, main_thread.name);
    if (mode == 'n') { /* nRF Connect SDK lib/fatal_error/fatal_error.c */
        z_log("Resetting system");
        system_reset();
    }
    z_log("Halting system"); /* kernel/fatal.c k_sys_fatal_error_handler */
    halt();
}

/* --- CmBacktrace: cm_backtrace/cm_backtrace.c, Languages/en-US/cmb_en_US.h (bare metal, dump stack info) ---- */

static bool is_bl_or_blx(uint32_t addr)
{
    uint16_t first = *(const uint16_t *)addr, second = *(const uint16_t *)(addr + 2u);
    bool bl = (first & 0xF800u) == 0xF000u && (second & 0xD000u) == 0xD000u;
    bool blx = (second & 0xFF87u) == 0x4780u;
    return bl || blx;
}

static bool in_code(uint32_t pc)
{
    return pc >= (uint32_t)vectors && pc <= (uint32_t)&_code_end;
}

static void cmbacktrace_report(const uint32_t *esf)
{
    static const char *names[] = {"R0 ", "R1 ", "R2 ", "R3 ", "R12", "LR ", "PC ", "PSR"};
    uint32_t sp = (uint32_t)esf + 8u * 4u + ((esf[7] & (1u << 9)) ? 4u : 0u);
    uint32_t calls[16];
    size_t depth = 0;

    out("\n");
    outf("Firmware name: %s, hardware version: %s, software version: %s\n", "fault-demo", "V1.0.0", "V0.1.0");
    outf("Fault on interrupt or bare metal(no OS) environment\n");
    outf("====== Main stack information ======\n");
    for (uint32_t a = sp; a < (uint32_t)&_stack_end; a += 4u) {
        outf("  addr: %08lx    data: %08lx\n", (unsigned long)a, (unsigned long)*(const uint32_t *)a);
    }
    outf("====================================\n");
    outf("=================== Registers information ====================\n");
    outf("  %s: %08lx  %s: %08lx  %s: %08lx  %s: %08lx\n", names[0], (unsigned long)esf[0], names[1],
         (unsigned long)esf[1], names[2], (unsigned long)esf[2], names[3], (unsigned long)esf[3]);
    outf("  %s: %08lx  %s: %08lx  %s: %08lx  %s: %08lx\n", names[4], (unsigned long)esf[4], names[5],
         (unsigned long)esf[5], names[6], (unsigned long)esf[6], names[7], (unsigned long)esf[7]);
    outf("==============================================================\n");
    if (SCB_CFSR & CFSR_DACCVIOL) {
        outf("Memory management fault is caused by data access violation\n");
    }
    if (SCB_CFSR & CFSR_UNDEFINSTR) {
        outf("Usage fault is caused by attempts to execute an undefined instruction\n");
    }
    if (SCB_CFSR & CFSR_MMARVALID) {
        outf("The memory management fault occurred address is %08lx\n", (unsigned long)SCB_MMFAR);
    }
    /* the call stack: the PC, the LR (thumb bit cleared), then each stack word that returns after a BL/BLX */
    calls[depth++] = esf[6];
    if (in_code(esf[5] - 1u)) {
        calls[depth++] = esf[5] - 1u;
    }
    for (uint32_t a = sp; a < (uint32_t)&_stack_end && depth < 16u; a += 4u) {
        uint32_t word = *(const uint32_t *)a;
        if (!(word & 1u) || !in_code(word - 1u) || word - 1u < 4u || !is_bl_or_blx(word - 1u - 4u)) {
            continue;
        }
        if (depth == 2u && word - 1u == calls[1]) {
            continue;
        }
        calls[depth++] = word - 1u;
    }
    out("Show more call stack info by run: addr2line -e fault-demo.elf -afpiC");
    for (size_t i = 0; i < depth; i++) {
        outf(" %08lx", (unsigned long)calls[i]);
    }
    out(" \n");
    halt();
}

/* --- Mbed OS: platform/source/TARGET_CORTEX_M/mbed_fault_handler.c, platform/source/mbed_error.c ---------- */

static __attribute__((noinline, noreturn)) void mbed_error(uint32_t status, const char *message, uint32_t value)
{
    uint32_t caller = (uint32_t)__builtin_return_address(0);
    outf("\n\n++ MbedOS Error Info ++\nError Status: 0x%lX Code: %lu Module: %lu\nError Message: ",
         (unsigned long)status, (unsigned long)(status & 0xFFFFu), (unsigned long)((status >> 16) & 0xFFu));
    out(message);
    outf("\nLocation: 0x%lX", (unsigned long)caller);
    outf("\nError Value: 0x%lX", (unsigned long)value);
    outf("\nCurrent Thread: %s Id: 0x%lX Entry: 0x%lX StackSize: 0x%lX StackMem: 0x%lX SP: 0x%lX ", "main",
         (unsigned long)(uint32_t)&main_thread, (unsigned long)(uint32_t)vectors, 0x800ul,
         (unsigned long)(uint32_t)&_stack_start, (unsigned long)(uint32_t)__builtin_frame_address(0));
    outf("\nFor more info, visit: https://mbed.com/s/error?error=0x%08lX&tgt=MPS2_M3", (unsigned long)status);
    out("\n-- MbedOS Error Info --\n");
    halt();
}

static void mbed_report(const uint32_t *esf, const uint32_t *r4_r11, uint32_t exc_return, uint32_t exception)
{
    uint32_t regs[13] = {esf[0], esf[1], esf[2], esf[3], r4_r11[0], r4_r11[1], r4_r11[2],
                         r4_r11[3], r4_r11[4], r4_r11[5], r4_r11[6], r4_r11[7], esf[4]};
    uint32_t sp = (uint32_t)esf + 32u, msp, psp;
    __asm volatile("mrs %0, msp" : "=r"(msp));
    __asm volatile("mrs %0, psp" : "=r"(psp));
    out("\n++ MbedOS Fault Handler ++\n\nFaultType: ");
    out(exception == 4 ? "MemManageFault" : exception == 6 ? "UsageFault" : "HardFault");
    out("\n\nContext:");
    for (int i = 0; i < 13; i++) {
        outf("\nR%-4d: %08lX", i, (unsigned long)regs[i]);
    }
    outf("\nSP   : %08lX\nLR   : %08lX\nPC   : %08lX\nxPSR : %08lX\nPSP  : %08lX\nMSP  : %08lX", (unsigned long)sp,
         (unsigned long)esf[5], (unsigned long)esf[6], (unsigned long)esf[7], (unsigned long)psp,
         (unsigned long)msp);
    outf("\nCPUID: %08lX", (unsigned long)SCB_CPUID);
    outf("\nHFSR : %08lX\nMMFSR: %08lX\nBFSR : %08lX\nUFSR : %08lX\nDFSR : %08lX\nAFSR : %08lX",
         (unsigned long)SCB_HFSR, (unsigned long)(SCB_CFSR & 0xFFu), (unsigned long)((SCB_CFSR >> 8) & 0xFFu),
         (unsigned long)(SCB_CFSR >> 16), (unsigned long)SCB_DFSR, (unsigned long)SCB_AFSR);
    if (SCB_CFSR & CFSR_MMARVALID) {
        outf("\nMMFAR: %08lX", (unsigned long)SCB_MMFAR);
    }
    out(exc_return & 0x8u ? "\nMode : Thread\nPriv : Privileged" : "\nMode : Handler\nPriv : Privileged");
    out(exc_return & 0x4u ? "\nStack: PSP" : "\nStack: MSP");
    out("\n\n-- MbedOS Fault Handler --\n\n");
    mbed_error(0x80FF013Du, "Fault exception", (uint32_t)esf);
}

/* --- FreeRTOS: a demo's main.c vAssertCalled (configASSERT) ----------------------------------------------- */

void vAssertCalled(unsigned long ulLine, const char *const pcFileName)
{
    volatile uint32_t ulSetToNonZeroInDebuggerToContinue = 0;
    outf("ASSERT! Line %d, file %s\r\n", (int)ulLine, pcFileName);
    __asm volatile("cpsid i"); /* taskENTER_CRITICAL() */
    while (ulSetToNonZeroInDebuggerToContinue == 0) {
        __asm volatile("nop");
    }
}

/* --- the fault handler: fault_entry (below) passes the stacked frame, r4-r11 and EXC_RETURN ---------------- */

void fault_c(const uint32_t *esf, const uint32_t *r4_r11, uint32_t exc_return)
{
    uint32_t exception = SCB_ICSR & 0x1FFu;
    switch (mode) {
    case 'c':
        cmbacktrace_report(esf);
        break;
    case 'b':
        mbed_report(esf, r4_r11, exc_return, exception);
        break;
    default:
        zephyr_report(esf, exception);
    }
    halt();
}

__attribute__((naked)) void fault_entry(void)
{
    __asm volatile("tst lr, #4\n"
                   "ite eq\n"
                   "mrseq r0, msp\n"
                   "mrsne r0, psp\n"
                   "push {r4-r11}\n"
                   "mov r1, sp\n"
                   "mov r2, lr\n"
                   "b fault_c\n");
}

void systick_handler(void)
{
    uptime_ms++;
}

/* --- start-up ----------------------------------------------------------------------------------------------- */

static void mpu_guard_null(void)
{
    MPU_RNR = 0u;
    MPU_RBAR = 0x00000000u;                          /* region 0 at address 0 */
    MPU_RASR = (6u << 24) | (4u << 1) | 1u;          /* read-only, 32 bytes, enabled */
    MPU_CTRL = (1u << 2) | 1u;                       /* PRIVDEFENA | ENABLE: the rest is the default map */
    __asm volatile("dsb\nisb");
}

int main(void)
{
    UART_BAUDDIV = 16u;
    UART_CTRL = 3u; /* TX and RX enabled */
    SYST_RVR = 25000u - 1u; /* 1 ms at 25 MHz */
    SYST_CSR = 7u;
    mpu_guard_null();
    out("fault-demo ready: z m o n c b a\n");
    mode = uart_getc();
    if (mode == 'm' || mode == 'o') {
        SCB_SHCSR |= 1u << 16; /* MemManage enabled: an MPU violation is not escalated to HardFault */
    }
    switch (mode) {
    case 'n':
        radio_task();
        break;
    case 'a':
        logger_task();
        break;
    default:
        app_task();
    }
    out("no fault?\n");
    halt();
}

void reset_handler(void)
{
    for (uint32_t *src = &_data_load, *dst = &_data_start; dst < &_data_end;) {
        *dst++ = *src++;
    }
    for (uint32_t *dst = &_bss_start; dst < &_bss_end;) {
        *dst++ = 0u;
    }
    main();
    halt();
}

__attribute__((section(".vectors"), used)) void (*const vectors[16])(void) = {
    (void (*)(void))(&_stack_end), reset_handler, fault_entry, fault_entry, fault_entry, fault_entry,
    fault_entry, 0, 0, 0, 0, 0, 0, 0, 0, systick_handler,
};

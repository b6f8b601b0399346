/* A stand-in for a Zephyr shell board on QEMU's lm3s6965evb (Zephyr's qemu_cortex_m3 board), for the identify
 * fleet (tests/pty/fleet.py). It is not Zephyr: it prints the boot banner Zephyr's kernel prints
 * (kernel/banner.c: "*** Booting Zephyr OS build " KERNEL_VERSION_STRING " ***") and then behaves like Zephyr's
 * shell on its UART backend with CONFIG_SHELL_VT100_COLORS=n: prompt "uart:~$ ", characters echoed, Enter on an
 * empty line gives a new prompt, "kernel version" answers as subsys/shell/modules/kernel_service.c does, anything
 * else is "<cmd>: command not found" (subsys/shell/shell.c, SHELL_MSG_COMMAND_NOT_FOUND).
 * Between characters the core sleeps in WFI (the UART's receive interrupt wakes it): QEMU does not spin.
 */
#include <stdint.h>

#define REG(a) (*(volatile uint32_t *)(a))
#define UART0 0x4000C000u /* Stellaris UART0 (a PL011) */
#define UART_DR REG(UART0 + 0x000u)
#define UART_FR REG(UART0 + 0x018u)
#define UART_CTL REG(UART0 + 0x030u)
#define UART_IM REG(UART0 + 0x038u)
#define FR_RXFE (1u << 4)
#define FR_TXFF (1u << 5)
#define NVIC_ISER0 REG(0xE000E100u)
#define UART0_IRQ 5u

#define VERSION "v3.7.0"
#define PROMPT "uart:~$ "

extern uint32_t _stack_end;
void reset_handler(void);
void uart0_handler(void);
static void idle_handler(void)
{
    for (;;) {
    }
}

__attribute__((section(".vectors"), used)) void (*const vectors[16 + 8])(void) = {
    (void (*)(void))&_stack_end, reset_handler, idle_handler, idle_handler, idle_handler, idle_handler,
    idle_handler, 0, 0, 0, 0, idle_handler, idle_handler, 0, idle_handler, idle_handler,
    idle_handler, idle_handler, idle_handler, idle_handler, idle_handler, uart0_handler, idle_handler, idle_handler,
};

static void putc_(char c)
{
    while (UART_FR & FR_TXFF) {
    }
    UART_DR = (uint32_t)(unsigned char)c;
}

static void puts_(const char *s)
{
    while (*s) {
        putc_(*s++);
    }
}

static char line[64];
static unsigned len;
static char last;

static int equals(const char *a, const char *b)
{
    while (*a && *a == *b) {
        a++;
        b++;
    }
    return *a == *b;
}

static void execute(void)
{
    line[len] = 0;
    puts_("\r\n");
    if (len == 0) {
    } else if (equals(line, "kernel version")) {
        puts_("Zephyr version 3.7.0\r\n");
    } else {
        unsigned n = 0;
        while (n < len && line[n] != ' ') {
            putc_(line[n++]);
        }
        puts_(": command not found\r\n");
    }
    len = 0;
    puts_(PROMPT);
}

static void receive(char c)
{
    if (c == '\n' && last == '\r') { /* CR LF is one Enter */
    } else if (c == '\r' || c == '\n') {
        execute();
    } else if ((c == 0x7f || c == 0x08) && len > 0) {
        len--;
        puts_("\b \b");
    } else if (c >= ' ' && c < 0x7f && len < sizeof line - 1) {
        line[len++] = c;
        putc_(c);
    }
    last = c;
}

void uart0_handler(void)
{
    while (!(UART_FR & FR_RXFE)) {
        receive((char)UART_DR);
    }
}

void reset_handler(void)
{
    UART_CTL = 0x301u; /* UARTEN, TXE, RXE */
    puts_("*** Booting Zephyr OS build " VERSION " ***\r\n");
    puts_("\r\n" PROMPT);
    UART_IM = (1u << 4) | (1u << 6); /* receive and receive-timeout interrupts */
    NVIC_ISER0 = 1u << UART0_IRQ;
    for (;;) {
        __asm volatile("wfi");
    }
}

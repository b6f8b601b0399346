/* The board around the identify fleet's AVR sketch (tests/pty/fleet.py): simavr (libsimavr) runs the firmware
 * ELF on the named MCU and clock, and every byte the AVR's UART0 sends goes, raw and unbuffered, to stdout
 * (simavr's own run_avr would print it as coloured lines with control characters turned into dots).
 * Usage: simavr-uart MCU FREQ_HZ FIRMWARE.elf
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <simavr/avr_uart.h>
#include <simavr/sim_avr.h>
#include <simavr/sim_elf.h>

static void uart_out(struct avr_irq_t *irq, uint32_t value, void *param)
{
    (void)irq;
    (void)param;
    unsigned char c = (unsigned char)value;
    if (write(1, &c, 1) != 1) {
        exit(0); /* the reader went away */
    }
}

int main(int argc, char **argv)
{
    if (argc != 4) {
        fprintf(stderr, "usage: %s MCU FREQ_HZ FIRMWARE.elf\n", argv[0]);
        return 2;
    }
    elf_firmware_t firmware;
    memset(&firmware, 0, sizeof firmware);
    if (elf_read_firmware(argv[3], &firmware) != 0) {
        fprintf(stderr, "cannot read %s\n", argv[3]);
        return 1;
    }
    avr_t *avr = avr_make_mcu_by_name(argv[1]);
    if (!avr) {
        fprintf(stderr, "unknown MCU %s\n", argv[1]);
        return 1;
    }
    avr_init(avr);
    firmware.frequency = (uint32_t)strtoul(argv[2], NULL, 10);
    avr_load_firmware(avr, &firmware);
    uint32_t flags = 0;
    avr_ioctl(avr, AVR_IOCTL_UART_GET_FLAGS('0'), &flags);
    flags &= ~AVR_UART_FLAG_STDIO;
    avr_ioctl(avr, AVR_IOCTL_UART_SET_FLAGS('0'), &flags);
    avr_irq_register_notify(avr_io_getirq(avr, AVR_IOCTL_UART_GETIRQ('0'), UART_IRQ_OUTPUT), uart_out, NULL);
    for (;;) {
        int state = avr_run(avr);
        if (state == cpu_Done || state == cpu_Crashed) {
            return state == cpu_Done ? 0 : 1;
        }
    }
}

/* The application whose bugs the fault reports are about: a NULL write (the MPU makes address 0 read-only), an
 * undefined instruction and a failed configASSERT, each two calls deep so the link register holds a real caller.
 */
#include <stddef.h>
#include <stdint.h>

#include "demo.h"

volatile uint32_t samples;

__attribute__((noinline)) void sensor_store(volatile uint32_t *slot, uint32_t value)
{
    *slot = value; /* slot is NULL: a MemManage fault (data access violation at 0x0) */
}

__attribute__((noinline)) void app_task(void)
{
    volatile uint32_t *slot = NULL;
    sensor_store(slot, 0xC0FFEEu);
    samples++;
}

__attribute__((noinline)) void parse_frame(uint32_t length)
{
    if (length > 8u) {
        __builtin_trap(); /* udf: an undefined instruction */
    }
    samples += length;
}

__attribute__((noinline)) void radio_task(void)
{
    parse_frame(samples + 64u);
    samples++;
}

__attribute__((noinline)) void queue_send(const uint32_t *item)
{
    configASSERT(item != NULL);
    samples += *item;
}

__attribute__((noinline)) void logger_task(void)
{
    queue_send(NULL);
    samples++;
}
